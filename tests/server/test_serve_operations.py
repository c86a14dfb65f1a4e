"""Running the server: what `memgpt-lite serve` says as it starts, its
access log (one line per request: method, path, status, ms, user; never a
key, a query or a body) and `--log-level`, `--allow-endpoint`, and the API's
documentation pages served offline (no CDN)."""

from __future__ import annotations

import logging
import re
import signal
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from support.listener import local_listener
from support.serving import cli, environment, make_key, new_key, start_serve

from memgpt_lite.cli.serve import start_lines
from memgpt_lite.models import ApiKey
from memgpt_lite.server.access_log import ACCESS_LOGGER
from memgpt_lite.server.app import create_app
from memgpt_lite.testing import FakeOpenAIServer

LINE = re.compile(r"^(GET|POST|PATCH|DELETE) (\S+) (\d{3}) \d+\.\dms user=(\S+)$")
BODY_TEXT = "a message nobody logs"
QUERY_TEXT = "a-query-nobody-logs"


def access_lines(text: str) -> list[tuple[str, str, int, str]]:
    """The (method, path, status, user) of each access-log line in `text`."""
    found = []
    for line in text.splitlines():
        match = LINE.match(line.removeprefix("INFO:").strip())
        if match:
            method, path, status, user = match.groups()
            found.append((method, path, int(status), user))
    return found


def test_serve_logs_each_request_and_allows_its_endpoints(
    tmp_path: Path, fake_llm: FakeOpenAIServer
) -> None:
    env = environment(fake_llm, tmp_path / "home")
    db = tmp_path / "agents.db"
    key = make_key(env, db, "alice")
    log = tmp_path / "serve.log"
    with FakeOpenAIServer() as allowed, local_listener() as target:
        process, url = start_serve(env, db, log, "--allow-endpoint", allowed.base_url)
        try:
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}) as http:
                for name, endpoint in (("sam", allowed.base_url), ("probe", target.url)):
                    body = {"name": name, "model": "m", "base_url": endpoint, "system": BODY_TEXT}
                    http.post("/api/agents", json=body)
                assert http.get("/api/agents/sam/messages", params={"query": QUERY_TEXT}).is_success
                httpx.get(f"{url}/api/agents", headers={"Authorization": "Bearer mlk_wrong"})
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=60)
        assert target.accepted == 0
    text = log.read_text()
    lines = access_lines(text)
    # start_serve's polls, until one answered in time (a busy machine may
    # answer one after the poll gave up on it: each is logged).
    polls = next(n for n, line in enumerate(lines) if line != ("GET", "/health", 200, "-"))
    assert polls >= 1
    assert lines[polls:] == [
        ("POST", "/api/agents", 201, "alice"),
        ("POST", "/api/agents", 403, "alice"),
        ("GET", "/api/agents/sam/messages", 200, "alice"),
        ("GET", "/api/agents", 401, "-"),
    ]
    for secret in (key, "mlk_wrong", BODY_TEXT, QUERY_TEXT):
        assert secret not in text
    assert f"Serving {db} on {url}" in text
    assert "keys create --user NAME" in text


def test_the_log_level_quiets_the_access_log(tmp_path: Path, fake_llm: FakeOpenAIServer) -> None:
    env = environment(fake_llm, tmp_path / "home")
    db = tmp_path / "agents.db"
    make_key(env, db, "alice")
    log = tmp_path / "serve.log"
    process, url = start_serve(env, db, log, "--log-level", "warning")
    try:
        assert httpx.get(f"{url}/api/agents").status_code == 401
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
    assert access_lines(log.read_text()) == []


def test_a_bad_allowed_endpoint_stops_serve_in_one_line(
    tmp_path: Path, fake_llm: FakeOpenAIServer
) -> None:
    env = environment(fake_llm, tmp_path / "home")
    done = cli(
        env, "serve", "--db", str(tmp_path / "a.db"), "--allow-endpoint", "file:///etc/passwd"
    )
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [
        "Error: the allowed endpoint 'file:///etc/passwd' must start with http:// or https://, "
        "not file:// (for example http://localhost:11434/v1)"
    ]


def key(revoked: bool = False) -> ApiKey:
    from memgpt_lite.models import utcnow

    return ApiKey(user="alice", key_hash="0" * 64, revoked_at=utcnow() if revoked else None)


@pytest.mark.parametrize(
    ("host", "keys", "warned"),
    [
        ("0.0.0.0", [], True),
        ("0.0.0.0", [key(revoked=True)], True),
        ("::", [], True),
        ("0.0.0.0", [key()], False),
        ("127.0.0.1", [], False),
        ("::1", [], False),
    ],
)
def test_serve_warns_when_it_listens_beyond_this_machine_with_no_key(
    host: str, keys: list[ApiKey], warned: bool
) -> None:
    lines = start_lines(host, 8283, "/srv/agents.db", False, keys)
    assert lines[0].startswith("Serving /srv/agents.db on http://")
    assert "memgpt-lite --db /srv/agents.db keys create --user NAME" in lines[1]
    assert any(line.startswith("Warning: listening on") for line in lines) is warned


def test_the_access_log_in_process(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db = str(tmp_path / "a.db")
    secret = new_key(db, "bob")
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    with TestClient(create_app(db), headers={"Authorization": f"Bearer {secret}"}) as client:
        client.post("/api/agents", json={"name": "sam", "model": "m", "system": BODY_TEXT})
        client.get("/api/agents/sam%0Aforged 200 1.0ms user=admin", params={"q": QUERY_TEXT})
        client.get("/api/agents", headers={"Authorization": "Bearer nope"})
    lines = [r.getMessage() for r in caplog.records if r.name == ACCESS_LOGGER]
    assert access_lines("\n".join(lines)) == [
        ("POST", "/api/agents", 201, "bob"),
        ("GET", "/api/agents/sam%0Aforged%20200%201.0ms%20user=admin", 404, "bob"),
        ("GET", "/api/agents", 401, "-"),
    ]
    assert len(lines) == 3
    for hidden in (secret, BODY_TEXT, QUERY_TEXT, "nope"):
        assert all(hidden not in line for line in lines)


def test_the_documentation_pages_load_nothing_from_elsewhere(tmp_path: Path) -> None:
    with TestClient(create_app(str(tmp_path / "a.db"))) as client:
        for page in ("/docs", "/redoc"):
            html = client.get(page)
            assert html.status_code == 200
            assert "://" not in html.text  # no URL of another host: no CDN, no fonts
            assets = re.findall(r'(?:src|href)="([^"]+)"', html.text)
            assert assets and all(a.startswith("/docs-assets/") for a in assets)
            for asset in assets:
                got = client.get(asset)
                assert got.status_code == 200 and len(got.content) > 1000, asset
        assert "openapi" in client.get("/openapi.json").json()
