"""The `memgpt-lite` command's entry point (and `python -m memgpt_lite`).

It imports nothing heavy itself: Ctrl-C while the CLI's modules load ends the
program quietly instead of printing a traceback from deep inside an import.
"""

import sys


def main() -> None:
    try:
        from memgpt_lite.cli.main import main as run_cli
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        sys.exit(130)
    run_cli()


if __name__ == "__main__":
    main()
