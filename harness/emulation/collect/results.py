"""Turn what a replay left behind into the per-job results table, and cross-check it.

The jobs' own sigsleep records are the source of truth (sub-second times); Slurm's
jobcomp records (whole seconds) are joined per job to check them. Times in the table
are seconds since the replay's t0, in shrunk time, with the simulator's columns.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from harness.emulation.head.faultlog import job_outcome
from harness.model.columns import EMULATION_COLUMNS
from harness.model.records import JobRecord, Submission

# Slurm keeps whole seconds: its start can be up to 1 s before the job's own clock read,
# plus the launch latency; anything beyond this is a real disagreement.
AGREEMENT_S = 1.0
SLURM_STAMP_S = 1.0  # Slurm keeps whole seconds: its stamp is up to this much before the instant


@dataclass
class CrossCheck:
    compared: int = 0
    missing_in_slurm: list[int] = field(default_factory=list)  # trace ids
    missing_in_log: list[int] = field(default_factory=list)
    disagreements: list[dict] = field(default_factory=list)
    max_start_diff: float = 0.0
    max_end_diff: float = 0.0
    max_submit_diff: float = 0.0
    mismatches: list[dict] = field(default_factory=list)  # node list, licenses, submit time
    source: str = "jobcomp"  # where Slurm's records came from: sacct or jobcomp
    # seconds of the run's clock: on a virtual clock S times faster, a real delay of launch
    # (slurmctld to sigsleep) is S times longer
    tolerance_s: float = AGREEMENT_S

    @property
    def ok(self) -> bool:
        return not (self.missing_in_slurm or self.missing_in_log or self.disagreements or self.mismatches)

    @property
    def accepted_s(self) -> tuple[float, float]:
        """The differences accepted, sigsleep minus Slurm: the tolerance each way, and one more
        second above, since Slurm truncates its stamps to the second (a tolerance of 1 s
        accepts -1..+2 s)."""
        return (-self.tolerance_s, self.tolerance_s + SLURM_STAMP_S)

    def describe_tolerance(self) -> str:
        """``-1..+2 s (sigsleep - Slurm)``: what the check accepts, as it accepts it."""
        low, high = self.accepted_s
        return f"{low:g}..+{high:g} s (sigsleep - Slurm; Slurm truncates to the second)"

    def as_dict(self) -> dict:
        return {
            "ok": self.ok,
            "source": self.source,
            "compared": self.compared,
            "missing_in_slurm": self.missing_in_slurm,
            "missing_in_log": self.missing_in_log,
            "disagreements": self.disagreements[:50],
            "n_disagreements": len(self.disagreements),
            "max_start_diff_s": round(self.max_start_diff, 6),
            "max_end_diff_s": round(self.max_end_diff, 6),
            "max_submit_diff_s": round(self.max_submit_diff, 6),
            "mismatches": self.mismatches[:50],
            "n_mismatches": len(self.mismatches),
            "tolerance_s": self.tolerance_s,
            "accepted_s": list(self.accepted_s),
            "accepted": self.describe_tolerance(),
        }


def build_results(
    plan: pd.DataFrame, submissions: list[Submission], records: list[JobRecord], t0: float,
    slurm_jobs: dict[int, dict] | None = None,
) -> pd.DataFrame:  # fmt: skip
    """One row per plan job: submitted and logged jobs with their times; a submitted job without
    its own record gets the state Slurm ended it in (``node_fail``, ``cancelled``, ...), the rest
    ``missing`` (or ``rejected`` by sbatch)."""
    subs = {s["job_id"]: s for s in submissions}
    logs = {r["job_id"]: r for r in records}
    rows = [
        _row(job, subs.get(int(job["job_id"])), logs.get(int(job["job_id"])), t0, slurm_jobs or {})
        for job in plan.to_dict("records")
    ]
    df = pd.DataFrame(rows, columns=list(EMULATION_COLUMNS))
    return df.astype({"slurm_job_id": "Int64", "nodes": "int64", "bb_per_node_mb": "int64"})


def _ended_by_slurm(sub: Submission | None, slurm_jobs: dict[int, dict]) -> str:
    """The state Slurm ended a submitted job in, lower case ('' if unknown)."""
    slurm_id = sub.get("slurm_job_id") if sub is not None else None
    if slurm_id is None:
        return ""
    state = str(slurm_jobs.get(int(slurm_id), {}).get("state", "")).split()[0:1]
    name = state[0].lower() if state else ""
    return "timeout_no_record" if name == "timeout" else name


def _row(
    job: dict, sub: Submission | None, rec: JobRecord | None, t0: float, slurm_jobs: dict[int, dict]
) -> dict:
    row = {
        "job_id": int(job["job_id"]),
        "walltime": float(job["walltime"]),
        "nodes": int(job["nodes"]),
        "bb_per_node_mb": int(job["bb_per_node_mb"]),
        "bb_nodes": "",
        "submit_intended": float(job["submit"]),
        "slurm_job_id": sub.get("slurm_job_id") if sub else None,
        "lag": sub.get("lag") if sub else np.nan,
    }
    if sub is None or rec is None or sub.get("slurm_job_id") is None:
        status = "missing" if sub is None or sub.get("slurm_job_id") is not None else "rejected"
        status = _ended_by_slurm(sub, slurm_jobs) or status
        return {
            **row,
            "submit": np.nan,
            "start": np.nan,
            "end": np.nan,
            "runtime": np.nan,
            "status": status,
            "nodelist": "",
            "suspended": np.nan,
        }
    return {
        **row,
        "slurm_job_id": _ran_as(rec, row["slurm_job_id"]),
        "submit": _since(sub.get("actual"), t0),
        "start": rec["start"] - t0,
        "end": rec["end"] - t0,
        "runtime": rec["running"],
        "status": rec["reason"],
        "nodelist": rec.get("nodelist") or "",
        "suspended": rec.get("suspended", 0.0),
    }


def _since(instant: float | None, t0: float) -> float:
    return instant - t0 if instant is not None else np.nan


def _ran_as(rec: JobRecord, submitted: Any) -> Any:
    """The Slurm job that ran: the job's own record says (the agent may have submitted it
    again, on the slow tier: harness.emulation.iolive.tiers), else the replay's submission."""
    try:
        return int(rec.get("slurm_job_id") or submitted)
    except (TypeError, ValueError):
        return submitted


