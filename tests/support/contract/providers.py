"""The contract for users' providers: stored whole with their keys, one per
name within an owner, per owner."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from memgpt_lite.errors import AlreadyExistsError, NotFoundError
from memgpt_lite.storage.protocols.providers import Provider
from support.contract.base import ContractBase, OpenStore


def provider(owner: str, name: str, key: str | None = "sk-theirs") -> Provider:
    return Provider(
        owner=owner,
        name=name,
        provider_type="openai",
        base_url="http://127.0.0.1:9/v1",
        api_key=None if key is None else SecretStr(key),
    )


class ProviderContract(ContractBase):
    def test_a_provider_is_stored_whole_with_its_key_per_owner_and_name(
        self, store, open_store: OpenStore
    ):
        mine = provider("alice", "lc-openai")
        store.save_provider(mine)
        keyless = provider("alice", "lc-ollama", key=None)
        store.save_provider(keyless)
        store.save_provider(provider("bob", "lc-openai"))  # another owner's may share the name
        other = open_store()
        read = other.get_provider(mine.id, "alice")
        assert read.model_dump(exclude={"updated_at"}) == mine.model_dump(exclude={"updated_at"})
        assert read.api_key is not None and read.api_key.get_secret_value() == "sk-theirs"
        assert other.get_provider(keyless.id, "alice").api_key is None
        assert [p.id for p in other.list_providers("alice")] == [mine.id, keyless.id]
        assert [p.id for p in other.list_providers("alice", name="lc-ollama")] == [keyless.id]
        assert len(other.list_providers()) == 3
        with pytest.raises(NotFoundError, match=f"no provider with id '{mine.id}'"):
            other.get_provider(mine.id, "bob")
        with pytest.raises(AlreadyExistsError, match="a provider named 'lc-openai' already"):
            store.save_provider(provider("alice", "lc-openai"))
        mine.api_key, mine.base_url = SecretStr("sk-new"), "http://127.0.0.1:10/v1"
        store.save_provider(mine)
        changed = other.get_provider(mine.id, "alice")
        assert changed.api_key is not None and changed.api_key.get_secret_value() == "sk-new"
        assert changed.base_url == "http://127.0.0.1:10/v1"
        with pytest.raises(NotFoundError):
            store.delete_provider(mine.id, "bob")
        store.delete_provider(mine.id, "alice")
        assert [p.id for p in other.list_providers("alice")] == [keyless.id]
