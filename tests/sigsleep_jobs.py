"""sigsleep jobs with phase lists on a test cluster, and the records they log."""

from __future__ import annotations

import json
import time

from harness.cluster.containers.backend import SUBMIT_USER, DockerCluster


def submit_phases(
    cluster: DockerCluster,
    job_id: int,
    node: str,
    phases: str,
    log: str,
    *,
    head: str = "",
    held: bool = False,
) -> int:
    """One node's job: ``sigsleep --job-id JOB_ID --phases PHASES`` logging to ``/shared/LOG``,
    its script starting with ``head`` (e.g. ``#BB_LUA`` lines); returns Slurm's job id."""
    wrap = f"{head}exec sigsleep --job-id {job_id} --log /shared/{log} --phases {phases}"
    res = cluster.exec(
        ["sbatch", "--parsable", "--nodes=1", f"--nodelist={node}", "--time=2", "--chdir=/shared/jobs",
         "--output=/dev/null", *(["--hold"] if held else []), f"--wrap={wrap}"], user=SUBMIT_USER, timeout=60,
    )  # fmt: skip
    assert res.ok, res.stderr
    return int(res.stdout.strip())


def phase_records(cluster: DockerCluster, log: str, jobs: set[int], timeout: float) -> dict[int, dict]:
    """sigsleep's records of ``jobs`` (trace ids) in ``LOG``, waiting until all are there."""
    deadline = time.monotonic() + timeout
    found: dict[int, dict] = {}
    while time.monotonic() < deadline and len(found) < len(jobs):
        time.sleep(0.5)
        text = cluster.read_text(log) or ""
        found = {r["job_id"]: r for r in map(json.loads, text.splitlines()) if r["job_id"] in jobs}
    return found
