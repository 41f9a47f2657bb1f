"""Background drains of checkpoints in live jobs (the simulator's ``_phase_done``).

When sigsleep finishes a checkpoint (compute nodes -> the BB node of their chassis) it
hands the bytes over to the contention service: it rewrites its flow file
``flows/<job>.<phase>.flow`` as a *drain* (channel ``drain``: that BB node -> PFS) owned by
the service, with four more fields, and goes on with its next phase::

    job=17 slurm_job=42 phase=1 channel=drain mb=4000 time_scale=10 pid=0 nodes=c[001-004]
      start=1700000000.25 at=1700000000.25 rate=0 total=4000

``mb`` is what was left to move at time ``at`` (Unix seconds), moving at ``rate`` MB per
real second since (0: not solved yet). Whenever the service publishes a new rate for a
drain it rewrites the file with the MB left at that moment, so that the file alone says
how far the drain is at any time: a restarted service reads it and goes on, with nothing
kept in memory that a restart could lose. The drain ends at ``at + mb / rate``; the service
then appends one line to ``drains.jsonl`` (Slurm job, MB, start, end, seconds, the time it
would have taken alone) and removes the file. A drain contends for the BB node and the
PFS with every other flow and staging, in the one solve of the service and the staging
command.

The job's stage-out (:mod:`harness.emulation.iolive.staging`) waits until the job has no drain
left, as the simulator's job ends only when its stage-out and every drain are done; that
wait counts as staging out. A job stopped by its limits drops its drains (sigsleep removes
the files), as the simulator's job killed at its walltime loses its drains in flight.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from harness.emulation.iolive.flows import Flow
from harness.model.jsonio import append_jsonl
from harness.model.rundir import DRAIN_RECORDS

if TYPE_CHECKING:  # pandas is for the run's collection only: the staging command starts without it
    import pandas as pd

DRAIN_COLUMNS = ("drains", "drain_mb", "drain_s", "drain_solo_s")


def left_mb(flow: Flow, now: float) -> float:
    """MB the service-owned drain ``flow`` still has to move at ``now``."""
    at = now if flow.at is None else flow.at
    return max(flow.mb - flow.rate * max(now - at, 0.0), 0.0)


def end_time(flow: Flow) -> float:
    """When the drain ends at its current rate (infinity while it has none, or not a drain)."""
    if flow.at is None:
        return float("inf")
    if flow.mb <= 0:
        return flow.at
    return flow.at + flow.mb / flow.rate if flow.rate > 0 else float("inf")


def flow_line(flow: Flow) -> str:
    """The flow file's line of a service-owned drain (as sigsleep writes it, plus its state)."""
    return (
        f"job={flow.job} slurm_job={flow.slurm_job if flow.slurm_job is not None else '-'} "
        f"phase={flow.phase} channel={flow.channel} mb={flow.mb:.9g} time_scale={flow.time_scale:.9g} "
        f"pid=0 nodes={','.join(flow.nodes)} start={flow.start:.6f} at={flow.at:.6f} "
        f"rate={flow.rate:.9g} total={flow.total:.9g}\n"
    )


