"""PostgreSQL's window kept between reads (core/window_cache.py, with the
stamp its edits and deletions move): that a read after any change holds
what a fresh read holds is the storage contract's (support/contract/window.py);
here, that the memory is used at all."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.contract.base import new_agent, said

from memgpt_lite.storage.postgres.store import PostgresStore


@pytest.fixture
def store(pg_url: str) -> Iterator[PostgresStore]:
    opened = PostgresStore(pg_url)
    yield opened
    opened.close()


def test_an_unchanged_window_is_handed_out_again_and_appends_extend_it(store: PostgresStore):
    sam = new_agent(store)
    store.add_messages([said(sam, "one"), said(sam, "two")])
    first = store.window(sam.id, 0)
    again = store.main_context(sam.id, 0).messages
    assert again is not first and all(a is b for a, b in zip(first, again, strict=True))
    store.add_messages([said(sam, "three")])
    grown = store.window(sam.id, 0)
    assert [m.content for m in grown] == ["one", "two", "three"]
    assert grown[0] is first[0] and grown[1] is first[1]


def test_an_edit_or_a_deletion_elsewhere_reads_the_window_again(store: PostgresStore, pg_url: str):
    sam = new_agent(store)
    store.add_messages([said(sam, "one"), said(sam, "two"), said(sam, "three")])
    first = store.window(sam.id, 0)
    with PostgresStore(pg_url) as other:
        other.update_message(first[0].model_copy(update={"content": "edited"}))
    again = store.window(sam.id, 0)
    assert [m.content for m in again] == ["edited", "two", "three"]
    assert not any(a is b for a, b in zip(first, again, strict=True))
    with PostgresStore(pg_url) as other:
        other.delete_messages_from(sam.id, again[2].seq)
    assert [m.content for m in store.messages_from(sam.id, 0)] == ["edited", "two"]
