"""The routes the web app needed that no route gave, through httpx (the
real app in Starlette's TestClient, on a SQLite file, against the fake
model): a block's history with diffs, one passage, an insert that replaces
passages, and dropping a message that was never answered. And the app
itself: its page at `/` and its files, served with a policy that lets them
reach nothing but the server, beside /docs and the API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memgpt_lite.server.app import create_app
from memgpt_lite.server.limits import RateLimit, ServerLimits
from memgpt_lite.server.webapp.mount import STATIC
from memgpt_lite.testing import FakeOpenAIServer, error, say


@pytest.fixture
def client(tmp_path: Path, fake_llm: FakeOpenAIServer) -> Iterator[TestClient]:
    with TestClient(create_app(str(tmp_path / "web.db"), auth=False)) as test_client:
        yield test_client


def make_agent(client: TestClient, name: str = "sam", **fields: Any) -> dict[str, Any]:
    made = client.post("/api/agents", json={"name": name, "model": "fake-model", **fields})
    assert made.status_code == 201, made.text
    return made.json()


def test_a_blocks_history_has_each_version_with_its_author_time_and_diff(
    client: TestClient,
) -> None:
    make_agent(client, blocks=[{"label": "notes/today", "value": "tea"}])
    changed = client.put("/api/agents/sam/blocks/notes/today", json={"value": "tea\ncoffee"})
    assert changed.status_code == 200, changed.text
    history = client.get("/api/agents/sam/block-history/notes/today").json()
    assert history["label"] == "notes/today"
    first, second = history["versions"]
    assert (first["number"], first["author"], first["value"]) == (0, "create", "tea")
    assert (second["number"], second["author"]) == (1, "user:local")
    assert "+coffee" in second["diff"].splitlines()
    assert " tea" in second["diff"].splitlines()
    assert second["created_at"] >= first["created_at"]
    missing = client.get("/api/agents/sam/block-history/nope")
    assert missing.status_code == 422, missing.text
    assert "no block labelled 'nope'" in missing.json()["detail"]


def test_an_insert_replaces_passages_which_stay_marked_with_their_replacement(
    client: TestClient,
) -> None:
    make_agent(client)
    old = client.post("/api/agents/sam/passages", json={"text": "Alice lives in Leeds."})
    old_id = old.json()["passages"][0]["id"]
    new = client.post(
        "/api/agents/sam/passages",
        json={"text": "Alice moved to York.", "tags": ["home"], "replaces": [old_id]},
    )
    assert new.status_code == 201, new.text
    assert new.json()["replaced"] == [old_id]
    new_id = new.json()["passages"][0]["id"]
    kept = client.get(f"/api/agents/sam/passages/{old_id}").json()
    assert (kept["text"], kept["superseded_by"]) == ("Alice lives in Leeds.", new_id)
    assert kept["superseded_at"] is not None
    assert client.get(f"/api/agents/sam/passages/{new_id}").json()["superseded_by"] is None
    assert client.get("/api/agents/sam/passages/passage-nope").status_code == 404
    unknown = client.post(
        "/api/agents/sam/passages", json={"text": "x", "replaces": ["passage-nope"]}
    )
    assert unknown.status_code == 404, unknown.text


def test_an_unanswered_message_is_dropped_only_while_it_is_the_last(
    client: TestClient, fake_llm: FakeOpenAIServer
) -> None:
    make_agent(client)
    fake_llm.enqueue(error(400, "the model refuses"))
    failed = client.post("/api/agents/sam/messages", json={"message": "hello?"})
    assert failed.status_code == 502, failed.text
    [unanswered] = client.get("/api/agents/sam/unanswered").json()["messages"]
    wrong = client.delete("/api/agents/sam/unanswered/msg-other")
    assert wrong.status_code == 409, wrong.text
    assert "nothing was removed" in wrong.json()["detail"]
    dropped = client.delete(f"/api/agents/sam/unanswered/{unanswered['id']}")
    assert dropped.status_code == 200, dropped.text
    assert dropped.json()["deleted"] >= 1
    assert client.get("/api/agents/sam/unanswered").json()["total"] == 0
    assert client.get("/api/agents/sam/messages").json()["total"] == 0
    fake_llm.enqueue(say("Hi!"))
    assert client.post("/api/agents/sam/messages", json={"message": "hi"}).status_code == 200
    [answered] = [
        m for m in client.get("/api/agents/sam/messages").json()["messages"] if m["role"] == "user"
    ]
    again = client.delete(f"/api/agents/sam/unanswered/{answered['id']}")
    assert again.status_code == 409, again.text  # answered: never dropped here
    assert client.get("/api/agents/sam/messages").json()["total"] > 1


def test_the_app_is_served_at_the_root_beside_the_api_and_its_docs(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "connect-src 'self'" in policy
    assert '<script type="module" src="app/js/main.js">' in page.text
    script = client.get("/app/js/main.js")
    assert script.status_code == 200
    assert "javascript" in script.headers["content-type"]
    assert script.headers["content-security-policy"] == policy
    assert client.get("/app/nope.js").status_code == 404
    assert client.get("/docs").status_code == 200
    assert client.get("/openapi.json").status_code == 200
    assert client.get("/api/agents").json() == []
    assert "/" not in client.get("/openapi.json").json()["paths"]


def test_the_rate_limit_leaves_the_apps_files_alone(tmp_path: Path) -> None:
    """A page load asks for a dozen files at once, with no key: the limit
    is for the API's work, which still counts."""
    limits = ServerLimits(rate_limit=RateLimit.parse("2/min", "test"))
    app = create_app(str(tmp_path / "web.db"), auth=False, limits=limits)
    with TestClient(app) as limited:
        files = ["/", "/app/app.css", *(f"/app/js/{p.name}" for p in STATIC.glob("js/*.js"))]
        for _ in range(2):
            assert [limited.get(f).status_code for f in files] == [200] * len(files)
        statuses = [limited.get("/api/agents").status_code for _ in range(3)]
        assert statuses == [200, 200, 429]


def test_every_file_the_page_names_is_in_the_package() -> None:
    """Each `app/...` the page and its modules name is a file under static/,
    so a page served from an installed package loads whole."""
    import re

    named = set()
    for source in [STATIC / "index.html", *STATIC.glob("js/*.js")]:
        text = source.read_text(encoding="utf-8")
        named |= {f"js/{m}" for m in re.findall(r'from "\./([\w-]+\.js)"', text)}
        named |= set(re.findall(r'"app/([\w/.-]+)"', text))
    assert named, "no file found named"
    for name in sorted(named):
        assert (STATIC / name).is_file(), name
