"""The contract for transactions, snapshots, step locks and sharing a store
between threads."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import pytest

from memgpt_lite.errors import ConflictError, NotFoundError
from memgpt_lite.storage.protocol import StepLockHolder
from support.contract.base import ContractBase, contents, new_agent, passage, said


def holder(token: str) -> StepLockHolder:
    return StepLockHolder(token=token, pid=4321, hostname="far-host", host_id="far-host")


def alive(_: StepLockHolder) -> bool:
    return False


def dead(_: StepLockHolder) -> bool:
    return True


def run_threads(count: int, work: Callable[[int], None]) -> None:
    """Run `work(i)` on `count` threads started together; re-raise the first failure."""
    start = threading.Barrier(count)
    failures: list[BaseException] = []

    def run(i: int) -> None:
        try:
            start.wait(timeout=30)
            work(i)
        except BaseException as exc:  # noqa: BLE001 - re-raised on the test's thread below
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a thread is stuck"
    if failures:
        raise failures[0]


class TransactionContract(ContractBase):
    def test_a_failed_transaction_leaves_nothing(self, store):
        state = new_agent(store)
        with pytest.raises(RuntimeError), store.transaction():
            store.add_messages([said(state, "lost")])
            store.add_passage(passage(state, "lost too"))
            store.update_agent(state.id, lambda s: setattr(s, "summary", "lost as well"))
            raise RuntimeError("crash")
        stats = store.agent_stats(state.id)
        assert (stats.message_count, stats.passage_count) == (0, 0)
        assert store.messages_from(state.id, 0) == [] and store.get_agent(state.id).summary == ""

    def test_a_write_inside_another_is_undone_alone_when_it_fails(self, store):
        state = new_agent(store)
        with store.transaction():
            store.add_messages([said(state, "kept")])
            with pytest.raises(RuntimeError), store.transaction():
                store.add_passage(passage(state, "undone"))
                raise RuntimeError("the inner write failed half-way")
            store.add_passage(passage(state, "kept too"))
        assert contents(store.messages_from(state.id, 0)) == ["kept"]
        assert [p.text for p in store.list_passages(state.id, 5)[0]] == ["kept too"]

    def test_a_nested_write_is_undone_with_the_outer_one(self, store):
        state = new_agent(store)
        with pytest.raises(RuntimeError), store.transaction():
            with store.transaction():
                store.add_messages([said(state, "inner")])
            raise RuntimeError("the outer write failed after the inner one")
        assert store.messages_from(state.id, 0) == []

    def test_others_see_a_transaction_only_once_it_commits(self, store, open_store):
        state = new_agent(store)
        other = open_store()
        with store.transaction():
            store.add_messages([said(state, "pending")])
            assert other.messages_from(state.id, 0) == []
        assert contents(other.messages_from(state.id, 0)) == ["pending"]

    def test_reads_in_a_snapshot_agree_while_another_handle_writes(self, store, open_store):
        state = new_agent(store)
        store.add_messages([said(state, "before")])
        other = open_store()
        with store.snapshot():
            assert contents(store.messages_from(state.id, 0)) == ["before"]
            other.add_messages([said(state, "during")])
            assert contents(store.messages_from(state.id, 0)) == ["before"]
            assert store.agent_stats(state.id).message_count == 1
        assert contents(store.messages_from(state.id, 0)) == ["before", "during"]

    def test_in_transaction_is_the_calling_threads(self, store):
        state = new_agent(store)
        assert not store.in_transaction()
        seen_elsewhere: list[bool] = []
        with store.transaction():
            assert store.in_transaction()
            thread = threading.Thread(target=lambda: seen_elsewhere.append(store.in_transaction()))
            thread.start()
            thread.join(timeout=30)
            store.add_messages([said(state, "x")])
        with store.snapshot():
            assert store.in_transaction()
        assert seen_elsewhere == [False] and not store.in_transaction()

    def test_rollback_interrupted_keeps_what_was_committed(self, store):
        state = new_agent(store)
        store.add_messages([said(state, "committed")])
        store.rollback_interrupted()  # nothing open: nothing to do
        with store.transaction():
            store.add_messages([said(state, "also committed")])
        store.rollback_interrupted()
        assert contents(store.messages_from(state.id, 0)) == ["committed", "also committed"]
        store.add_messages([said(state, "still writable")])
        assert store.agent_stats(state.id).message_count == 3

    def test_rollback_interrupted_undoes_a_transaction_left_open(self, store):
        """As if Ctrl-C landed after a transaction opened but before its
        `with` block began: its writes must not commit with later ones, and
        other threads must not wait for it forever."""
        state = new_agent(store)
        abandoned = store.transaction()
        abandoned.__enter__()
        store.add_messages([said(state, "never committed")])
        store.rollback_interrupted()
        assert not store.in_transaction()
        other = threading.Thread(target=lambda: store.add_messages([said(state, "from a thread")]))
        other.start()
        other.join(timeout=30)
        assert not other.is_alive()
        abandoned.__exit__(None, None, None)  # if its block ever ends: nothing left to do
        with store.transaction():
            store.add_messages([said(state, "committed")])
        assert contents(store.messages_from(state.id, 0)) == ["from a thread", "committed"]

    def test_a_short_busy_timeout_ends(self, store):
        state = new_agent(store)
        with store.busy_timeout(0.05):
            store.add_messages([said(state, "written within a short timeout")])
        store.add_messages([said(state, "and after it")])
        assert store.agent_stats(state.id).message_count == 2


class StepLockContract(ContractBase):
    def test_take_renew_and_release(self, store):
        state = new_agent(store)
        assert store.step_lock_holder(state.id) is None
        assert store.take_step_lock(state.id, holder("mine"), 60, alive) is None
        held = store.step_lock_holder(state.id)
        assert held is not None and (held.token, held.pid, held.hostname) == (
            "mine",
            4321,
            "far-host",
        )
        assert held.acquired_at <= time.time() < held.expires_at <= held.acquired_at + 60.5
        store.renew_step_locks(older_than=3600)  # renewed just now: nothing to do
        assert store.step_lock_holder(state.id).expires_at == held.expires_at
        time.sleep(0.02)
        store.renew_step_locks()
        assert store.step_lock_holder(state.id).expires_at > held.expires_at
        store.release_step_lock(state.id, "someone else's")  # not the holder: a no-op
        assert store.step_lock_holder(state.id).token == "mine"
        store.release_step_lock(state.id, "mine")
        assert store.step_lock_holder(state.id) is None

    def test_a_live_holder_keeps_the_lock(self, store, open_store):
        state = new_agent(store)
        assert store.take_step_lock(state.id, holder("first"), 60, alive) is None
        current = open_store().take_step_lock(state.id, holder("second"), 60, alive)
        assert current is not None and current.token == "first"
        assert store.step_lock_holder(state.id).token == "first"

    def test_an_expired_or_dead_holder_loses_the_lock(self, store, open_store):
        state = new_agent(store)
        far = open_store()
        assert far.take_step_lock(state.id, holder("expired"), -1, alive) is None
        assert store.take_step_lock(state.id, holder("next"), 60, alive) is None
        assert store.step_lock_holder(state.id).token == "next"
        store.release_step_lock(state.id, "next")
        crashed = open_store()  # `far` still counts on its lost lease: another handle
        assert crashed.take_step_lock(state.id, holder("crashed"), 60, alive) is None
        assert store.take_step_lock(state.id, holder("after"), 60, dead) is None
        assert store.step_lock_holder(state.id).token == "after"

    def test_a_lock_of_an_unknown_agent_is_not_found(self, store):
        with pytest.raises(NotFoundError):
            store.take_step_lock("agent-ghost", holder("x"), 60, alive)

    def test_every_commit_renews_the_lease(self, store):
        state = new_agent(store)
        store.take_step_lock(state.id, holder("mine"), 60, alive)
        taken = store.step_lock_holder(state.id).expires_at
        time.sleep(0.02)
        store.add_messages([said(state, "a write")])
        assert store.step_lock_holder(state.id).expires_at > taken

    def test_a_store_that_lost_its_lock_cannot_commit(self, store, open_store):
        state = new_agent(store)
        store.take_step_lock(state.id, holder("mine"), 60, alive)
        elsewhere = open_store()  # its lease ran out, say, and another host took over
        assert elsewhere.take_step_lock(state.id, holder("theirs"), 60, dead) is None
        with pytest.raises(ConflictError, match="taken over"):
            store.add_messages([said(state, "too late")])
        assert elsewhere.messages_from(state.id, 0) == []
        assert elsewhere.step_lock_holder(state.id).token == "theirs"
        with pytest.raises(ConflictError):
            store.renew_step_locks()
        store.release_step_lock(state.id, "mine")  # gives up; leaves theirs alone
        assert elsewhere.step_lock_holder(state.id).token == "theirs"
        store.add_messages([said(state, "written once it let go")])

    def test_a_last_write_that_gives_up_a_lost_lock_fails_whole(self, store, open_store):
        state = new_agent(store)
        store.take_step_lock(state.id, holder("mine"), 60, alive)
        store.add_messages([said(state, "first")], release_lock=None)
        elsewhere = open_store()
        assert elsewhere.take_step_lock(state.id, holder("theirs"), 60, dead) is None
        with pytest.raises(ConflictError, match="taken over"):
            store.add_messages([said(state, "too late")], release_lock=(state.id, "mine"))
        assert [m.content for m in elsewhere.messages_from(state.id, 0)] == ["first"]
        assert elsewhere.step_lock_holder(state.id).token == "theirs"

    def test_a_last_write_gives_up_its_lock(self, store):
        state = new_agent(store)
        store.take_step_lock(state.id, holder("mine"), 60, alive)
        store.add_messages([said(state, "done")], release_lock=(state.id, "mine"))
        assert store.step_lock_holder(state.id) is None
        assert store.held_leases == {}


class ThreadContract(ContractBase):
    def test_threads_share_a_store(self, store):
        """8 threads add messages alone, in pairs in one transaction, and in
        transactions that roll back; nothing is lost or interleaved."""
        state = new_agent(store)
        rounds = 15

        def work(thread: int) -> None:
            for i in range(rounds):
                store.add_messages([said(state, f"t{thread} single {i}")])
                with store.transaction():
                    store.add_messages([said(state, f"t{thread} pair {i} a")])
                    store.add_messages([said(state, f"t{thread} pair {i} b")])
                with pytest.raises(RuntimeError), store.transaction():
                    store.add_messages([said(state, f"t{thread} undone {i}")])
                    raise RuntimeError("rolled back")
                store.search_messages(state.id, f"t{thread}", 3)  # reads in between

        run_threads(8, work)
        messages = store.messages_from(state.id, 0)
        assert len(messages) == 8 * rounds * 3 == store.agent_stats(state.id).message_count
        seqs = [m.seq or 0 for m in messages]
        assert seqs == sorted(set(seqs))
        texts = contents(messages)
        assert not any("undone" in (t or "") for t in texts)
        for position, text in enumerate(texts):  # a pair's two halves are next to each other
            if text and text.endswith(" a"):
                assert texts[position + 1] == text[:-1] + "b"
        for thread in range(8):  # each thread's messages in its own order
            mine = [t for t in texts if (t or "").startswith(f"t{thread} ")]
            assert mine == [
                f"t{thread} {kind} {i}{half}"
                for i in range(rounds)
                for kind, half in (("single", ""), ("pair", " a"), ("pair", " b"))
            ]

    def test_another_threads_write_waits_for_an_open_transaction(self, store):
        """A write from thread B while thread A's transaction is open must
        not become part of it (and be rolled back with it): B waits."""
        state = new_agent(store)
        a_is_inside, b_is_done = threading.Event(), threading.Event()

        def thread_b() -> None:
            a_is_inside.wait(timeout=30)
            store.add_messages([said(state, "from b")])
            b_is_done.set()

        b = threading.Thread(target=thread_b)
        b.start()
        with pytest.raises(RuntimeError), store.transaction():
            store.add_messages([said(state, "from a")])
            a_is_inside.set()
            assert not b_is_done.wait(timeout=0.3)  # B is held back while A is open
            raise RuntimeError("A rolls back")
        b.join(timeout=30)
        assert b_is_done.is_set()
        assert contents(store.messages_from(state.id, 0)) == ["from b"]

    def test_a_transaction_held_across_an_await_refuses_other_tasks(self, store):
        """Tasks of one event loop share a thread: another task's write must
        not join a transaction a task holds open while it awaits."""
        state = new_agent(store)

        async def holder(opened: asyncio.Event, go_on: asyncio.Event) -> None:
            with store.transaction():
                store.add_messages([said(state, "the holder's")])
                opened.set()
                await go_on.wait()  # what a transaction must not do

        async def main() -> None:
            opened, go_on = asyncio.Event(), asyncio.Event()
            holding = asyncio.create_task(holder(opened, go_on))
            await opened.wait()
            assert not store.in_transaction()  # not this task's
            with pytest.raises(RuntimeError, match="another asyncio task"):
                store.add_messages([said(state, "another task's")])
            with pytest.raises(RuntimeError, match="another asyncio task"), store.transaction():
                pass
            go_on.set()
            await holding
            store.add_messages([said(state, "after it ended")])

        asyncio.run(main())
        assert contents(store.messages_from(state.id, 0)) == ["the holder's", "after it ended"]

    def test_a_snapshot_holds_other_threads_writes_back(self, store):
        state = new_agent(store)
        written = threading.Event()
        writer = threading.Thread(
            target=lambda: (store.add_messages([said(state, "later")]), written.set())
        )
        with store.snapshot():
            writer.start()
            assert not written.wait(timeout=0.2)
            assert store.messages_from(state.id, 0) == []
        writer.join(timeout=30)
        assert contents(store.messages_from(state.id, 0)) == ["later"]