def agent_copies(submissions: list[Submission], records: list[JobRecord]) -> list[Submission]:
    """``{"slurm_job_id": N}`` for each job that ran under another id than the replay's
    submission (the agent submitted it again on the slow tier), to fetch Slurm's records."""
    submitted = {s.get("slurm_job_id") for s in submissions}
    ids = {_ran_as(r, None) for r in records} - submitted - {None}
    return [{"slurm_job_id": i} for i in sorted(ids)]


def finished(results: pd.DataFrame) -> pd.DataFrame:
    """The rows that ran (the metrics' input)."""
    return results[results["start"].notna() & results["end"].notna()].reset_index(drop=True)


def cross_check(
    results: pd.DataFrame, slurm_jobs: dict[int, dict], t0: float, source: str = "jobcomp",
    bb_license: str = "bb", staged: bool = False, tolerance_s: float = AGREEMENT_S,
    submitted_ahead: Collection[int] = (),
) -> CrossCheck:  # fmt: skip
    """Compare every job's sigsleep start/end with Slurm's (sacct or jobcomp) start/end; where
    Slurm's record has them, also its submit time, node list and ``bb_license`` count (none
    when ``staged``: burst_buffer/lua holds the pool, see harness/emulation/collect/bb_check.py)."""
    check = CrossCheck(source=source, tolerance_s=tolerance_s)
    expect_bb = not staged
    for row in results.itertuples(index=False):
        ended_early = job_outcome(str(row.status)) in ("failed-by-fault", "cancelled")
        if pd.isna(row.slurm_job_id) or (ended_early and pd.isna(row.start)):
            continue  # no record of its own to compare: accounted for in the faults section
        slurm = slurm_jobs.get(int(row.slurm_job_id))
        if slurm is None or slurm["start"] is None:
            check.missing_in_slurm.append(int(row.job_id))
            continue
        if pd.isna(row.start):
            check.missing_in_log.append(int(row.job_id))
            continue
        check.compared += 1
        d_start = (row.start + t0) - slurm["start"]
        d_end = (row.end + t0) - slurm["end"]
        ahead = int(row.job_id) in submitted_ahead
        check.mismatches += _field_mismatches(row, slurm, t0, check, bb_license if expect_bb else None, ahead)
        check.max_start_diff = max(check.max_start_diff, abs(d_start))
        check.max_end_diff = max(check.max_end_diff, abs(d_end))
        low, high = check.accepted_s  # sigsleep may read up to 1 s later than Slurm's truncated stamp
        if not (low <= d_start <= high and low <= d_end <= high):
            check.disagreements.append(
                {
                    "job_id": int(row.job_id),
                    "slurm_job_id": int(row.slurm_job_id),
                    "start_diff_s": round(d_start, 3),
                    "end_diff_s": round(d_end, 3),
                }
            )
    return check


