"""What the web app's tests share besides their fixtures (tests/webapp/conftest.py):
the server under test, what a page did, and the steps most tests begin with."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import ConsoleMessage, Page, Request

LAPTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
REFUSED = "Failed to load resource: the server responded with a status of 4"


@dataclass
class Served:
    url: str
    db: Path
    api: httpx.Client  # the same routes the page uses, for setting up and checking
    key: str | None = None  # the API key the server asks for, if it asks for one


@dataclass
class Recorded:
    """What a page did: every URL it requested, and its console's errors."""

    origin: str
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # How many refused requests (4xx) the test provokes on purpose: the
    # browser logs each as an error ("Failed to load resource: the server
    # responded with a status of 422"), which the app cannot prevent.
    refusals: int = 0

    def request(self, request: Request) -> None:
        self.requests.append(request.url)

    def console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(message.text)

    def unexpected_errors(self) -> list[str]:
        refused = [e for e in self.errors if e.startswith(REFUSED)]
        others = [e for e in self.errors if not e.startswith(REFUSED)]
        return others if len(refused) == self.refusals else self.errors

    def elsewhere(self) -> list[str]:
        """The URLs requested of any other origin (an exported file's blob: is the page's own)."""
        own = (f"{self.origin}/", f"blob:{self.origin}/")
        return [url for url in self.requests if not url.startswith(own)]


def make_agent(served: Served, name: str, **fields: object) -> dict[str, Any]:
    """An agent of the fake model, made over the API."""
    made = served.api.post("/api/agents", json={"name": name, "model": "fake-model", **fields})
    assert made.status_code == 201, made.text
    return made.json()


def open_agent(page: Page, served: Served, name: str, view: str = "") -> None:
    """The app at agent `name` (and one of its views), once it is shown."""
    page.goto(f"{served.url}/#/{name}" + (f"/{view}" if view else ""))
    page.wait_for_selector("body[data-ready]")