def rewrite(path: Path, flow: Flow) -> None:
    """The drain's file rewritten atomically (unless it was removed meanwhile)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(flow_line(flow))
    os.chmod(tmp, 0o666)
    if path.exists():
        os.replace(tmp, path)
    else:
        tmp.unlink(missing_ok=True)


def update_drains(flows_dir: Path, flows: list[Flow], rates: Iterable[float], now: float) -> list[Flow]:
    """``flows`` with each drain whose rate changed moved on to ``now`` at its old rate, set to
    its new one and written back to its file (the other flows unchanged)."""
    from dataclasses import replace

    out = []
    for flow, rate in zip(flows, rates, strict=False):
        new = float(f"{rate:.9g}") if np.isfinite(rate) else 0.0
        if flow.at is not None and new != flow.rate:
            flow = replace(flow, mb=float(f"{left_mb(flow, now):.9g}"), at=float(f"{now:.6f}"), rate=new)
            rewrite(flows_dir / f"{flow.key}.flow", flow)
        out.append(flow)
    return out


def finish_drains(directory: Path, flows_dir: Path, flows: list[Flow], now: float,
                  solo: Callable[[Flow], float]) -> list[Flow]:  # fmt: skip
    """Record and remove the drains that are done at ``now``; the flows left."""
    left = []
    for flow in flows:
        end = end_time(flow)
        if end > now:
            left.append(flow)
            continue
        rate = solo(flow)
        record = {
            "job": flow.slurm_job, "trace_job": flow.job, "phase": flow.phase, "mb": flow.total,
            "start": round(flow.start, 6), "end": round(end, 6), "seconds": round(end - flow.start, 6),
            "solo_s": round(flow.total / rate, 6) if rate > 0 else 0.0,
        }  # fmt: skip
        append_jsonl(directory / DRAIN_RECORDS, record)  # before the removal: a restart may log it twice
        (flows_dir / f"{flow.key}.flow").unlink(missing_ok=True)
    return left


def drains_of(flows: Iterable[Flow], slurm_job: int) -> list[Flow]:
    """The drains of one Slurm job among ``flows``."""
    return [f for f in flows if f.at is not None and f.slurm_job == slurm_job]


# -- collect: per-job drain columns ------------------------------------------------------
def drain_records(records: list[dict], t0: float) -> dict[int, list[dict]]:
    """This run's drain records (start at or after ``t0``) by Slurm job, one per phase."""
    by_job: dict[int, dict[int, dict]] = {}
    for r in records:
        if r.get("job") is None or float(r["start"]) < t0:
            continue
        by_job.setdefault(int(r["job"]), {}).setdefault(int(r["phase"]), r)  # a restart's double
    return {j: [phases[p] for p in sorted(phases)] for j, phases in by_job.items()}


def add_drains(results: pd.DataFrame, records: list[dict], t0: float) -> pd.DataFrame:
    """``results`` with :data:`DRAIN_COLUMNS`: drains done, MB, seconds with a drain running
    (their union), and the sum of their times alone (NaN: no drain)."""
    import pandas as pd

    by_job = drain_records(records, t0)
    out = results.copy()
    rows = [by_job.get(int(i), []) if pd.notna(i) else [] for i in out["slurm_job_id"]]
    out["drains"] = [len(r) for r in rows]
    out["drain_mb"] = [sum(float(d["mb"]) for d in r) if r else np.nan for r in rows]
    out["drain_s"] = [union_s([(d["start"], d["end"]) for d in r]) if r else np.nan for r in rows]
    out["drain_solo_s"] = [sum(float(d["solo_s"]) for d in r) if r else np.nan for r in rows]
    return out


def union_s(intervals: Iterable[tuple[float, float]]) -> float:
    """Seconds covered by at least one of ``intervals``."""
    total, reach = 0.0, -np.inf
    for a, b in sorted((float(a), float(b)) for a, b in intervals):
        if b > reach:
            total += b - max(a, reach)
            reach = b
    return total


def outside_s(intervals: Iterable[tuple[float, float]], cover: Iterable[tuple[float, float]]) -> float:
    """Seconds covered by ``intervals`` but not by ``cover``."""
    ivs, cov = list(intervals), list(cover)
    return union_s([*ivs, *cov]) - union_s(cov)


def drain_stats(results: pd.DataFrame) -> dict[str, float | int]:
    """Drains done, jobs with one, and the mean seconds per job with a drain running."""
    if "drains" not in results.columns:
        return {}
    done = results["drains"] > 0
    stats: dict[str, float | int] = {"drains": int(results["drains"].sum()), "jobs_drained": int(done.sum())}
    if done.any():
        stats["mean_drain_s"] = round(float(results.loc[done, "drain_s"].mean()), 6)
        stats["mean_drain_solo_s"] = round(float(results.loc[done, "drain_solo_s"].mean()), 6)
    return stats
