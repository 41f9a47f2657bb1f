"""The job-spec format: what the replay tells the ordering agent about a job, in its Slurm
comment (``--comment=trace_id=7 walltime=36.500000 bb_per_node=1200 pfs_per_node=18.000000``).

Slurm keeps time limits in whole minutes and licenses only as a total per job, so the
exact walltime and the per-node burst-buffer request travel in the comment, and so does
the PFS bandwidth each node of the job drains (Herbein's I/O-aware policies; Slurm has no
notion of it, and no word when the plan has none). Encoded by the replay, decoded by the
agent: both sides use this module only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeVar

N = TypeVar("N", int, float)


@dataclass(frozen=True)
class JobSpec:
    trace_id: int | None  # the job's number in the trace
    walltime_s: float | None  # None: not a job of the replay (the agent hands it to Slurm)
    bb_per_node_mb: int
    pfs_mbps_per_node: float | None = None  # MB/s each node drains to the PFS; None: not given

    @property
    def managed(self) -> bool:
        """Whether the replay submitted this job (only those carry their exact walltime)."""
        return self.walltime_s is not None


def job_name(trace_id: int) -> str:
    """The Slurm job name of a trace's job (sbatch --job-name): how the replay finds it again."""
    return f"t{int(trace_id)}"


def slurm_limit_minutes(walltime_s: float) -> int:
    """Slurm limits are whole minutes: round up so sigsleep's own exact limit fires first."""
    return max(1, math.ceil(walltime_s / 60.0))


def slurm_time_limit(walltime_s: float) -> str:
    return str(slurm_limit_minutes(walltime_s))


def encode_comment(
    trace_id: int, walltime_s: float, bb_per_node_mb: int, pfs_mbps_per_node: float | None = None
) -> str:
    words = f"trace_id={int(trace_id)} walltime={float(walltime_s):.6f} bb_per_node={int(bb_per_node_mb)}"
    return words if pfs_mbps_per_node is None else f"{words} pfs_per_node={float(pfs_mbps_per_node):.6f}"


def parse_comment(text: str) -> dict[str, str]:
    """``trace_id=7 walltime=36.0`` -> dict; other words are ignored."""
    return dict(part.split("=", 1) for part in text.split() if "=" in part)


def decode_comment(fields: dict[str, str]) -> JobSpec:
    """The job spec of a parsed comment; missing or unreadable values are None (0 MB of BB)."""
    return JobSpec(
        trace_id=_number(fields.get("trace_id"), int),
        walltime_s=_number(fields.get("walltime"), float),
        bb_per_node_mb=_number(fields.get("bb_per_node"), int) or 0,
        pfs_mbps_per_node=_number(fields.get("pfs_per_node"), float),
    )


def _number(text: str | None, kind: type[N]) -> N | None:
    try:
        return kind(text) if text is not None else None
    except ValueError:
        return None
