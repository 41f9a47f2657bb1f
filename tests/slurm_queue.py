"""Reading Slurm's queue in integration tests: a failed ``squeue`` (slurmctld busy on a loaded
host) is asked again, never read as an empty queue, and a job Slurm no longer knows is gone."""

from __future__ import annotations

import time

from harness.cluster.base import Cluster

GONE = "Invalid job id specified"  # squeue -j for a job purged after MinJobAge


def squeue_lines(cluster: Cluster, *args: str, patience: float = 60) -> list[str]:
    """``squeue --noheader ARGS``'s lines, asking again for up to ``patience`` s while it fails."""
    deadline = time.monotonic() + patience
    while True:
        res = cluster.exec(["squeue", "--noheader", *args], timeout=30)
        if res.ok:
            return [line for line in res.stdout.splitlines() if line.strip()]
        if GONE in res.stderr:
            return []
        if time.monotonic() > deadline:
            raise AssertionError(f"squeue {' '.join(args)} kept failing: {res.stderr.strip()}")
        time.sleep(0.5)
