"""The contract for users: agents' owners and the API keys' records."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memgpt_lite.errors import AlreadyExistsError, ConfigError, NotFoundError
from memgpt_lite.models import DEFAULT_USER, AgentState, ApiKey, Block, LLMConfig, utcnow
from memgpt_lite.storage.protocol import Storage
from support.contract.base import ContractBase, OpenStore


def owned(
    store: Storage, name: str, owner: str | None = None, display_name: str | None = None
) -> AgentState:
    fields = {} if owner is None else {"owner": owner}
    state = AgentState(
        name=name,
        llm=LLMConfig(model="gpt-4o-mini"),
        system="s",
        display_name=display_name,
        **fields,
    )
    store.create_agent(state, [Block(label="persona", value="p")])
    return state


def a_key(user: str, digit: str, **fields: object) -> ApiKey:
    return ApiKey(user=user, key_hash=digit * 64, **fields)


class OwnerContract(ContractBase):
    def test_an_agent_keeps_its_owner_and_defaults_to_local(self, store, open_store: OpenStore):
        owned(store, "sam", "alice")
        owned(store, "ada")
        other = open_store()
        assert other.get_agent("sam").owner == "alice"
        assert other.get_agent("ada").owner == DEFAULT_USER == "local"
        assert {s.name: s.owner for s, _ in other.list_agents()} == {
            "ada": "local",
            "sam": "alice",
        }

    def test_an_agents_own_endpoint_key_is_stored_but_dumped_only_for_the_store(
        self, store, open_store: OpenStore
    ):
        state = owned(store, "sam")
        store.update_agent(state.id, lambda s: setattr(s.llm, "api_key", "sk-own"))
        reread = open_store().get_agent("sam")
        assert reread.llm.api_key is not None
        assert reread.llm.api_key.get_secret_value() == "sk-own"
        assert "sk-own" not in reread.model_dump_json() + repr(reread)
        assert "api_key" not in reread.llm.model_dump()

    def test_list_agents_of_one_owner(self, store):
        for name, owner in (("zed", "alice"), ("bob-agent", "bob"), ("amy", "alice")):
            owned(store, name, owner)
        listed = store.list_agents(owner="alice")
        assert [s.name for s, _ in listed] == ["amy", "zed"]
        assert all(stats.message_count == 0 for _, stats in listed)
        assert [s.name for s, _ in store.list_agents(owner="bob")] == ["bob-agent"]
        assert store.list_agents(owner="carol") == []
        assert [s.name for s, _ in store.list_agents()] == ["amy", "bob-agent", "zed"]

    def test_names_are_unique_within_an_owner_only(self, store, open_store: OpenStore):
        alices = owned(store, "sam", "alice")
        bobs = owned(store, "sam", "bob")  # another user's name is no obstacle
        with pytest.raises(AlreadyExistsError, match="^an agent named 'sam' already exists$"):
            owned(store, "sam", "bob")
        assert sorted(s.owner for s, _ in store.list_agents()) == ["alice", "bob"]
        other = open_store()
        assert other.get_agent("sam", owner="alice").id == alices.id
        assert other.get_agent("sam", owner="bob").id == bobs.id
        with pytest.raises(NotFoundError, match="^no agent named 'sam'$"):
            other.get_agent("sam", owner="carol")
        with pytest.raises(ConfigError, match="several users have an agent named 'sam'"):
            other.get_agent("sam")  # two users, neither the default one: say so
        local = owned(store, "sam")
        assert other.get_agent("sam").id == local.id  # the default user's, as the CLI's

    def test_ids_are_looked_up_first_and_only_among_the_owners_agents(self, store):
        bobs = owned(store, "sam", "bob")
        alices = owned(store, "ada", "alice")
        assert store.get_agent(bobs.id, owner="bob").id == bobs.id
        assert store.get_agent(bobs.id).id == bobs.id
        with pytest.raises(NotFoundError):  # another user's id is not found
            store.get_agent(bobs.id, owner="alice")
        assert store.get_agent(alices.id, owner="alice").name == "ada"

    def test_a_rename_is_refused_only_for_a_name_of_the_same_owner(self, store):
        owned(store, "sam", "alice")
        ada = owned(store, "ada", "alice")
        bobs = owned(store, "bob-agent", "bob")
        assert store.rename_agent(bobs.id, "ada").name == "ada"  # alice's name: free for bob
        with pytest.raises(AlreadyExistsError, match="^an agent named 'sam' already exists$"):
            store.rename_agent(ada.id, "sam")
        assert store.get_agent(ada.id).name == "ada"

    def test_a_display_name_is_stored_and_may_repeat_within_the_owner(
        self, store, open_store: OpenStore
    ):
        bot = owned(store, "my-bot", "alice")
        store.rename_agent(bot.id, "my-bot", "My Bot")
        other = owned(store, "other", "alice")
        shared = store.rename_agent(other.id, "other", "My Bot")  # another of alice's may have it
        assert (shared.name, shared.display_name) == ("other", "My Bot")
        with pytest.raises(AlreadyExistsError, match="^an agent named 'my-bot' already exists$"):
            store.rename_agent(other.id, "my-bot", "My Bot")  # but not her other agent's name
        assert open_store().get_agent(other.id).name == "other"
        bobs = owned(store, "bobs", "bob")
        assert store.rename_agent(bobs.id, "bobs", "My Bot").display_name == "My Bot"
        reread = open_store().get_agent(bot.id)
        assert (reread.name, reread.display_name, reread.shown_name) == (
            "my-bot",
            "My Bot",
            "My Bot",
        )
        assert store.rename_agent(bot.id, "plain").display_name is None

    def test_one_owner_may_create_agents_of_one_display_name_but_not_of_one_name(
        self, store, open_store: OpenStore
    ):
        first = owned(store, "letta-code", "alice", "Letta Code")
        second = owned(store, "letta-code-2", "alice", "Letta Code")
        listed = [(s.id, s.name, s.display_name) for s, _ in open_store().list_agents("alice")]
        assert listed == [
            (first.id, "letta-code", "Letta Code"),
            (second.id, "letta-code-2", "Letta Code"),
        ]
        with pytest.raises(
            AlreadyExistsError, match="^an agent named 'letta-code' already exists$"
        ):
            owned(store, "letta-code", "alice", "Another Bot")
        assert [s.name for s, _ in store.list_agents(owner="alice")] == [
            "letta-code",
            "letta-code-2",
        ]
        other = open_store()  # names, never display names, are looked up
        assert other.get_agent("letta-code-2", owner="alice").id == second.id
        with pytest.raises(NotFoundError):
            other.get_agent("Letta Code", owner="alice")

    def test_writes_of_the_agent_keep_its_owner(self, store, open_store: OpenStore):
        state = owned(store, "sam", "alice")
        state.summary = "saved"
        state.owner = "mallory"  # ignored: the owner stays as created
        store.save_agent(state)
        updated = store.update_agent(state.id, lambda s: setattr(s, "summary", "updated"))
        assert updated.owner == "alice"
        renamed = store.rename_agent(state.id, "samuel")
        assert renamed.owner == "alice"
        again = open_store().get_agent("samuel")
        assert (again.owner, again.summary) == ("alice", "updated")
        assert [s.name for s, _ in store.list_agents(owner="alice")] == ["samuel"]
        assert store.list_agents(owner="mallory") == []


class KeyContract(ContractBase):
    def test_keys_round_trip_oldest_first(self, store, open_store: OpenStore):
        now = utcnow()
        newer = a_key("bob", "b", created_at=now)
        older = a_key("alice", "a", created_at=now - timedelta(days=1))
        store.add_api_key(newer)
        store.add_api_key(older)
        other = open_store()
        assert other.list_api_keys() == [older, newer]
        assert other.api_key_by_hash("a" * 64) == older
        assert other.api_key_by_hash("c" * 64) is None
        assert other.list_api_keys()[0].revoked_at is None

    def test_a_key_is_an_admin_key_only_when_made_so(self, store, open_store: OpenStore):
        store.add_api_key(a_key("alice", "a", admin=True))
        store.add_api_key(a_key("bob", "b"))
        other = open_store()
        assert [(k.user, k.admin) for k in other.list_api_keys()] == [
            ("alice", True),
            ("bob", False),
        ]
        found = other.api_key_by_hash("a" * 64)
        assert found is not None and found.admin
        assert store.revoke_api_key(found.id).admin  # revoking keeps what it was

    def test_a_key_id_or_hash_is_stored_once(self, store):
        first = a_key("alice", "a")
        store.add_api_key(first)
        with pytest.raises(AlreadyExistsError):
            store.add_api_key(a_key("bob", "a"))  # same hash
        with pytest.raises(AlreadyExistsError):
            store.add_api_key(a_key("bob", "b", id=first.id))
        assert store.list_api_keys() == [first]

    def test_a_failed_add_in_a_transaction_leaves_the_rest(self, store):
        with store.transaction():
            store.add_api_key(a_key("alice", "a"))
            with pytest.raises(AlreadyExistsError):
                store.add_api_key(a_key("bob", "a"))
            store.add_api_key(a_key("carol", "c"))
        assert [k.user for k in store.list_api_keys()] == ["alice", "carol"]

    def test_revoking_keeps_the_key_and_the_first_time(self, store, open_store: OpenStore):
        key, kept = a_key("alice", "a"), a_key("alice", "b")
        store.add_api_key(key)
        store.add_api_key(kept)
        before = utcnow()
        revoked = store.revoke_api_key(key.id)
        assert revoked.id == key.id and revoked.revoked_at is not None
        assert before - timedelta(seconds=1) <= revoked.revoked_at <= utcnow()
        again = store.revoke_api_key(key.id)
        assert again.revoked_at == revoked.revoked_at
        found = open_store().api_key_by_hash("a" * 64)
        assert found is not None and found.revoked_at == revoked.revoked_at
        assert store.api_key_by_hash("b" * 64) == kept  # the other one is untouched

    def test_revoking_an_unknown_key_is_not_found(self, store):
        with pytest.raises(NotFoundError, match="^no API key with id 'key-nope'$"):
            store.revoke_api_key("key-nope")
        assert store.list_api_keys() == []
