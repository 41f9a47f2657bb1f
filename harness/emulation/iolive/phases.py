"""A job's compute and checkpoint phases under the io-aware model: sigsleep's ``--phases``
from the plan's Kopański columns, and the per-job I/O columns from sigsleep's records.

The plan (``with_io_columns``) gives a job ``p = io_phases`` equal compute phases of
``io_compute_s / p`` (plan seconds; the simulator's ``_compute`` also waits for the N-N
communication, ``io_comm_mb x (nodes - 1)`` over a network card, when that is longer) and a
checkpoint of ``io_checkpoint_mb`` per node between two of them. The replay gives sigsleep::

    --phases compute:120,checkpoint:8000,compute:120 --time-scale 10

(the checkpoint in MB for the whole job), and sigsleep moves it at the rate the contention
service (:mod:`harness.emulation.iolive.contention`) publishes, then hands it over to the service
to drain BB -> PFS in the background (:mod:`harness.emulation.iolive.drains`).

From the records, :func:`add_phases` adds the simulator's per-job columns: ``compute_s``,
``checkpoint_s``, ``io_s`` (staging + every transfer phase: checkpoints, or on the slow
tier the ``io:pfs`` phases, :mod:`harness.emulation.iolive.tiers`; + the time a drain runs
beside none of them), ``io_bytes``, and ``dilation`` = the job's time from the start of its
stage-in to the end of its stage-out (which waits for the drains) over the same without
contention (each transfer at its rate alone, from the same solver; the last drain may
outlast the stage-out).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from harness.emulation.iolive.contention import flow_rates
from harness.emulation.iolive.drains import outside_s
from harness.emulation.iolive.flows import Flow
from harness.flow.io_network import MB
from harness.model.hostlist import expand_hostlist
from harness.model.records import JobRecord
from harness.model.timescale import TimeScale
from harness.platform import Machine

PHASE_COLUMNS = ("compute_s", "checkpoint_s", "io_s", "io_bytes", "solo_s", "dilation")
_PLAN_COLUMNS = ("io_compute_s", "io_phases", "io_comm_mb", "io_checkpoint_mb")
PHASE_KINDS = ("compute", "checkpoint")
PLAN_COLUMN = "io_sigsleep_phases"  # the plan's column with each job's --phases


def with_phase_lists(plan: pd.DataFrame, machine: Machine) -> pd.DataFrame:
    """``plan`` (with Kopański's columns) with :data:`PLAN_COLUMN`."""
    out = plan.copy()
    link = machine.io.compute_link_mbps
    out[PLAN_COLUMN] = [phase_list(job, link) or "" for job in plan.to_dict("records")]
    return out


def has_phases(plan: pd.DataFrame) -> pd.Series:
    """Which rows of ``plan`` run sigsleep with phases (all False without :data:`PLAN_COLUMN`)."""
    if PLAN_COLUMN not in plan.columns:
        return pd.Series(False, index=plan.index)
    return plan[PLAN_COLUMN].fillna("").astype(str) != ""


def phase_list(job: dict, compute_link_mbps: float) -> str | None:
    """sigsleep's ``--phases`` for a plan row with Kopański's columns (``None`` without)."""
    if not all(c in job for c in _PLAN_COLUMNS):
        return None
    p, nodes = int(job["io_phases"]), int(job["nodes"])
    scale = TimeScale.of_speedup(float(job.get("io_time_scale", 1.0)))
    comm = scale.to_slurm(float(job["io_comm_mb"]) * (nodes - 1) / compute_link_mbps)
    each = max(float(job["io_compute_s"]) / p, comm)
    checkpoint = nodes * float(job["io_checkpoint_mb"])
    parts = [f"compute:{each:.6f}"]
    for _ in range(p - 1):
        parts += [f"checkpoint:{checkpoint:.6f}"] if checkpoint > 0 else []
        parts.append(f"compute:{each:.6f}")
    return ",".join(parts)


def _solo_s(record: dict, machine: Machine, stage_out_solo: float = 0.0) -> float:
    """The record's phases with every transfer alone on its links (seconds), then its
    stage-out or, if later, the end of its last checkpoint's drain (alone too)."""
    nodes = tuple(expand_hostlist(record.get("nodelist") or ""))
    total, drained = 0.0, 0.0
    for i, ph in enumerate(record.get("phases") or []):
        if ph["kind"] == "compute":
            total += float(ph["seconds"])
        elif nodes and ph["mb"]:
            flow = Flow(int(record["job_id"]), i, str(ph["channel"]), float(ph["mb"]), nodes,
                        float(record.get("time_scale", 1.0)))  # fmt: skip
            total += float(ph["mb"]) / float(flow_rates([flow], machine)[0])
            if ph["kind"] == "checkpoint":  # then drained BB -> PFS in the background
                drain = float(flow_rates([replace(flow, channel="drain")], machine)[0])
                drained = max(drained, total + float(ph["mb"]) / drain)
    return max(total + stage_out_solo, drained)


def _job_columns(row: pd.Series, rec: JobRecord, machine: Machine, scale: TimeScale,
                 drains: list[dict]) -> dict[str, float]:  # fmt: skip
    phases = rec["phases"]
    sums = {
        k: sum(float(p["running"] or 0.0) for p in phases if p["kind"] == k)
        for k in ("compute", "checkpoint")
    }
    moved = sum(float(p.get("moved_mb") or 0.0) for p in phases if p["kind"] != "compute")
    moved += sum(float(d["mb"]) for d in drains)
    spans = [(float(d["start"]), float(d["end"])) for d in drains]
    transfers = sum(  # in the job's own time: not a background drain
        float(p["running"] or 0.0) for p in phases if p["kind"] != "compute" and p["channel"] != "drain"
    )
    stage = stage_solo = staged_mb = 0.0
    for kind in ("in", "out"):
        if pd.notna(row.get(f"stage_{kind}_s", np.nan)):
            stage += float(row[f"stage_{kind}_s"])
            stage_solo += float(row[f"stage_{kind}_solo_s"])
            staged_mb += float(row[f"stage_{kind}_mb"])
    out_solo = float(row["stage_out_solo_s"]) if pd.notna(row.get("stage_out_s", np.nan)) else 0.0
    solo = _solo_s({**rec, "time_scale": scale.speedup}, machine, out_solo) + stage_solo - out_solo
    return {
        "compute_s": sums["compute"],
        "checkpoint_s": sums["checkpoint"],
        "io_s": transfers + stage + _drain_only_s(rec, spans, out_solo > 0),
        "io_bytes": (moved + staged_mb) * MB,
        "solo_s": solo,
        "dilation": (float(rec["running"]) + stage) / solo if solo > 0 else np.nan,
    }


def _drain_only_s(rec: JobRecord, drains: list[tuple[float, float]], staged_out: bool) -> float:
    """Seconds with a drain of the job running but neither a checkpoint nor its stage-out
    (the simulator's I/O time counts every moment a transfer of the job runs; the wait for
    the drains after the job's end is already in its stage-out)."""
    end = float(rec.get("end") or np.inf) if staged_out else np.inf
    clipped = [(a, min(b, end)) for a, b in drains if min(b, end) > a]
    busy = [(start, float(p.get("end") or start)) for p in rec["phases"]
            if p["kind"] == "checkpoint" and (start := p.get("start")) is not None]  # fmt: skip
    return outside_s(clipped, busy)


def add_phases(
    results: pd.DataFrame, records: list[JobRecord], machine: Machine, scale: TimeScale,
    drains: dict[int, list[dict]] | None = None,
) -> pd.DataFrame:  # fmt: skip
    """``results`` with :data:`PHASE_COLUMNS` (NaN for a job without a phase record);
    ``drains``: each job's drain records by Slurm job id
    (:func:`~harness.emulation.iolive.drains.drain_records`)."""
    by_job = {int(r["job_id"]): r for r in records if r.get("phases")}
    empty = dict.fromkeys(PHASE_COLUMNS, np.nan)
    drains = drains or {}
    rows = [
        _job_columns(row, by_job[int(row["job_id"])], machine, scale,
                     drains.get(int(row["slurm_job_id"]), []) if pd.notna(row.get("slurm_job_id")) else [])
        if int(row["job_id"]) in by_job else empty
        for _, row in results.iterrows()
    ]  # fmt: skip
    out = results.copy()
    for c in PHASE_COLUMNS:
        out[c] = [r[c] for r in rows]
    return out


def phase_stats(results: pd.DataFrame) -> dict[str, float | int]:
    """Jobs with phases, mean compute / checkpoint / I/O time and mean dilation (plan seconds)."""
    if "dilation" not in results.columns:
        return {}
    done = results["dilation"].notna()
    stats: dict[str, float | int] = {"jobs_with_phases": int(done.sum())}
    if done.any():
        for c in ("compute_s", "checkpoint_s", "io_s", "dilation"):
            stats[f"mean_{c}"] = round(float(results.loc[done, c].mean()), 6)
    return stats
