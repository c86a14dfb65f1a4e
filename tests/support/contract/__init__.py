"""The storage contract: tests written only against `memgpt_lite.storage.protocol.Storage`.

A backend runs them with a test module holding one class,

    class TestMyStorage(StorageContract):
        @pytest.fixture
        def open_store(self, ...) -> Iterator[OpenStore]:
            ...  # yields a function that opens a handle on one fresh, empty database

as tests/storage/sqlite/test_storage_sqlite.py does for SQLite. Each call of `open_store()`
is another connection to the same database, as another process would have.
"""

from support.contract.agents import AgentContract, BlockContract
from support.contract.archival import PassageContract, VectorContract
from support.contract.archives import ArchiveContract
from support.contract.base import OpenStore, sealing
from support.contract.block_history import BlockHistoryContract
from support.contract.conversations import ConversationContract
from support.contract.groups import GroupContract
from support.contract.identities import IdentityContract
from support.contract.keys import KeyContract, OwnerContract
from support.contract.messages import MessageContract
from support.contract.providers import ProviderContract
from support.contract.runs import RunContract
from support.contract.sends import SentRequestContract
from support.contract.standalone_blocks import StandaloneBlockContract
from support.contract.supersede import SupersedeContract
from support.contract.tools import MCPServerContract, ToolContract
from support.contract.transactions import StepLockContract, ThreadContract, TransactionContract
from support.contract.usage import UsageContract
from support.contract.window import WindowContract


class StorageContract(
    AgentContract,
    BlockContract,
    BlockHistoryContract,
    StandaloneBlockContract,
    MessageContract,
    PassageContract,
    SupersedeContract,
    VectorContract,
    TransactionContract,
    StepLockContract,
    ThreadContract,
    UsageContract,
    WindowContract,
    OwnerContract,
    KeyContract,
    ToolContract,
    MCPServerContract,
    RunContract,
    SentRequestContract,
    ConversationContract,
    GroupContract,
    IdentityContract,
    ProviderContract,
    ArchiveContract,
):
    """Every test of the contract; see the module's docstring."""


__all__ = ["OpenStore", "StorageContract", "sealing"]
