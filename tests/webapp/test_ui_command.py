"""`memgpt-lite ui`, as a user starts it: it serves the web app on
127.0.0.1 and opens the browser ($BROWSER here: a program that fetches the
page it is given and notes what it got) once the server answers. Without
API keys in the database it asks for none; with keys, the API wants one."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from support.serving import environment, free_port, new_key

from memgpt_lite.testing import FakeOpenAIServer

# A "browser" that fetches the URL it is opened with and writes what came back.
FETCHING_BROWSER = """
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=30) as page:
    body = page.read().decode()
with open(sys.argv[2], "w") as out:
    out.write(f"{sys.argv[1]} {page.status} {'<title>memgpt-lite</title>' in body}")
"""


@contextmanager
def running_ui(env: dict[str, str], log: Path, *options: str) -> Iterator[subprocess.Popen[bytes]]:
    command = [sys.executable, "-m", "memgpt_lite", "ui", *options]
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_for(check: Callable[[], bool], process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while not check():
        assert process.poll() is None, f"ui exited with {process.returncode}: {log.read_text()}"
        assert time.monotonic() < deadline, f"ui did not get there in 60 s: {log.read_text()}"
        time.sleep(0.1)


def test_ui_serves_the_app_and_opens_the_browser_there(
    fake_llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    browser = tmp_path / "browser.py"
    browser.write_text(FETCHING_BROWSER)
    opened = tmp_path / "opened.txt"
    env = environment(fake_llm, tmp_path / "home")
    env["BROWSER"] = f"{sys.executable} {browser} %s {opened}"
    port = free_port()
    log = tmp_path / "ui.log"
    with running_ui(env, log, "--db", str(tmp_path / "ui.db"), "--port", str(port)) as process:
        wait_for(opened.exists, process, log)
        wait_for(lambda: opened.read_text().endswith("True"), process, log)
        assert opened.read_text() == f"http://127.0.0.1:{port}/ 200 True"
        agents = httpx.get(f"http://127.0.0.1:{port}/api/agents", timeout=10)
        assert agents.status_code == 200, agents.text  # no keys: none asked for
    assert f"The web app: http://127.0.0.1:{port}/" in log.read_text()


def test_ui_with_keys_in_the_database_wants_one(fake_llm: FakeOpenAIServer, tmp_path: Path) -> None:
    db = tmp_path / "ui.db"
    new_key(str(db), "alice")
    env = environment(fake_llm, tmp_path / "home")
    log = tmp_path / "ui.log"
    with running_ui(env, log, "--db", str(db), "--no-open") as process:

        def address() -> bool:
            return "The web app: http://127.0.0.1:" in log.read_text()

        wait_for(address, process, log)
        url = log.read_text().split("The web app: ")[1].split()[0]

        def answers() -> bool:
            try:
                return httpx.get(f"{url}health", timeout=1).status_code == 200
            except httpx.TransportError:
                return False

        wait_for(answers, process, log)
        assert httpx.get(url, timeout=10).status_code == 200
        assert httpx.get(f"{url}api/agents", timeout=10).status_code == 401
