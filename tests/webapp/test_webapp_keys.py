"""The web app on a server with keys: it asks for a key once, on the first
401, keeps it in the browser, and sends it with every request; a key that
stops working is asked for again."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Page, expect
from support.serving import live_server, new_key
from support.webapp import Recorded, Served, make_agent

from memgpt_lite.testing import FakeOpenAIServer


@pytest.fixture(scope="module")
def served(model: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The server with keys (as `serve`), and alice's client of it."""
    db = tmp_path_factory.mktemp("webapp-keys") / "web.db"
    key = new_key(str(db), "alice")
    headers = {"Authorization": f"Bearer {key}"}
    with (
        live_server(str(db)) as url,
        httpx.Client(base_url=url, timeout=30, headers=headers) as api,
    ):
        yield Served(url, db, api, key)


def test_the_key_is_asked_once_and_kept(page: Page, served: Served, recorded: Recorded) -> None:
    recorded.refusals = 2  # the first request without a key, and the one with a wrong key
    make_agent(served, "alices-agent")
    page.goto(served.url)
    question = page.get_by_role("dialog", name="API key")
    expect(question).to_be_visible()
    question.get_by_label("API key").fill("mlk_not-a-key")
    question.get_by_role("button", name="Use key").click()
    expect(question).to_contain_text("unknown or revoked")
    question.get_by_label("API key").fill(served.key)
    question.get_by_role("button", name="Use key").click()
    expect(page.get_by_role("heading", name="alices-agent")).to_be_visible()
    page.reload()
    page.wait_for_selector("body[data-ready]")
    expect(page.get_by_role("heading", name="alices-agent")).to_be_visible()
    expect(question).to_be_hidden()
    assert page.evaluate("localStorage.getItem('memgpt-lite.api-key')") == served.key
