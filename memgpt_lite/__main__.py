"""The `memgpt-lite` command's entry point (and `python -m memgpt_lite`).

It imports nothing heavy itself: Ctrl-C while the CLI's modules load ends the
program quietly instead of printing a traceback from deep inside an import.
"""

import _thread
import sys
from typing import Any

from memgpt_lite.errors import is_interrupt


def _pass_on_interrupts(unraisable: Any) -> None:
    """A Ctrl-C that lands in a callback CPython cannot raise from (a weakref
    callback of the import system's, say) is printed as "Exception ignored"
    and lost; raise it again in the main thread instead, where the handlers
    below turn it into "Interrupted.". From another thread: called here,
    it would raise inside this hook, and be ignored again."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        _thread.start_new_thread(_thread.interrupt_main, ())
        return
    sys.__unraisablehook__(unraisable)


def main() -> None:
    sys.unraisablehook = _pass_on_interrupts
    try:
        from memgpt_lite.cli.main import main as run_cli
    except (KeyboardInterrupt, RuntimeError) as exc:
        if not is_interrupt(exc):
            raise
        print("Interrupted.", file=sys.stderr)
        sys.exit(130)
    run_cli()


if __name__ == "__main__":
    main()
