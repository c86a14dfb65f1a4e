"""How long the command line takes to start, the first token count, and
what each command costs a new process.

    python benchmarks/startup.py [--runs 9] [--only start-up|first-count|commands]

Each figure is the median over `--runs` fresh processes:

- start-up, in milliseconds: a bare interpreter (`python -c pass`),
  `memgpt-lite --help` and `memgpt-lite send --help`, whole processes
  (target: under 250 ms more than the bare interpreter);
- the first token count in a new process (building the vocabulary), timed
  inside the process, in milliseconds, wall and CPU: with no cache (the
  vocabulary file parsed, as every `send` did before the cache), a cold
  cache (parsed, then cached) and a warm one. The part no cache can save is
  tiktoken building its encoder;
- what each command costs a new process, in seconds, CPU (user + system:
  what the test suite pays for every command it runs) and wall: `agents`,
  `create`, `send` (one reply from the fake model of memgpt_lite.testing, on
  127.0.0.1), `serve` until /health answers, and the two helper processes
  the tests start most: the MCP test server (tests/support/mcp_server.py,
  over stdio until it lists its tools) and a source tool's process
  (tools/source/child.py: one describing a tool, one calling it).

`--only new-things` times, inside one process, what each new database and
each new server app costs in CPU (milliseconds, median): opening a new
SQLite file (its schema made), and a new app's first requests to a few
routers, the first app of the process and the ones after it (the API's
routes are analysed once per process, server/app.py).

The cases take turns run by run, so a machine busy with other work slows
them all alike. `--only` runs one of the three parts.

Every process gets its own `$MEMGPT_LITE_HOME` in a temporary folder, so
nothing is read from or written to yours. To measure another checkout, put it
first: `PYTHONPATH=../other python benchmarks/startup.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# The first count of a new process, timed from inside it (imports excluded).
_FIRST_COUNT = """
import sys, time
from memgpt_lite.llm.tokens import TokenCounter
from memgpt_lite.settings.resolve import cache_dir
folder = cache_dir()
started, cpu = time.perf_counter(), time.process_time()
TokenCounter(sys.argv[1], folder).count_text("How many tokens is this?")
print((time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000)
"""
MODELS = {"o200k_base": "gpt-4o-mini", "cl100k_base": "gpt-4"}

# New databases and new server apps, timed in one process.
_NEW_THINGS = """
import statistics, sys, tempfile, time
from pathlib import Path
from fastapi.testclient import TestClient
from memgpt_lite.server.app import create_app
from memgpt_lite.storage.open import open_storage
runs, folder = int(sys.argv[1]), Path(tempfile.mkdtemp())
def cpu_ms(run):
    started = time.process_time()
    run()
    return (time.process_time() - started) * 1000
opened = [cpu_ms(lambda: open_storage(folder / f"new-{n}.db").close()) for n in range(runs + 1)]
paths = ["/v1/agents/", "/v1/blocks/", "/v1/tools/", "/api/agents", "/health", "/v1/nothing"]
def first_requests(n):
    with TestClient(create_app(str(folder / f"app-{n}.db"), auth=False)) as client:
        return cpu_ms(lambda: [client.get(path) for path in paths])
apps = [first_requests(n) for n in range(runs + 1)]
print(f"  {'open a new SQLite database':<42}{statistics.median(opened[1:]):7.1f}")
print(f"  {'first requests, the first app':<42}{apps[0]:7.1f}")
print(f"  {'first requests, each later app':<42}{statistics.median(apps[1:]):7.1f}")
"""


def _command() -> list[str]:
    """`memgpt-lite` as installed beside this interpreter, else `python -m`."""
    script = Path(sys.executable).with_name("memgpt-lite")
    return [str(script)] if script.exists() else [sys.executable, "-m", "memgpt_lite"]


def _wall_ms(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - started) * 1000


def _first_count_ms(model: str, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU milliseconds of the first count in a new process."""
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_COUNT, model],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    wall, cpu = done.stdout.split()
    return float(wall), float(cpu)


def _medians(figures: list[tuple[float, float]]) -> str:
    wall = statistics.median(f[0] for f in figures)
    cpu = statistics.median(f[1] for f in figures)
    return f"{wall:4.0f} (cpu {cpu:3.0f})"


def start_up(runs: int, home: Path) -> None:
    env = {**os.environ, "MEMGPT_LITE_HOME": str(home)}
    cases = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "memgpt-lite --help": [*_command(), "--help"],
        "memgpt-lite send --help": [*_command(), "send", "--help"],
    }
    for argv in cases.values():  # warm the disk cache: every figure is a warm start
        _wall_ms(argv, env)
    times: dict[str, list[float]] = {label: [] for label in cases}
    for _ in range(runs):
        for label, argv in cases.items():
            times[label].append(_wall_ms(argv, env))
    print(f"start-up, median of {runs} processes (ms)")
    bare = statistics.median(times.pop("python -c pass"))
    print(f"  {'python -c pass':<26}{bare:7.0f}")
    for label, figures in times.items():
        median = statistics.median(figures)
        print(f"  {label:<26}{median:7.0f}  (+{median - bare:.0f} over the bare interpreter)")


def first_count(runs: int, root: Path) -> None:
    print(f"first token count in a new process, median of {runs} (ms)")
    blocker = root / "not-a-folder"
    blocker.write_text("")
    for name, model in MODELS.items():
        no_cache = {**os.environ, "MEMGPT_LITE_HOME": str(blocker / "home")}  # cannot be made
        cached_home = root / f"home-{name}"
        cached = {**os.environ, "MEMGPT_LITE_HOME": str(cached_home)}
        uncached, cold, warm = [], [], []
        for _ in range(runs):
            uncached.append(_first_count_ms(model, no_cache))
            shutil.rmtree(cached_home, ignore_errors=True)
            cold.append(_first_count_ms(model, cached))
            warm.append(_first_count_ms(model, cached))
        print(
            f"  {f'{name} ({model})':<26}no cache {_medians(uncached)}"
            f"   cold cache {_medians(cold)}   warm cache {_medians(warm)}"
        )


