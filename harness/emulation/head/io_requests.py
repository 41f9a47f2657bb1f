"""What a job asks for its I/O in its sbatch command: under the io-aware model the volumes a
tier-choosing agent reads from its comment and the burst-buffer lines of its script; with a
PFS drain rate (Herbein) the bandwidth license of ``slurm-backfill-io-aware-D``."""

from __future__ import annotations

import math

from harness.emulation.iolive.staging import directive_line
from harness.model.timescale import TimeScale
from harness.policies.tiers import io_words, staged_job_io
from harness.slurm.config import BANDWIDTH_LICENSE

PFS_RATE = "pfs_mbps_per_node"  # the plan's per-node drain rate (Herbein): comment word and license


def io_volume_words(job: dict) -> str:
    """Under the io-aware model: the job's volumes (whole job, MB) for a tier-choosing agent
    policy (``harness.emulation.head.agent``): stage-in, stage-out and its checkpoints
    (:func:`~harness.policies.tiers.staged_job_io`, as the simulator's pool twin), and the
    time scale (the comment's walltime is shrunk, the volumes and the rates are not)."""
    if "io_stage_in_mb" not in job:
        return ""
    io = staged_job_io(
        int(job["nodes"]), int(job.get("bb_per_node_mb", 0)), float(job["io_stage_in_mb"]),
        float(job["io_stage_out_mb"]), int(job.get("io_phases", 1)), float(job.get("io_checkpoint_mb", 0.0)),
    )  # fmt: skip
    return f" {io_words(io)} time_scale={float(job.get('io_time_scale', 1.0)):.9g}"


def io_directives(job: dict, pool: str) -> list[str]:
    """Under the io-aware model (a plan with I/O columns): the job script's burst-buffer lines.

    ``#BB_LUA`` asks Slurm's burst_buffer/lua pool for the job's whole BB request (instead
    of the license); ``#HARNESS_IO`` gives the staging command the job's volumes in MB.
    """
    if "io_stage_in_mb" not in job:
        return []
    nodes = int(job["nodes"])
    bb_total = nodes * int(job["bb_per_node_mb"])
    lines = [f"#BB_LUA pool={pool} capacity={bb_total}"] if bb_total > 0 else []
    volumes = (nodes * float(job["io_stage_in_mb"]), nodes * float(job["io_stage_out_mb"]))
    return [
        *lines,
        directive_line(nodes, *volumes, TimeScale.of_speedup(float(job.get("io_time_scale", 1.0)))),
    ]


def pfs_license(job: dict) -> list[str]:
    """Slurm's license for a job's PFS bandwidth (``slurm-backfill-io-aware-D``): its nodes
    times its drain rate, rounded up (never under-reserve); none without a rate."""
    if PFS_RATE not in job:
        return []
    mbps = math.ceil(int(job["nodes"]) * float(job[PFS_RATE]) - 1e-9)
    return [f"{BANDWIDTH_LICENSE}:{mbps}"] if mbps > 0 else []
