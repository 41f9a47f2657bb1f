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
STOPPED_BY = "stopped by "  # then the signal's name (SIGTERM)


class Terminated(KeyboardInterrupt):
    """Raised in the main thread on SIGTERM, so that a run cleans up as on Ctrl-C."""


def stop_signal_reason(signum: int) -> str:
    """The incomplete reason of a run stopped by a signal (SIGTERM: ``harness runs stop``'s kin)."""
    import signal

    return f"{STOPPED_BY}{signal.Signals(signum).name}"


def asked_to_stop(reason: str | None) -> bool:
    """Whether a run's incomplete reason is a stop asked by the user (Ctrl-C or a signal): the
    repetitions or cells after it are not started."""
    return bool(reason) and (reason == INTERRUPTED or str(reason).startswith(STOPPED_BY))


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
