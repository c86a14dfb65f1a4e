"""The storage contract: tests written only against `memgpt_lite.storage.protocol.Storage`.

A backend runs them with a test module holding one class,

    class TestMyStorage(StorageContract):
        @pytest.fixture
        def open_store(self, ...) -> Iterator[OpenStore]:
            ...  # yields a function that opens a handle on one fresh, empty database

as tests/test_storage_sqlite.py does for SQLite. Each call of `open_store()`
is another connection to the same database, as another process would have.
"""

from contract.agents import AgentContract, BlockContract
from contract.archival import PassageContract, VectorContract
from contract.base import OpenStore
from contract.block_history import BlockHistoryContract
from contract.keys import KeyContract, OwnerContract
from contract.messages import MessageContract
from contract.supersede import SupersedeContract
from contract.transactions import StepLockContract, ThreadContract, TransactionContract
from contract.usage import UsageContract
from contract.window import WindowContract


class StorageContract(
    AgentContract,
    BlockContract,
    BlockHistoryContract,
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
):
    """Every test of the contract; see the module's docstring."""


__all__ = ["OpenStore", "StorageContract"]
