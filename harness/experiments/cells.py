"""What one cell does: prepare its plan, schedule it, measure it, store it in its folder.

``run_cell`` is the function every executor runs (in a local process or in a Slurm job).
It never raises: a failure comes back as a :class:`CellResult` with the error, and the
traceback stays in the cell's folder. Its folder ``cells/<key>/`` holds

* ``jobs.parquet``: the per-job results (the schedule, in the trace's time; an emulated cell
  of an older version kept Slurm's, and its ``time_scale`` turns them into the trace's);
* ``run/``: an emulated cell's run directory (``harness.experiments.emulate_cell``);
* ``result.json``: the metrics in original time, written last (its presence = done);
* ``error.txt``: the traceback of a failed attempt.
"""

from __future__ import annotations

import json
import os
import socket
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness import __version__
from harness.experiments.grid import Cell
from harness.model.atomic import atomic_write_parquet, atomic_write_text
from harness.model.expdir import CELLS_DIR, ERROR_FILE, JOBS_FILE, RESULT_FILE
from harness.model.io_models import ALLOC_ONLY
from harness.model.jsonio import to_json


@dataclass
class CellResult:
    key: str
    ok: bool
    metrics: dict[str, Any] = field(default_factory=dict)  # summary in the trace's time
    time_scale: float = 1.0  # > 1 only in older emulated cells: their job table is in Slurm's seconds
    seconds: float = 0.0  # wall time of the cell
    host: str = ""
    slurm_job: str = ""  # the Slurm job (array task) that ran the cell, if any
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def cell_dir(exp_dir: Path | str, key: str) -> Path:
    return Path(exp_dir) / CELLS_DIR / key


def run_cell(cell: Cell, exp_dir: str) -> CellResult:
    """Run one cell and store its outputs under ``exp_dir``; never raises."""
    began = time.perf_counter()
    folder = cell_dir(exp_dir, cell.key)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        if cell.params["mode"] == "emulate":  # on Slurm, never silently in the simulator
            from harness.experiments.emulate_cell import emulate

            jobs, metrics = emulate(cell, folder)
        else:
            jobs, metrics = _simulate(cell)
    except Exception as exc:  # a cell's failure is data for the runner, not a crash
        atomic_write_text(folder / ERROR_FILE, traceback.format_exc())
        return CellResult(cell.key, False, seconds=_since(began), host=socket.gethostname(),
                          error=f"{type(exc).__name__}: {exc}")  # fmt: skip
    atomic_write_parquet(folder / JOBS_FILE, jobs)
    result = CellResult(cell.key, True, metrics, 1.0, _since(began), socket.gethostname(), _slurm_job())
    record = {**result.as_dict(), "params": cell.params, "harness_version": __version__}
    atomic_write_text(folder / RESULT_FILE, to_json(record))
    return result


def read_cell_result(exp_dir: Path | str, key: str) -> CellResult | None:
    """The stored result of a finished cell, None when it has not finished."""
    path = cell_dir(exp_dir, key) / RESULT_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    fields = CellResult.__dataclass_fields__
    return CellResult(**{k: v for k, v in data.items() if k in fields})


def _simulate(cell: Cell) -> tuple[pd.DataFrame, dict[str, Any]]:
    from harness.analysis.metrics import summary
    from harness.platform import load_platform
    from harness.policies.registry import get_policy
    from harness.sim.checks import check_schedule
    from harness.sim.engine import simulate

    p = cell.params
    platform = load_platform(cell.inputs["platform"])
    plan = cell_plan(cell, platform)
    if p.get("priority", "none") != "none" or p.get("preempt", "none") != "none":
        return _simulate_tiers(cell, plan, platform)
    policy = get_policy(p["policy"], seed=p["policy_seed"], time_limit_s=p["time_limit_s"])
    tick, launch_delay = p.get("twin", (0.0, 0.0))
    model = p.get("model", ALLOC_ONLY)
    staging, stage_in = p.get("staging", "inside"), p.get("stage_in", "policy")
    result = simulate(plan, policy, platform, model=model, io_seed=p["bb_seed"], tick=tick,
                      launch_delay=launch_delay, staging=staging, stage_in=stage_in)  # fmt: skip
    problems = check_schedule(result.jobs, platform, pool=stage_in == "slurm")
    if problems:
        raise RuntimeError(f"invalid schedule: {'; '.join(problems[:3])}")
    return result.jobs, summary(result.jobs, platform, tau=p["tau"])


def _simulate_tiers(cell: Cell, plan: pd.DataFrame, platform: Any) -> tuple[pd.DataFrame, dict]:
    """A priority model (and suspend/resume) in the twin of Slurm's tiers (harness.sim.preemption)."""
    from harness.analysis.metrics import summary
    from harness.sim.preemption import simulate_preemption
    from harness.workload.priority import assign, parse_priority

    p = cell.params
    model, preempt = parse_priority(p.get("priority", "none")), p.get("preempt", "none") == "suspend"
    if p["policy"] != "backfill-1" or (preempt and not model.enabled) or "model" in p:
        raise ValueError("priority/preempt cells: policy backfill-1 (the twin of slurm-backfill-1), "
                         "model alloc-only and, with preempt = suspend, a priority model other "
                         "than none")  # fmt: skip
    result = simulate_preemption(assign(plan, model, seed=p["bb_seed"]), platform, preempt=preempt)
    metrics = summary(result.jobs, platform, tau=p["tau"])
    metrics["suspensions"] = result.n_suspensions
    return result.jobs, metrics


def cell_plan(cell: Cell, platform: Any) -> pd.DataFrame:
    from harness.workload.plan import Sampling, prepare

    p = cell.params
    sampling = p["sampling"]
    plan, _ = prepare(
        cell.inputs["trace_path"],
        platform=platform,
        seed=p["bb_seed"],
        bb_model=p["bb_model"],
        bb_constant_mb=p["bb_constant_mb"],
        first_n=p["first_n"],
        window=tuple(p["window"]) if p["window"] else None,
        period=(p["period"] - 1, p["periods"]) if p["periods"] else None,
        sampling=Sampling(**sampling) if sampling else None,
        shuffle=p["shuffle"],
        shuffle_seed=p["shuffle_seed"],
        procs_per_node=p.get("procs_per_node"),
    )
    return with_drift(plan, p.get("drift", 0.0))


def with_drift(plan: pd.DataFrame, drift: float) -> pd.DataFrame:
    """Barberato's drift correction (Section 4.2.4), as the replay applies it: the i-th
    submission (0-based, in submission order) comes ``drift * i`` seconds later."""
    if not drift:
        return plan
    out = plan.sort_values("submit", kind="stable").reset_index(drop=True)
    out["submit"] = out["submit"] + drift * np.arange(len(out))
    return out


def _slurm_job() -> str:
    array = os.environ.get("SLURM_ARRAY_JOB_ID")
    if array:
        return f"{array}_{os.environ.get('SLURM_ARRAY_TASK_ID', '')}"
    return os.environ.get("SLURM_JOB_ID", "")


def _since(began: float) -> float:
    return time.perf_counter() - began
