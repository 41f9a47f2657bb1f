"""Slurm's view of the burst-buffer life cycle (``burst_buffer/lua``) beside the harness's own
staging records.

Slurm keeps no staging times in its database: ``sacct --json`` has no burst-buffer field,
and a staged job's record holds its submit, eligible, start and end (whole seconds; the end
is the end of the run, before the stage-out) with ``BurstBufferStageIn`` as its last pending
reason. ``scontrol show job --json`` has the request (``burst_buffer``) and the plugin's state
(``burst_buffer_state``: staging-in, staged-in, running, staging-out, complete) while
slurmctld still holds the job (``MinJobAge``). So the check is one of order, per job:

* the stage-in lies between Slurm's eligible time and its start: Slurm starts a job only
  once its data is in (``stage_in_to_start_s``: start minus the end of the transfer);
* the stage-out begins after Slurm's end (``end_to_stage_out_s``);
* where scontrol still has the job, its request's capacity is the plan's nodes x BB MB per
  node (the job holds no ``bb`` license: the main cross-check expects none);

each within Slurm's whole-second stamps plus :data:`AGREEMENT_S`. The run directory keeps
scontrol's burst-buffer view per job as ``slurm/burst_buffer.json``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from harness.cluster.base import ClusterBackend
from harness.emulation.collect.results import AGREEMENT_S
from harness.model import rundir
from harness.model.jsonio import write_json

BB_FIELDS = ("burst_buffer", "burst_buffer_state", "job_state", "state_reason")
CAPACITY_RE = re.compile(r"\bcapacity=(\d+)")


def parse_bb_states(text: str, job_ids: set[int]) -> dict[int, dict[str, Any]]:
    """Job id -> the burst-buffer fields of ``scontrol show job --json`` for ``job_ids``."""
    try:
        jobs = json.loads(text).get("jobs", [])
    except json.JSONDecodeError:
        return {}
    found = {}
    for job in jobs:
        if int(job.get("job_id", 0)) in job_ids:
            found[int(job["job_id"])] = {key: job.get(key) for key in BB_FIELDS}
    return found


def keep_bb_states(backend: ClusterBackend, slurm_dir: Path, job_ids: set[int]) -> dict[int, dict[str, Any]]:
    """scontrol's burst-buffer view of the run's jobs, written to ``slurm/burst_buffer.json``."""
    res = backend.exec(["scontrol", "show", "job", "--json"], timeout=60)
    states = parse_bb_states(res.stdout, job_ids) if res.ok else {}
    slurm_dir.mkdir(parents=True, exist_ok=True)
    write_json(slurm_dir / rundir.BB_STATES, {"jobs": {str(k): v for k, v in sorted(states.items())}})
    return states


def staging_check(
    results: pd.DataFrame, slurm_jobs: dict[int, dict], t0: float, bb_states: dict[int, dict] | None = None
) -> dict[str, Any]:
    """The staging records of ``results`` (see collect_io) against Slurm's eligible/start/end
    and, where scontrol still had the job, its burst-buffer request."""
    out: dict[str, Any] = {"compared_in": 0, "compared_out": 0, "disagreements": []}
    gaps: dict[str, list[float]] = {"stage_in_to_start_s": [], "end_to_stage_out_s": []}
    for row in results.itertuples(index=False):
        slurm = slurm_jobs.get(int(row.slurm_job_id)) if pd.notna(row.slurm_job_id) else None
        if slurm is None or slurm.get("start") is None:
            continue  # counted by the main cross-check
        bb = (bb_states or {}).get(int(row.slurm_job_id))
        found = _stage_in(row, slurm, t0, out, gaps) + _stage_out(row, slurm, t0, out, gaps)
        if bb is not None and pd.notna(row.stage_in_begin):
            found += _request(row, bb)
        out["disagreements"] += [{"job_id": int(row.job_id), **f} for f in found]
    for name, values in gaps.items():
        out[f"max_{name}"] = round(max(values), 6) if values else None
        out[f"min_{name}"] = round(min(values), 6) if values else None
    if bb_states is not None:
        out["slurm_bb_states"] = dict(Counter(str(s.get("burst_buffer_state")) for s in bb_states.values()))
    out["ok"] = not out["disagreements"]
    return out


def _request(row: Any, bb: dict) -> list[dict]:
    """The job's ``#BB_LUA`` request holds the plan's nodes x BB MB per node."""
    match = CAPACITY_RE.search(str(bb.get("burst_buffer") or ""))
    expected = int(row.nodes) * int(row.bb_per_node_mb)
    if match and int(match.group(1)) == expected:
        return []
    return [{"stage": "request", "plan_mb": expected, "slurm_burst_buffer": bb.get("burst_buffer")}]


def _stage_in(row: Any, slurm: dict, t0: float, out: dict, gaps: dict[str, list[float]]) -> list[dict]:
    """Between Slurm's eligible time and its start (whole seconds: the start may read up to 1 s early)."""
    if pd.isna(row.stage_in_begin) or slurm.get("eligible") is None:
        return []
    out["compared_in"] += 1
    begin, end = row.stage_in_begin + t0, row.stage_in_begin + row.stage_in_s + t0
    gaps["stage_in_to_start_s"].append(slurm["start"] - end)
    if begin >= slurm["eligible"] - AGREEMENT_S and end <= slurm["start"] + 1.0 + AGREEMENT_S:
        return []
    return [{"stage": "in", "begin": round(begin, 3), "end": round(end, 3),
             "slurm_eligible": slurm["eligible"], "slurm_start": slurm["start"]}]  # fmt: skip


def _stage_out(row: Any, slurm: dict, t0: float, out: dict, gaps: dict[str, list[float]]) -> list[dict]:
    """After Slurm's end (the end of the run)."""
    if pd.isna(row.stage_out_begin) or slurm.get("end") is None:
        return []
    out["compared_out"] += 1
    begin = row.stage_out_begin + t0
    gaps["end_to_stage_out_s"].append(begin - slurm["end"])
    if begin >= slurm["end"] - AGREEMENT_S:
        return []
    return [{"stage": "out", "begin": round(begin, 3), "slurm_end": slurm["end"]}]
