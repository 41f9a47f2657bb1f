"""Detached runs (``harness run --detach``): the run goes on in a process of its own session,
so that closing the terminal (SIGHUP) or ending the invoking shell does not end it.

The invoking command names the run directory, writes the run's options there
(``request.json``) and starts ``python -m harness.emulation.run.detach DIR``; that process runs
the run as ``harness run`` would, its messages going to ``run.log`` (rotated: at most
:data:`LOG_MAX_BYTES` twice). SIGINT or SIGTERM (``harness runs stop``) stop it as Ctrl-C
does: the replay stops, the run's jobs are cancelled, an incomplete run directory is written.
"""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from harness.emulation.run.specs import RunOptions, options_from_dict, run_id_for
from harness.model import rundir
from harness.model.jsonio import read_json, write_json
from harness.model.paths import PACKAGE_ROOT
from harness.model.rundir import DETACH_LOG

LOG_MAX_BYTES = 5 * 1024 * 1024


def start_detached(opts: RunOptions, repeat: int = 1) -> Path:
    """Start the run in a process of its own session; returns its run directory at once."""
    run_dir = opts.runs_dir / run_id_for(opts)
    run_dir.mkdir(parents=True, exist_ok=False)
    write_json(run_dir / rundir.REQUEST, {"options": opts.as_dict(), "repeat": repeat})
    with open(run_dir / DETACH_LOG, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness.emulation.run.detach", str(run_dir.resolve())],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True,
            env={**os.environ, "PYTHONPATH": _package_root() + os.pathsep + os.environ.get("PYTHONPATH", "")},
        )  # fmt: skip
    argv = [sys.executable, "-m", "harness.emulation.run.detach", str(run_dir)]
    write_json(run_dir / rundir.PROCESS, {"pid": proc.pid, "host": socket.gethostname(), "argv": argv})
    return run_dir


def _package_root() -> str:
    """The folder that holds the ``harness`` package (never the package itself: its
    ``platform`` would hide the standard library's)."""
    return str(PACKAGE_ROOT.parent)


class RotatingLog(io.TextIOBase):
    """A text stream into ``path`` that moves it to ``path.1`` when it passes ``max_bytes``."""

    def __init__(self, path: Path, max_bytes: int = LOG_MAX_BYTES) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.file = open(path, "a", encoding="utf-8")  # noqa: SIM115 (kept open for the run)

    def write(self, text: str) -> int:
        text = text.replace("\r", "\n")
        self.file.write(text)
        self.file.flush()
        if self.file.tell() > self.max_bytes:
            self.file.close()
            os.replace(self.path, self.path.with_name(self.path.name + ".1"))
            self.file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
        return len(text)

    def isatty(self) -> bool:
        return False


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"stopped by signal {signal.Signals(signum).name} (harness runs stop)")


def run_detached(run_dir: Path) -> int:
    """The detached process: the run of ``run_dir/request.json``; 0 if complete, 3 if not."""
    from harness.emulation.run.experiment import Experiment
    from harness.emulation.run.repetitions import run_repetitions

    sys.stdout = sys.stderr = RotatingLog(run_dir / rundir.RUN_LOG)
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    request = read_json(run_dir / rundir.REQUEST)
    opts = replace(options_from_dict(request["options"]), run_dir=run_dir, run_id=run_dir.name, quiet=True)
    repeat = int(request.get("repeat", 1))
    try:
        if repeat > 1:
            run_repetitions(opts, repeat, parent=run_dir)
        else:
            Experiment(opts).execute(resume=True)  # the directory exists: it holds the request
    except Exception as exc:
        print(f"run failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    complete = bool(rundir.read_manifest(run_dir).get("complete"))
    print(f"run {'complete' if complete else 'INCOMPLETE'}: {run_dir}", file=sys.stderr)
    return 0 if complete else 3


if __name__ == "__main__":
    sys.exit(run_detached(Path(sys.argv[1])))
