"""A simulated run written as a run directory: the contract of an emulated run
(:mod:`harness.model.rundir`), so that ``harness compare`` sets a simulation beside an
emulation and a simulation gets the same report and plots (Gantt, utilisation, queue).

The simulator's per-job results are already in plan time (seconds of the plan, shrunk when
the plan is), as an emulated run's are; ``metrics.json`` holds the summary in original time,
``manifest.json`` names the executor (``simulator``), the policy, the trace, the shrink and
the platform.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from harness import __version__
from harness.model import rundir
from harness.model.atomic import atomic_write_csv, atomic_write_parquet
from harness.model.checks import InputError
from harness.model.jsonio import write_json
from harness.model.rundir import SIMULATOR
from harness.platform import Machine
from harness.workload.plan import save_plan


class RunDirectoryError(InputError):
    """A run directory that cannot be written (it exists and holds files): a usage error."""


@dataclass(frozen=True)
class SimulatedRun:
    """One policy's schedule of one plan in the simulator, and what it was run with."""

    policy: str
    plan: pd.DataFrame
    plan_manifest: dict[str, Any]
    jobs: pd.DataFrame  # the simulator's per-job results (submit, start, end, ... in plan time)
    metrics: dict[str, Any]  # the summary in original time, as `harness simulate --json` prints it
    platform: Machine
    settings: dict[str, Any] = field(default_factory=dict)  # model, staging, tick, seeds, tau ...


def check_run_dir(path: Path) -> None:
    """Refuse a path that is a file, or a directory that already holds files."""
    if path.exists() and not path.is_dir():
        raise RunDirectoryError(f"{path}: it is a file; a run directory needs a new directory")
    if path.is_dir() and any(path.iterdir()):
        raise RunDirectoryError(
            f"{path}: it is a directory that holds files; give a new directory (a run directory) "
            "or a .parquet or .csv file (per-job results)"
        )


def with_status(jobs: pd.DataFrame) -> pd.DataFrame:
    """The per-job results with a ``status`` as an emulated run's (a simulated job completes)."""
    out = jobs.copy()
    if "status" not in out:
        ran = out["start"].notna() & out["end"].notna()
        out["status"] = ran.map({True: "completed", False: "missing"})
    return out


def write_simulated_run(
    run_dir: Path, run: SimulatedRun, report_formats: Sequence[str] | None = ("png",)
) -> Path:
    """Write ``run`` into ``run_dir`` (plan, results, metrics, manifest and, unless
    ``report_formats`` is empty, the report with its plots in those figure formats); returns
    ``run_dir``."""
    check_run_dir(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    save_plan(run.plan, run.plan_manifest, run_dir / rundir.PLAN)
    results = with_status(run.jobs)
    atomic_write_parquet(run_dir / rundir.RESULTS, results)
    atomic_write_csv(run_dir / rundir.RESULTS_CSV, results)
    write_json(run_dir / rundir.METRICS, run.metrics)
    trace = run.plan_manifest.get("input", {}).get("path") or run.plan_manifest.get("trace") or ""
    write_json(run_dir / rundir.MANIFEST, {
        "run_id": run_dir.name, "executor": SIMULATOR, "policy": run.policy,
        rundir.TIMES: rundir.TRACE_TIME, "trace": Path(str(trace)).name, "trace_path": str(trace),
        "input_sha256": run.plan_manifest.get("input", {}).get("sha256"), "complete": True,
        "incomplete_reason": "", "finished_at": datetime.now().astimezone().isoformat(timespec="seconds"),
        "harness_version": __version__, "platform": run.platform.as_dict(), "settings": run.settings,
        "plan": run.plan_manifest,
    })  # fmt: skip
    if report_formats:  # None or empty: no report (the experiments' cells)
        from harness.analysis.report import write_report  # matplotlib: only when a report is written

        write_report(run_dir, report_formats)
    return run_dir