# ------------------------------------------------------- what commands cost

REPO = Path(__file__).resolve().parent.parent
MCP_TEST_SERVER = REPO / "tests" / "support" / "mcp_server.py"
TOOL_SOURCE = '''
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
'''


def _cpu_and_wall(run: Callable[[], None]) -> tuple[float, float]:
    """CPU seconds (user + system) of the child processes that `run` starts
    and waits for, and its wall seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    run()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def _run_cli(env: dict[str, str], db: Path, *args: str) -> None:
    argv = [*_command(), "--db", str(db), *args]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {done.stderr.strip()}")


def _serve_until_healthy(env: dict[str, str], db: Path) -> None:
    """`memgpt-lite serve` started, waited for until /health answers, stopped."""
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    argv = [*_command(), "serve", "--port", str(port), "--db", str(db), "--no-auth"]
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1):
                    return
            except OSError:
                time.sleep(0.02)
        raise SystemExit("serve did not answer /health")
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(30)


def _mcp_server_lists_tools(env: dict[str, str]) -> None:
    """The tests' MCP server over stdio: initialized, its tools listed, closed."""
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "startup-benchmark", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    process = subprocess.Popen(
        [sys.executable, str(MCP_TEST_SERVER), "stdio"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    for message in messages:
        process.stdin.write(json.dumps(message) + "\n")
    process.stdin.flush()
    for line in process.stdout:
        if json.loads(line).get("id") == 2:
            break
    else:
        raise SystemExit("the MCP test server did not list its tools")
    process.stdin.close()
    process.wait(30)


def _source_tool(mode: str) -> None:
    """A source tool's process (tools/source/child.py), as runner.py starts it."""
    from memgpt_lite.tools.source.runner import child_command

    request = {
        "mode": mode,
        "name": None,
        "source": TOOL_SOURCE,
        "module": None,
        "requirements": [],
        "arguments": {"a": 2, "b": 3},
        "max_chars": 1000,
        "sys_path": [entry or os.getcwd() for entry in sys.path],
        "memory_bytes": 1024 * 2**20,
        "cpu_seconds": 30,
    }
    done = subprocess.run(
        child_command(), input=json.dumps(request), capture_output=True, text=True, timeout=60
    )
    if "error" in json.loads(done.stdout or '{"error": "no reply"}'):
        raise SystemExit(f"the source tool failed: {done.stdout} {done.stderr[-500:]}")


def commands(runs: int, root: Path) -> None:
    from memgpt_lite.testing import FakeOpenAIServer
    from memgpt_lite.testing.script import say

    with FakeOpenAIServer() as model:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MEMGPT_LITE_"))}
        env.update(
            OPENAI_BASE_URL=model.base_url,
            OPENAI_API_KEY=model.api_key,
            MEMGPT_LITE_HOME=str(root / "commands-home"),
        )
        db = root / "commands.db"
        _run_cli(env, db, "create", "sam", "--model", "gpt-4o-mini")
        created = iter(range(10**6))

        def send() -> None:
            model.enqueue(say("Hello!"))
            _run_cli(env, db, "send", "sam", "hi")

        cases: dict[str, Callable[[], None]] = {
            "python -c pass": lambda: subprocess.run([sys.executable, "-c", "pass"], check=True),
            "agents": lambda: _run_cli(env, db, "agents"),
            "create NAME --model M": lambda: _run_cli(
                env, db, "create", f"agent-{next(created)}", "--model", "gpt-4o-mini"
            ),
            "send sam hi": send,
            "serve (until /health)": lambda: _serve_until_healthy(env, db),
            "source tool: describe": lambda: _source_tool("describe"),
            "source tool: call": lambda: _source_tool("call"),
        }
        if MCP_TEST_SERVER.exists():  # a checkout with its tests
            cases["MCP test server (stdio)"] = lambda: _mcp_server_lists_tools(env)
        for run in cases.values():  # warm the disk cache, and the token counts' cache
            run()
        figures: dict[str, list[tuple[float, float]]] = {label: [] for label in cases}
        for _ in range(runs):
            for label, run in cases.items():
                figures[label].append(_cpu_and_wall(run))
    print(f"what a command costs a new process, median of {runs} (s)")
    for label, measured in figures.items():
        cpu = statistics.median(f[0] for f in measured)
        wall = statistics.median(f[1] for f in measured)
        print(f"  {label:<26}cpu {cpu:5.2f}   wall {wall:5.2f}")


def new_things(runs: int) -> None:
    print(f"what a new database and a new server app cost, CPU, median of {runs} (ms)")
    done = subprocess.run(
        [sys.executable, "-c", _NEW_THINGS, str(runs)], capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    print(done.stdout, end="")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="processes per figure")
    parser.add_argument("--only", choices=["start-up", "first-count", "commands", "new-things"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        # From an empty folder, `python -c` imports the installed memgpt_lite (or
        # $PYTHONPATH's, to measure another checkout), as `memgpt-lite` does,
        # never a memgpt_lite folder that happens to be in the working directory.
        os.chdir(folder)
        if args.only in (None, "start-up"):
            start_up(args.runs, Path(folder) / "home")
        if args.only in (None, "first-count"):
            first_count(args.runs, Path(folder))
        if args.only in (None, "commands"):
            commands(args.runs, Path(folder))
        if args.only in (None, "new-things"):
            new_things(args.runs)


if __name__ == "__main__":
    main()
