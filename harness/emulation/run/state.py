"""The runs of a runs directory and the state of each: running, complete or incomplete.

A run directory says it all: ``process.json`` names the process running it (pid, host),
``progress.json`` its latest progress (refreshed by the run while it watches the replay),
``manifest.json`` its verdict once written. A run whose process is gone without a manifest
was killed: it is incomplete.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.model import rundir
from harness.model.jsonio import JsonFileError, read_json, write_json

RUNNING, COMPLETE, INCOMPLETE = "running", "complete", "incomplete"
DAMAGED = "damaged"  # a file of the run directory cannot be read: the reason names it
# what a corrupt file of a run directory raises while its state is worked out
_UNREADABLE = (JsonFileError, OSError, ValueError, TypeError, AttributeError, KeyError)


@dataclass(frozen=True)
class RunState:
    path: Path
    state: str  # running, complete, incomplete or damaged
    policy: str = ""
    step: str = ""  # the last step done (running: the one under way is the next)
    total: int | None = None  # jobs of the plan (repetitions of a --repeat run)
    finished: int | None = None
    eta_s: float | None = None  # running only: seconds left, at least
    reason: str = ""  # incomplete and damaged only
    pid: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "path": str(self.path)}


def mark_process(run_dir: Path, argv: list[str] | None = None) -> None:
    """Record in ``run_dir`` that this process runs it."""
    write_json(
        run_dir / rundir.PROCESS,
        {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "argv": argv if argv is not None else sys.argv,
            "started": time.time(),
        },
    )


def process_alive(run_dir: Path) -> int | None:
    """The pid of the live process that runs ``run_dir`` on this host, else None."""
    info = read_json(run_dir / rundir.PROCESS)
    pid = info.get("pid")
    if not isinstance(pid, int) or info.get("host") != socket.gethostname():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    try:  # a recycled pid runs something else
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return pid
    return pid if (b"harness" in cmdline or b"python" in cmdline) else None


def run_state(run_dir: Path, now: float | None = None) -> RunState:
    """What a run directory says of its run; a directory with a corrupt file is ``damaged``,
    its reason ``unreadable: FILE: why`` (one bad run never hides the others)."""
    try:
        return _state(run_dir, now)
    except _UNREADABLE as exc:
        why = str(exc) if isinstance(exc, JsonFileError) else f"{run_dir}: {type(exc).__name__}: {exc}"
        return RunState(run_dir, DAMAGED, reason=f"unreadable: {why}")


def _state(run_dir: Path, now: float | None) -> RunState:
    if (run_dir / rundir.REPETITIONS_DIR).is_dir():
        return _repeated_state(run_dir)
    steps = rundir.done_steps(run_dir)
    manifest = rundir.read_manifest(run_dir)
    request = read_json(run_dir / rundir.REQUEST).get("options", {})
    policy = str(manifest.get("policy") or request.get("replay", {}).get("policy", ""))
    total = steps.get("plan", {}).get("info", {}).get("jobs")
    step = next(reversed(steps), "") if steps else ""
    pid = process_alive(run_dir)
    if pid is not None and "report" not in steps:
        progress = rundir.read_progress(run_dir)
        eta = progress.get("eta_s")
        if eta is not None:
            eta = max(0.0, float(eta) - ((now or time.time()) - float(progress.get("updated", 0.0))))
        return RunState(
            run_dir,
            RUNNING,
            policy,
            step,
            progress.get("total", total),
            progress.get("finished"),
            eta,
            pid=pid,
        )
    finished = steps.get("metrics", {}).get("info", {}).get("jobs")
    if manifest:  # the process is gone, or has written its report
        state = COMPLETE if manifest.get("complete") else INCOMPLETE
        reason = str(manifest.get("incomplete_reason") or "")
        return RunState(run_dir, state, policy, step, total, finished, reason=reason)
    reason = (
        f"stopped during the step after '{step}' without a verdict" if step else "stopped before any step"
    )
    finished = rundir.read_progress(run_dir).get("finished", finished)
    return RunState(run_dir, INCOMPLETE, policy, step, total, finished, reason=reason)


def _repeated_state(parent: Path) -> RunState:
    """A ``--repeat`` run: its repetitions done out of those asked."""
    reps = sorted(p for p in (parent / rundir.REPETITIONS_DIR).iterdir() if p.is_dir())
    states = [run_state(p) for p in reps]
    manifest = rundir.read_manifest(parent)
    total = manifest.get("repeat") or read_json(parent / rundir.REQUEST).get("repeat") or len(reps)
    done = sum(s.state != RUNNING for s in states)
    policy = next((s.policy for s in states if s.policy), "")
    pid = process_alive(parent) or next((s.pid for s in states if s.pid), None)
    if pid is not None and not manifest:
        return RunState(parent, RUNNING, policy, f"repetition {len(reps)}", total, done, pid=pid)
    if manifest:
        state = COMPLETE if manifest.get("complete") else INCOMPLETE
        return RunState(parent, state, policy, "repetitions", total, done)
    return RunState(
        parent,
        INCOMPLETE,
        policy,
        "repetitions",
        total,
        done,
        reason=f"stopped after {done} of {total} repetition(s)",
    )


def is_run_dir(path: Path) -> bool:
    return path.is_dir() and any(
        (path / name).exists()
        for name in (rundir.MANIFEST, rundir.STEPS, rundir.PROCESS, rundir.REQUEST, rundir.REPETITIONS_DIR)
    )


def list_runs(runs_dir: Path) -> list[RunState]:
    """Every run directory directly under ``runs_dir``, oldest first (their names start with the time)."""
    if not runs_dir.is_dir():
        return []
    return [run_state(p) for p in sorted(runs_dir.iterdir()) if is_run_dir(p)]
