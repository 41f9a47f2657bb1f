"""Tier choice in the live Slurm: a held job the policy puts on the slow tier (LPS).

Under ``burst_buffer/lua`` a job's burst-buffer request is its script's ``#BB_LUA`` line,
fixed at submission: ``scontrol update BurstBuffer=`` on a held job is refused ("Requested
operation not supported on this system", measured on Slurm 24.11, docs/io-live.md). So the
agent moves a job to LPS by submitting it again: its script (``scontrol write
batch_script``) without the ``#BB_LUA`` line, the same sbatch options, held, with
``bb_per_node=0 tier=lps`` in its comment; then it cancels the original. The new job
holds neither burst buffer nor license, and the policy releases it at its next call.

With no burst buffer, the copy's I/O all goes to the PFS on the ``pfs`` channel (its compute
nodes -> PFS, :mod:`harness.emulation.iolive.contention`): its checkpoints, and the volumes Slurm
would have staged (``#HARNESS_IO``): the stage-in is read at the start of its phase list,
the stage-out written at its end, inside its run (Lackner's LPS: no staging)::

    --phases compute:120,checkpoint:8000,compute:120        (HPS; staged in and out by Slurm)
    --phases io:pfs:4800,compute:120,io:pfs:8000,compute:120,io:pfs:4800   (LPS)
"""

from __future__ import annotations

import re

import pandas as pd

from harness.emulation.iolive.staging import DIRECTIVE, parse_directive
from harness.model.records import Submission
from harness.policies.tiers import HPS, LPS
from harness.slurm.client import SlurmClient

SLOW_CHANNEL = "pfs"
_WRAP_HEADER = ("#!/bin/sh", "# This script was created by sbatch --wrap.")
_PHASES = re.compile(r"(--phases\s+)(\S+)")


def slow_tier_script(script: str, job_id: int | None = None) -> str:
    """The body to ``--wrap`` for the LPS copy: no ``#BB_LUA``; the ``#HARNESS_IO`` stage-in
    read from the PFS first, checkpoints to the PFS, the stage-out written to it last."""
    lines = script.splitlines()
    while lines and (lines[0] in _WRAP_HEADER or not lines[0].strip()):
        lines.pop(0)  # sbatch --wrap writes its header again
    body = "\n".join(line for line in lines if not line.startswith("#BB_LUA"))
    staged = {"stage_in_mb": 0.0, "stage_out_mb": 0.0}
    if any(line.startswith(DIRECTIVE + " ") for line in lines):
        staged = parse_directive(script, f"job {job_id}'s script" if job_id is not None else "<script>")

    def phases(m: re.Match[str]) -> str:
        parts = [f"io:{SLOW_CHANNEL}:{p.split(':', 1)[1]}" if p.startswith("checkpoint:") else p
                 for p in m[2].split(",")]  # fmt: skip
        read, write = (_pfs(staged[k]) for k in ("stage_in_mb", "stage_out_mb"))
        return m[1] + ",".join([*read, *parts, *write])

    return _PHASES.sub(phases, body)


def _pfs(mb: float) -> list[str]:
    """A transfer of ``mb`` on the PFS channel (none for 0 MB), as ``job_phases`` writes MB."""
    return [f"io:{SLOW_CHANNEL}:{mb:.6f}"] if mb > 0 else []


def slow_tier_comment(comment: str) -> str:
    """The comment with no BB request and the tier named (other words kept in order)."""
    words = [w for w in comment.split() if not w.startswith(("bb_per_node=", "tier="))]
    return " ".join([*words, "bb_per_node=0", f"tier={LPS}"])


def sbatch_args(fields: dict[str, str], comment: str, bb_license: str = "bb") -> list[str]:
    """The options of the replay's sbatch that Slurm keeps (``scontrol show job``), held,
    without the ``bb_license``."""
    args = [
        "--hold", f"--job-name={fields['JobName']}", f"--partition={fields['Partition']}",
        f"--nodes={fields['NumNodes'].split('-')[0]}", f"--time={fields['TimeLimit']}",
        f"--chdir={fields['WorkDir']}", f"--output={fields.get('StdOut', '/dev/null')}", "--no-requeue",
        f"--comment={comment}",
    ]  # fmt: skip
    held = fields.get("Licenses", "(null)")
    kept = [x for x in held.split(",") if x not in ("(null)", "") and x.split(":")[0] != bb_license]
    return [*args, f"--licenses={','.join(kept)}"] if kept else args


def move_to_slow_tier(client: SlurmClient, job_id: int, comment: str, bb_license: str = "bb") -> int:
    """Submit ``job_id`` again on LPS (held) and cancel it; the new job's id."""
    script = slow_tier_script(client.batch_script(job_id), job_id)
    args = sbatch_args(client.job_fields(job_id), slow_tier_comment(comment), bb_license)
    new = client.submit_as_user([*args, f"--wrap={script}"])
    client.cancel(job_id)
    return new


def add_tiers(results: pd.DataFrame, submissions: list[Submission]) -> pd.DataFrame:
    """``results`` with each job's storage tier as it ran, as the simulator's pool twin gives
    it: ``lps`` for a job the agent submitted again (it ran under another Slurm id than the
    replay's submission) and then held no BB (``bb_per_node_mb`` 0), ``hps`` for a job with
    a BB request that ran as submitted, empty for the rest."""
    submitted = {int(s["job_id"]): s.get("slurm_job_id") for s in submissions}
    own = results["job_id"].map(lambda j: submitted.get(int(j))).astype("float64")
    ran = results["start"].notna() & results["slurm_job_id"].notna()
    copy = ran & (results["slurm_job_id"].astype("float64") != own)
    out = results.copy()
    out["tier"] = ""
    out.loc[ran & ~copy & (out["bb_per_node_mb"] > 0), "tier"] = HPS
    out.loc[copy, "tier"] = LPS
    out.loc[copy, "bb_per_node_mb"] = 0
    return out
