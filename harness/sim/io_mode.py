"""The simulator's ``io-aware`` model: a plan's jobs with Kopański's I/O phases on the platform's links."""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.flow.io_network import IONetwork
from harness.platform import Machine
from harness.sim.io_execution import IOExecution, JobIO, solo_runtime
from harness.workload.io import KopanskiIO
from harness.workload.io.kopanski import COLUMNS as KOPANSKI_COLUMNS


def job_io(plan: pd.DataFrame, seed: int, model: KopanskiIO | None = None) -> JobIO:
    """The plan's I/O columns, drawn by the Kopański model where the plan has none."""
    if not all(c in plan.columns for c in KOPANSKI_COLUMNS):
        plan = (model or KopanskiIO()).apply(plan, seed=seed)
    return JobIO(
        nodes=plan["nodes"].to_numpy(np.int64),
        walltime=plan["walltime"].to_numpy(np.float64),
        compute_s=plan["io_compute_s"].to_numpy(np.float64),
        phases=plan["io_phases"].to_numpy(np.int64),
        comm_mb=plan["io_comm_mb"].to_numpy(np.float64),
        checkpoint_mb=plan["io_checkpoint_mb"].to_numpy(np.float64),
        stage_in_mb=plan["io_stage_in_mb"].to_numpy(np.float64),
        stage_out_mb=plan["io_stage_out_mb"].to_numpy(np.float64),
    )


def io_execution(
    plan: pd.DataFrame, platform: Machine, chassis: tuple[int, ...], *, seed: int
) -> IOExecution:
    return IOExecution(IONetwork.from_platform(platform), job_io(plan, seed), chassis)


def io_columns(ex: IOExecution, start: np.ndarray, allocs: list) -> dict[str, np.ndarray]:
    """Phase times, I/O time and bytes, contention and dilation per row."""
    cols = ex.columns()
    free = np.full(len(start), np.nan)
    memo: dict[tuple, float] = {}
    runtime = ex.end - start
    for row, alloc in enumerate(allocs):
        if alloc is None:
            continue
        if cols["contended_s"][row] == 0:  # every transfer ran at its rate alone: so did the job
            free[row] = runtime[row]
            continue
        # alone, only how many compute nodes share each BB node (and their chassis) matters
        place = tuple(sorted(zip(alloc.bb, (ex.chassis[c] for c in alloc.compute), strict=True)))
        key = (row_key(ex.jobs, row), place)
        if key not in memo:
            memo[key] = solo_runtime(
                ex.net, ex.jobs, ex.chassis, row, alloc.compute, alloc.bb, striped=ex.striped
            )
        free[row] = memo[key]
    cols["contention_free_s"] = free
    with np.errstate(divide="ignore", invalid="ignore"):
        cols["dilation"] = np.where(free > 0, runtime / free, 1.0)
        cols["interference_fraction"] = np.where(runtime > 0, cols["contended_s"] / runtime, 0.0)
    return cols


def row_key(jobs: JobIO, row: int) -> tuple:
    return tuple(float(getattr(jobs, f)[row]) for f in jobs.__dataclass_fields__ if f != "walltime")