def _field_mismatches(
    row: Any, slurm: dict, t0: float, check: CrossCheck, bb_license: str | None, ahead: bool = False
) -> list[dict]:
    """Submit time (the replay's clock vs Slurm's whole second; ``ahead``: the job was submitted
    ahead with ``sbatch --begin`` and entered the queue at Slurm's eligible time), node list,
    BB license count (``bb_license`` None: the job should hold none)."""
    found = []
    entered = slurm.get("eligible") if ahead else slurm.get("submit")
    if entered is not None and not pd.isna(row.submit):
        d_submit = (row.submit + t0) - entered
        check.max_submit_diff = max(check.max_submit_diff, abs(d_submit))
        low, high = check.accepted_s
        if not low <= d_submit <= high:
            found.append({"field": "submit", "sigsleep": round(row.submit + t0, 3), "slurm": entered})
    if slurm.get("nodelist") and row.nodelist and slurm["nodelist"] != row.nodelist:
        found.append({"field": "nodelist", "sigsleep": row.nodelist, "slurm": slurm["nodelist"]})
    if "licenses" in slurm:
        expected = int(row.nodes) * int(row.bb_per_node_mb) if bb_license else 0
        if license_count(slurm["licenses"], bb_license or "bb") != expected:
            found.append({"field": "licenses", "plan": expected, "slurm": slurm["licenses"]})
    return [{"job_id": int(row.job_id), **f} for f in found]


def license_count(text: str, name: str | None = None) -> int:
    """The count of license ``name`` (None: of all) in a Slurm license string: ``bb:4800`` -> 4800,
    ``""`` -> 0; ``bb:4800,pfsbw:72`` -> 4800 for ``bb``."""
    items = [item.rsplit(":", 1) if ":" in item else [item, "1"] for item in text.split(",") if item]
    return sum(int(count) for lic, count in items if name is None or lic == name)


def lag_stats(submissions: list[Submission]) -> dict[str, float]:
    timed = [s for s in submissions if s.get("slurm_job_id") is not None and s.get("lag") is not None]
    lags = np.array([s["lag"] for s in timed], dtype=float)
    if lags.size == 0:
        return {"submitted": 0}
    return {
        "submitted": int(lags.size),
        "rejected": sum(1 for s in submissions if s.get("slurm_job_id") is None),
        "lag_p50_s": float(np.percentile(lags, 50)),
        "lag_p99_s": float(np.percentile(lags, 99)),
        "lag_max_s": float(lags.max()),
        "order_inversions": order_inversions(submissions),
    }


def order_inversions(submissions: list[Submission]) -> int:
    """Adjacent jobs (in plan order) that Slurm numbered the other way round."""
    ordered = sorted(submissions, key=lambda s: s["index"])
    ids = [slurm_id for s in ordered if (slurm_id := s.get("slurm_job_id")) is not None]
    return sum(1 for a, b in itertools.pairwise(ids) if a > b)


def decision_stats(decisions: list[dict]) -> dict[str, float]:
    """Policy calls of the agent and their latency (what a live scheduler would wait for);
    ``errors``: decisions it could not carry out; ``failed_looks``: looks at Slurm that failed
    (slurmctld busy: the agent looks again at its next poll, nothing is lost)."""
    latencies = np.array([d["latency_s"] for d in decisions if "latency_s" in d], dtype=float)
    errors = sum(1 for d in decisions if "error" in d)
    failed_looks = sum(1 for d in decisions if "look_failed" in d)
    if latencies.size == 0:
        return {"decisions": 0, "errors": errors, "failed_looks": failed_looks}
    return {
        "decisions": int(latencies.size),
        "errors": errors,
        "failed_looks": failed_looks,
        "started": int(sum(len(d.get("started", [])) for d in decisions)),
        "latency_p50_s": float(np.percentile(latencies, 50)),
        "latency_p99_s": float(np.percentile(latencies, 99)),
        "latency_max_s": float(latencies.max()),
    }
