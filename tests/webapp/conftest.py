"""Fixtures of the web app's tests: one headless Chromium per test process
(Debian's, installed by the test command where missing: support/browser.py),
one server per module, without keys, against a fake model of the
module's own, and a page per test that records every request and
console message: a test fails if the page asked any other origin than the
server's, or logged an error. Each test leaves a screenshot in
test-artifacts/webapp/ (ignored by git)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from playwright.sync_api import Browser, Page, Playwright, sync_playwright
from support.browser import CHROMIUM, CHROMIUM_FLAGS, install_chromium
from support.paths import REPO
from support.serving import live_server
from support.webapp import LAPTOP, Recorded, Served

from memgpt_lite.testing import FakeOpenAIServer

ARTIFACTS = REPO / "test-artifacts" / "webapp"


# Per module, not per session: while Playwright's sync API runs, its event
# loop is the running loop of the worker's thread, and a test of another
# package that an xdist worker runs next would fail at asyncio.run().
@pytest.fixture(scope="module")
def playwright_driver() -> Iterator[Playwright]:
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="module")
def browser(playwright_driver: Playwright) -> Iterator[Browser]:
    """Debian's chromium, headless, with a fresh profile (Playwright gives
    each launch a new temporary user-data folder)."""
    problem = install_chromium()
    if problem is not None:
        pytest.fail(f"the web app's tests need Debian's chromium: {problem}", pytrace=False)
    launched = playwright_driver.chromium.launch(
        executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS
    )
    yield launched
    launched.close()


@pytest.fixture(scope="module")
def model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture(scope="module")
def served(model: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The server on a database of the module's own, without keys (as
    `serve --no-auth`): the real app on uvicorn in a thread, as
    tests/server/ serves it (a `serve` process took 5 s to start here;
    test_ui_command.py starts the real command)."""
    db = tmp_path_factory.mktemp("webapp") / "web.db"
    with (
        model_environment(model),
        live_server(str(db), auth=False) as url,
        httpx.Client(base_url=url, timeout=30) as api,
    ):
        yield Served(url, db, api)


@contextmanager
def model_environment(model: FakeOpenAIServer) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_BASE_URL", model.base_url)
        patch.setenv("OPENAI_API_KEY", model.api_key)
        yield


@pytest.fixture(autouse=True)
def _model_for_the_server(_isolated: None, model: FakeOpenAIServer) -> Iterator[None]:
    """The module's fake model for the server's steps during each test (the
    root conftest points every test at an unreachable one)."""
    with model_environment(model):
        yield


def artifact_name(node_name: str) -> str:
    return re.sub(r"[^\w.-]+", "_", node_name)


@pytest.fixture
def recorded(served: Served) -> Recorded:
    return Recorded(served.url)


@pytest.fixture
def page(
    browser: Browser, served: Served, recorded: Recorded, request: pytest.FixtureRequest
) -> Iterator[Page]:
    """A fresh browser context's page at laptop size; after the test, a
    screenshot, and the check that it asked only the server and logged no error."""
    context = browser.new_context(viewport=LAPTOP)
    opened = context.new_page()
    opened.on("request", recorded.request)
    opened.on("console", recorded.console)
    opened.on("pageerror", lambda error: recorded.errors.append(f"uncaught: {error}"))
    opened.on("dialog", lambda dialog: dialog.accept())  # confirm(): the test meant it
    opened.set_default_timeout(10_000)
    yield opened
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    opened.screenshot(path=ARTIFACTS / f"{artifact_name(request.node.name)}.png")
    context.close()
    assert recorded.elsewhere() == [], "the page asked another origin than the server's"
    assert recorded.unexpected_errors() == [], "the page logged errors"
