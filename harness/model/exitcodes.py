"""Exit statuses every ``harness`` command uses (documented in ``docs/cli.md``), and how a
child process's exit status is described to a person (a signal's name, not "exit 137")."""

from __future__ import annotations

import signal

EXIT_OK = 0  # done, and complete
EXIT_ERROR = 1  # an error (bad input, a cluster that failed, ...)
EXIT_USAGE = 2  # a usage error (unknown option, bad value): click's own
EXIT_INCOMPLETE = 3  # a run that ended incomplete: timed out, cancelled, stopped by SIGTERM, jobs lost
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT), after cleaning up (128 + SIGINT, as shells report it)

INTERRUPTED = "interrupted by the user (Ctrl-C)"


class Terminated(KeyboardInterrupt):
    """Raised in the main thread on SIGTERM, so that a run cleans up as on Ctrl-C."""


def describe_exit(returncode: int | None) -> str:
    """``exit 1``, ``killed by SIGKILL`` (for -9 or a shell's 137), ``still running``."""
    if returncode is None:
        return "still running"
    number = -returncode if returncode < 0 else returncode - 128 if 128 < returncode < 128 + 65 else 0
    if number:
        try:
            return f"killed by {signal.Signals(number).name}"
        except ValueError:
            pass
    return f"exit {returncode}"
