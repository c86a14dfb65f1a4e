"""Our own HTTP API (/api), in process: the real app through Starlette's
TestClient (httpx), on a SQLite file, against the fake model server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from support.paths import LETTA_AF
from support.serving import new_key

from memgpt_lite import Agent
from memgpt_lite.events import STEP_EVENT, StepFinished
from memgpt_lite.server.app import create_app
from memgpt_lite.server.limits import ServerLimits
from memgpt_lite.testing.script import Reply, call, error, reply, say
from memgpt_lite.testing.server import FakeOpenAIServer


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "server.db")


@pytest.fixture
def client(db: str) -> Iterator[TestClient]:
    key = new_key(db, "alice")
    with TestClient(create_app(db), headers={"Authorization": f"Bearer {key}"}) as test_client:
        yield test_client


def make_agent(client: TestClient, name: str = "sam", **fields: Any) -> dict[str, Any]:
    response = client.post("/api/agents", json={"name": name, "model": "fake-model", **fields})
    assert response.status_code == 201, response.text
    return response.json()


def echo(body: dict[str, Any]) -> Reply:
    last = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    return reply("echoing", [call("send_message", message=f"re: {last}")], delay=0.02)


# Keys


def test_health_needs_no_key_and_everything_else_does(db: str) -> None:
    with TestClient(create_app(db)) as anonymous:
        assert anonymous.get("/health").json()["status"] == "ok"
        missing = anonymous.get("/api/agents")
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"] == "Bearer"
        wrong = anonymous.get("/api/agents", headers={"Authorization": "Bearer mlk_nope"})
        assert wrong.status_code == 401
        assert "unknown or revoked" in wrong.json()["detail"]


def test_a_revoked_key_is_refused(db: str) -> None:
    from memgpt_lite.agent.keys import create_key
    from memgpt_lite.storage.open import open_storage

    with open_storage(db) as store:
        key, secret = create_key(store, "alice")
    with TestClient(create_app(db), headers={"Authorization": f"Bearer {secret}"}) as client:
        assert client.get("/api/agents").status_code == 200
        with open_storage(db) as store:
            store.revoke_api_key(key.id)
        assert client.get("/api/agents").status_code == 401


def test_another_users_agent_is_not_found_word_for_word(client: TestClient, db: str) -> None:
    Agent.create("bobs", "fake-model", db=db, owner="bob")
    make_agent(client, "mine")
    theirs = client.get("/api/agents/bobs")
    nobody = client.get("/api/agents/nobody")
    assert theirs.status_code == nobody.status_code == 404
    assert theirs.json()["detail"] == "no agent named 'bobs'"
    assert [a["name"] for a in client.get("/api/agents").json()] == ["mine"]
    for method, path in [
        ("POST", "/api/agents/bobs/messages"),
        ("GET", "/api/agents/bobs/blocks"),
        ("DELETE", "/api/agents/bobs"),
        ("GET", "/api/agents/bobs/export"),
    ]:
        body = {"message": "hi"} if method == "POST" else None
        assert client.request(method, path, json=body).status_code == 404, path
    assert Agent.load("bobs", db=db).state.owner == "bob"  # still there, untouched


def test_without_auth_requests_act_as_the_local_user(db: str) -> None:
    Agent.create("cli-made", "fake-model", db=db)
    with TestClient(create_app(db, auth=False)) as client:
        assert [a["name"] for a in client.get("/api/agents").json()] == ["cli-made"]


# Agents


def test_create_get_modify_delete(client: TestClient) -> None:
    blocks = [{"label": "persona", "value": "I am Sam.", "limit": 100}, {"label": "notes"}]
    created = make_agent(client, blocks=blocks, settings={"max_chained_steps": 3})
    assert [b["label"] for b in created["blocks"]] == ["persona", "notes"]
    assert created["settings"]["max_chained_steps"] == 3
    assert "api_key" not in created["llm"]  # write-only: never shown
    fetched = client.get(f"/api/agents/{created['id']}").json()
    assert fetched["name"] == "sam" and fetched["blocks"][0]["limit"] == 100
    changed = client.patch(
        "/api/agents/sam",
        json={"name": "samuel", "model": "other-model", "settings": {"warning_threshold": 0.5}},
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["llm"]["model"] == "other-model"
    assert changed.json()["settings"] == {**created["settings"], "warning_threshold": 0.5}
    assert client.get("/api/agents/sam").status_code == 404
    assert client.delete("/api/agents/samuel").status_code == 204
    assert client.get("/api/agents/samuel").status_code == 404


def test_bad_fields_are_422_naming_the_field(client: TestClient) -> None:
    unknown = client.post("/api/agents", json={"name": "a", "model": "m", "colour": "red"})
    assert unknown.status_code == 422 and "colour" in unknown.json()["detail"]
    missing = client.post("/api/agents", json={"name": "a"})
    assert missing.status_code == 422 and "model" in missing.json()["detail"]
    bad_name = client.post("/api/agents", json={"name": "no spaces", "model": "m"})
    assert bad_name.status_code == 422 and "agent name" in bad_name.json()["detail"]
    bad_setting = client.post(
        "/api/agents", json={"name": "a", "model": "m", "settings": {"warning_threshold": 7}}
    )
    assert bad_setting.status_code == 422
    assert "warning_threshold" in bad_setting.json()["detail"]
    make_agent(client, "b")
    patch = client.patch("/api/agents/b", json={"settings": {"no_such": 1}})
    assert patch.status_code == 422 and "settings.no_such" in patch.json()["detail"]
    not_json = client.post(
        "/api/agents", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert not_json.status_code == 422 and "not valid JSON" in not_json.json()["detail"]
    assert client.post("/api/agents", json={"name": "b", "model": "m"}).status_code == 409


def test_a_body_over_the_limit_is_413(db: str) -> None:
    key = new_key(db, "alice")
    headers = {"Authorization": f"Bearer {key}"}
    with TestClient(
        create_app(db, limits=ServerLimits(max_body_bytes=1000)), headers=headers
    ) as client:
        big = {"name": "a", "model": "m", "system": "x" * 2000}
        assert client.post("/api/agents", json=big).status_code == 413

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            yield json.dumps(big).encode()

        streamed = client.post(
            "/api/agents", content=chunks(), headers={"Content-Type": "application/json"}
        )
        assert streamed.status_code == 413
        assert client.get("/api/agents").json() == []


# Sending


def test_send_returns_the_steps_result(client: TestClient, fake_llm: FakeOpenAIServer) -> None:
    make_agent(client)
    fake_llm.enqueue(say("Hello, Alice!", content="greet her"))
    response = client.post("/api/agents/sam/messages", json={"message": "Hi, I am Alice"})
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["replies"] == ["Hello, Alice!"] and result["thoughts"] == ["greet her"]
    assert result["stop_reason"] == "send_message"
    history = client.get("/api/agents/sam/messages").json()
    roles = [m["role"] for m in history["messages"]]
    assert roles[-3:] == ["user", "assistant", "tool"] and history["total"] == len(roles)
    found = client.get("/api/agents/sam/messages", params={"query": "alice"}).json()
    assert {m["role"] for m in found["messages"]} == {"user", "assistant"}
    assert "Hi, I am Alice" in [m["content"] for m in found["messages"]]


def test_send_streams_the_events_of_send_json(
    client: TestClient, fake_llm: FakeOpenAIServer
) -> None:
    make_agent(client)
    fake_llm.enqueue(say("Streamed hello"))
    body = {"message": "hi", "stream": True}
    with client.stream("POST", "/api/agents/sam/messages", json=body) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in response.iter_lines() if line]
    names = [line.removeprefix("event: ") for line in lines if line.startswith("event: ")]
    events = [STEP_EVENT.validate_json(line[6:]) for line in lines if line.startswith("data: ")]
    assert [e.type for e in events] == names
    assert names[0] == "step_started" and names[-1] == "step_finished"
    deltas = "".join(e.text for e in events if e.type == "message_delta")
    assert deltas == "Streamed hello"
    assert isinstance(events[-1], StepFinished)
    assert events[-1].result.replies == ["Streamed hello"]


def test_a_stream_to_an_unknown_agent_is_a_plain_404(client: TestClient) -> None:
    response = client.post("/api/agents/ghost/messages", json={"message": "hi", "stream": True})
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"


def test_a_failing_endpoint_is_502_with_the_reason(
    client: TestClient, fake_llm: FakeOpenAIServer
) -> None:
    make_agent(client, llm_options={"max_retries": 0})
    fake_llm.enqueue(error(400, "the model is on fire"))
    response = client.post("/api/agents/sam/messages", json={"message": "hi"})
    assert response.status_code == 502
    assert "the model is on fire" in response.json()["detail"]
    fake_llm.enqueue(say("better now"))
    again = client.post("/api/agents/sam/messages", json={"message": "hi again"})
    assert again.json()["replies"] == ["better now"]


def test_bad_send_bodies(client: TestClient) -> None:
    make_agent(client)
    empty = client.post("/api/agents/sam/messages", json={"message": ""})
    assert empty.status_code == 422 and "message" in empty.json()["detail"]
    blank = client.post("/api/agents/sam/messages", json={"message": "   "})
    assert blank.status_code == 422 and "empty" in blank.json()["detail"]
    wrong_type = client.post("/api/agents/sam/messages", json={"message": ["hi"]})
    assert wrong_type.status_code == 422


def test_concurrent_sends_to_one_agent_run_one_at_a_time(
    client: TestClient, fake_llm: FakeOpenAIServer
) -> None:
    make_agent(client)
    fake_llm.responder = echo
    replies: dict[str, list[str]] = {}

    def send(text: str) -> None:
        response = client.post("/api/agents/sam/messages", json={"message": text})
        replies[text] = response.json()["replies"]

    threads = [threading.Thread(target=send, args=(f"message {i}",)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert replies == {f"message {i}": [f"re: message {i}"] for i in range(6)}
    history = client.get("/api/agents/sam/messages", params={"limit": 100}).json()["messages"]
    steps = [m["step_id"] for m in history if m["step_id"]]
    runs = [s for i, s in enumerate(steps) if i == 0 or steps[i - 1] != s]
    assert len(runs) == len(set(runs)) == 6  # no step's messages interleave another's


# Memory


def test_blocks_enforce_limits_read_only_and_expected(client: TestClient) -> None:
    blocks = [
        {"label": "human", "value": "Alice", "limit": 20},
        {"label": "rules", "value": "Be kind.", "read_only": True},
    ]
    make_agent(client, blocks=blocks)
    assert client.get("/api/agents/sam/blocks/human").json()["value"] == "Alice"
    ok = client.put("/api/agents/sam/blocks/human", json={"value": "Alice, 30"})
    assert ok.status_code == 200 and ok.json()["value"] == "Alice, 30"
    over = client.put("/api/agents/sam/blocks/human", json={"value": "x" * 21})
    assert over.status_code == 422 and "limit of 20" in over.json()["detail"]
    read_only = client.put("/api/agents/sam/blocks/rules", json={"value": "Be rude."})
    assert read_only.status_code == 422 and "read-only" in read_only.json()["detail"]
    stale = client.put("/api/agents/sam/blocks/human", json={"value": "Al", "expected": "Alice"})
    assert stale.status_code == 422
    assert client.get("/api/agents/sam/blocks/nope").status_code == 422
    labels = [b["label"] for b in client.get("/api/agents/sam/blocks").json()]
    assert labels == ["human", "rules"]
    assert client.get("/api/agents/sam/blocks/human").json()["value"] == "Alice, 30"


def test_passages_insert_list_search_delete(client: TestClient) -> None:
    make_agent(client)
    first = client.post(
        "/api/agents/sam/passages",
        json={"text": "Alice's cat is called Miso.", "tags": ["pets"]},
    )
    assert first.status_code == 201, first.text
    client.post(
        "/api/agents/sam/passages",
        json={"text": "Alice works at a bakery.", "created_at": "2024-03-01T10:00:00Z"},
    )
    listed = client.get("/api/agents/sam/passages").json()
    assert listed["total"] == 2
    found = client.get("/api/agents/sam/passages/search", params={"query": "cat name"}).json()
    assert found["passages"][0]["text"] == "Alice's cat is called Miso."
    tagged = client.get(
        "/api/agents/sam/passages/search", params={"query": "Alice", "tags": ["pets"]}
    ).json()
    assert [p["tags"] for p in tagged["passages"]] == [["pets"]]
    dated = client.get(
        "/api/agents/sam/passages/search",
        params={"query": "Alice", "start": "2024-03-01", "end": "2024-03-01"},
    ).json()
    assert [p["text"] for p in dated["passages"]] == ["Alice works at a bakery."]
    passage_id = first.json()["passages"][0]["id"]
    assert client.delete(f"/api/agents/sam/passages/{passage_id}").status_code == 204
    assert client.delete(f"/api/agents/sam/passages/{passage_id}").status_code == 404
    assert client.get("/api/agents/sam/passages").json()["total"] == 1


def test_context_overview_and_agent_files(client: TestClient, fake_llm: FakeOpenAIServer) -> None:
    make_agent(client)
    fake_llm.enqueue(say("noted"))
    client.post("/api/agents/sam/messages", json={"message": "remember the milk"})
    overview = client.get("/api/agents/sam/context").json()
    assert overview["messages_in_context"] >= 3 and overview["total_tokens"] > 0
    exported = client.get("/api/agents/sam/export").json()
    imported = client.post("/api/agents/import", params={"name": "sam2"}, json=exported)
    assert imported.status_code == 201, imported.text
    assert imported.json()["messages"] == len(exported["messages"])
    copy = client.get("/api/agents/sam2/messages").json()["messages"]
    assert any(m["content"] == "remember the milk" for m in copy)
    bad = client.post("/api/agents/import", json={"format": "something-else"})
    assert bad.status_code == 422 and "unknown format" in bad.json()["detail"]


def test_agent_files_carry_conversations_through_both_import_routes(
    client: TestClient, db: str, fake_llm: FakeOpenAIServer
) -> None:
    make_agent(client)
    sam = Agent.load("sam", db=db)
    trip = sam.conversations.open(sam.conversations.create(summary="trip").id)
    fake_llm.enqueue(say("Oslo it is."))
    trip.step("Let's go to Oslo.")
    exported = client.get("/api/agents/sam/export").json()
    [carried] = exported["conversations"]
    assert carried["summary"] == "trip" and len(carried["messages"]) >= 2
    ours = client.post("/api/agents/import", params={"name": "sam2"}, json=exported)
    assert ours.status_code == 201, ours.text
    report = ours.json()
    assert (report["conversations"], report["conversation_messages"]) == (
        1,
        len(carried["messages"]),
    )
    upload = ("sam.json", json.dumps(exported).encode(), "application/json")
    letta = client.post("/v1/agents/import", files={"file": upload}, data={"name": "sam3"})
    assert letta.status_code == 200, letta.text
    for agent_id in (report["agent_id"], *letta.json()["agent_ids"]):
        listed = client.get("/v1/conversations/", params={"agent_id": agent_id}).json()
        assert [c["summary"] for c in listed] == ["trip"]
        said = client.get(f"/v1/conversations/{listed[0]['id']}/messages").json()
        assert "Let's go to Oslo." in json.dumps(said)


def test_an_imported_letta_file_belongs_to_the_user(client: TestClient) -> None:
    letta_files = sorted(LETTA_AF.glob("*.af"))
    if not letta_files:
        pytest.skip("no Letta agent files in ../shared/letta-af")
    raw = json.loads(letta_files[0].read_text())
    imported = client.post("/api/agents/import", params={"name": "from-letta"}, json=raw)
    assert imported.status_code == 201, imported.text
    assert imported.json()["source"] == "letta"
    assert "from-letta" in [a["name"] for a in client.get("/api/agents").json()]


def test_openapi_page_documents_our_routes(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    for path in ["/api/agents", "/api/agents/{agent}/messages", "/api/agents/{agent}/passages"]:
        assert path in schema["paths"]


def test_an_agents_own_key_goes_to_its_endpoint_and_is_never_shown(
    fake_llm: FakeOpenAIServer, db: str
) -> None:
    headers = {"Authorization": f"Bearer {new_key(db, 'alice')}"}
    with (
        FakeOpenAIServer(api_key="their-own-key") as elsewhere,
        # The other endpoint is one the server allows (test_server_endpoints.py).
        TestClient(create_app(db, allow_endpoints=[elsewhere.base_url]), headers=headers) as client,
    ):
        # Without a key of its own, an agent at another endpoint gets none of the server's.
        make_agent(client, "keyless", base_url=elsewhere.base_url, llm_options={"max_retries": 0})
        refused = client.post("/api/agents/keyless/messages", json={"message": "hi"})
        assert refused.status_code == 502
        assert [r.headers.get("authorization") for r in elsewhere.rejections] == [
            "Bearer not-needed"
        ]
        created = make_agent(client, "keyed", base_url=elsewhere.base_url, api_key="their-own-key")
        elsewhere.enqueue(say("through my own key"))
        sent = client.post("/api/agents/keyed/messages", json={"message": "hi"})
        assert sent.json()["replies"] == ["through my own key"]
        assert client.patch("/api/agents/keyed", json={"api_key": "changed"}).status_code == 200
        elsewhere.enqueue(say("unreachable"))
        assert client.post("/api/agents/keyed/messages", json={"message": "hi"}).status_code == 502
        shown = [
            created,
            client.get("/api/agents/keyed").json(),
            client.get("/api/agents").json(),
            client.get("/api/agents/keyed/export").json(),
        ]
    for text in map(json.dumps, shown):
        assert "their-own-key" not in text and "changed" not in text
    assert Agent.load("keyed", db=db).state.llm.api_key.get_secret_value() == "changed"
