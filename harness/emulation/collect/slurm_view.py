"""Slurm's records of a run's jobs: from ``sacct --json`` when the platform has accounting
(``[deployment.accounting] enabled = true``), else from the ``jobcomp/filetxt`` log.

Both land in the run directory as JSON: ``slurm/sacct.json`` (sacct's own output, with
accounting) and ``slurm/jobs.json`` (one record per Slurm job id, whichever the source).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.cluster.base import ClusterBackend
from harness.model import rundir
from harness.model.jsonio import write_json
from harness.model.records import Submission
from harness.slurm.jobcomp import keep_jobs, read_jobcomp
from harness.slurm.sacct import fetch_sacct

SACCT_WAIT_S = 30.0  # for the last job records on their way from slurmctld to slurmdbd


def slurm_records(
    backend: ClusterBackend, slurm_dir: Path, submissions: list[Submission]
) -> tuple[dict[int, dict[str, Any]], str]:
    """(Slurm job id -> record, source name); writes the JSON files into ``slurm_dir``."""
    slurm_dir.mkdir(parents=True, exist_ok=True)
    ids = sorted(slurm_id for s in submissions if (slurm_id := s.get("slurm_job_id")) is not None)
    # the cluster's log holds every earlier run's jobs too: keep this run's only
    keep_jobs(slurm_dir / rundir.JOBCOMP_LOG, set(ids))
    if backend.platform.deployment.accounting.enabled:
        records, raw = fetch_sacct(lambda cmd: backend.exec(cmd, timeout=60), ids, timeout=SACCT_WAIT_S)
        write_json(slurm_dir / rundir.SACCT_JSON, {"jobs": raw})
        source = "sacct"
    else:
        records, source = read_jobcomp(slurm_dir / rundir.JOBCOMP_LOG), "jobcomp"
    write_json(
        slurm_dir / rundir.SLURM_JOBS, {"source": source, "jobs": {str(k): v for k, v in records.items()}}
    )
    return records, source
