"""How long the command line takes to start, and the first token count.

    python benchmarks/startup.py [--runs 9]

Each figure is the median over `--runs` fresh processes, in milliseconds:

- start-up: a bare interpreter (`python -c pass`), `memgpt-lite --help` and
  `memgpt-lite send --help`, whole processes (target: under 250 ms more
  than the bare interpreter);
- the first token count in a new process (building the vocabulary), timed
  inside the process, wall and CPU: with no cache (the vocabulary file
  parsed, as every `send` did before the cache), a cold cache (parsed, then
  cached) and a warm one. The part no cache can save is tiktoken building
  its encoder.

The cases take turns run by run, so a machine busy with other work slows
them all alike.

Every process gets its own `$MEMGPT_LITE_HOME` in a temporary folder, so
nothing is read from or written to yours. To measure another checkout, put it
first: `PYTHONPATH=../other python benchmarks/startup.py`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="processes per figure")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        # From an empty folder, `python -c` imports the installed memgpt_lite (or
        # $PYTHONPATH's, to measure another checkout), as `memgpt-lite` does,
        # never a memgpt_lite folder that happens to be in the working directory.
        os.chdir(folder)
        start_up(args.runs, Path(folder) / "home")
        first_count(args.runs, Path(folder))


if __name__ == "__main__":
    main()
