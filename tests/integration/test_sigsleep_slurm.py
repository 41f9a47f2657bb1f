"""sigsleep under the real Slurm 24.11: `scontrol suspend`/`resume` and `scancel` of a job.

Slurm suspends a step with SIGTSTP, then SIGSTOP 2 s later, and resumes it with SIGCONT;
`scancel` of a suspended job sends SIGCONT and SIGTERM. The job's own record must show
the suspended interval where Slurm suspended it, and the running time must stay the
requested runtime. Host and containers share one kernel clock, so the host's wall-clock
times of the scontrol calls bound the logged interval (up to the RPC path
docker exec -> slurmctld -> slurmd -> slurmstepd -> signal).
"""

from __future__ import annotations

import json
import time
import uuid

import pytest

from harness.slurm.config import SchedulerConfig

pytestmark = pytest.mark.integration

RUNTIME = 8.0
# docker exec + scontrol RPC + slurmd + slurmstepd until the signal is delivered.
RPC_SLACK = 1.0


def _submit(cluster, log: str, job_id: int, runtime: float, *extra: str) -> int:
    wrap = f"exec sigsleep --runtime {runtime} --walltime 600 --job-id {job_id} --log {log} --meta test=slurm"
    slurm_id = cluster.sbatch(
        "--time=10", "--nodes=1", f"--job-name=sigsleep-{job_id}", *extra, f"--wrap={wrap}"
    )
    # Harmless if the job is not held; needed if an earlier test left external ordering on.
    cluster.exec(["scontrol", "release", str(slurm_id)])
    assert cluster.wait_state(slurm_id, {"RUNNING"}, 60) == "RUNNING"
    return slurm_id


def _scontrol(cluster, *args: str) -> tuple[float, float]:
    """Run scontrol as root in the controller; host wall-clock time before and after."""
    before = time.time()
    res = cluster.exec(["scontrol", *args])
    after = time.time()
    assert res.rc == 0, f"scontrol {' '.join(args)}: {res.stderr}"
    return before, after


def _record(cluster, log: str, job_id: int, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        res = cluster.exec(["cat", log])
        if res.rc == 0:
            for line in res.stdout.splitlines():
                rec = json.loads(line)
                if rec["job_id"] == job_id:
                    return rec
        time.sleep(0.5)
    pytest.fail(f"no record of job {job_id} in {log} after {timeout} s")


@pytest.fixture
def log() -> str:
    return f"/shared/log/test-sigsleep-{uuid.uuid4().hex[:10]}.jsonl"


def test_suspend_resume_is_logged_and_running_time_kept(clean_queue, log: str) -> None:
    cluster = clean_queue
    slurm_id = _submit(cluster, log, job_id=990001, runtime=RUNTIME)
    time.sleep(1.5)
    sus0, sus1 = _scontrol(cluster, "suspend", str(slurm_id))
    assert cluster.wait_state(slurm_id, {"SUSPENDED"}, 10) == "SUSPENDED"
    time.sleep(3.0)  # longer than Slurm's 2 s between SIGTSTP and SIGSTOP
    res0, res1 = _scontrol(cluster, "resume", str(slurm_id))

    rec = _record(cluster, log, 990001, timeout=RUNTIME + 30)
    assert rec["reason"] == "completed"
    assert rec["slurm_job_id"] == slurm_id
    assert rec["node"] and rec["nodelist"]
    assert rec["meta"] == {"test": "slurm"}
    assert rec["running"] == pytest.approx(RUNTIME, abs=0.050)
    assert rec["n_suspensions"] == 1
    (start, end) = rec["suspensions"][0]
    assert sus0 <= start <= sus1 + RPC_SLACK
    assert res0 <= end <= res1 + RPC_SLACK
    assert rec["suspended"] == pytest.approx(end - start, abs=1e-5)
    assert rec["end"] - rec["start"] == pytest.approx(RUNTIME + rec["suspended"], abs=0.050)


def test_scancel_after_a_suspension_logs_killed_with_the_interval(clean_queue, log: str) -> None:
    """scancel of a running job: SIGCONT, SIGTERM, SIGKILL after KillWait; the SIGTERM
    record keeps the earlier suspension. (A job cancelled *while suspended* is SIGKILLed
    at once by slurmd and cannot leave a record: resume before cancelling.)"""
    cluster = clean_queue
    slurm_id = _submit(cluster, log, job_id=990002, runtime=60.0)
    time.sleep(1.0)
    sus0, sus1 = _scontrol(cluster, "suspend", str(slurm_id))
    assert cluster.wait_state(slurm_id, {"SUSPENDED"}, 10) == "SUSPENDED"
    time.sleep(2.5)
    res0, res1 = _scontrol(cluster, "resume", str(slurm_id))
    assert cluster.wait_state(slurm_id, {"RUNNING"}, 10) == "RUNNING"
    time.sleep(1.0)
    cancel = time.time()
    res = cluster.exec(["scancel", str(slurm_id)])
    assert res.rc == 0, res.stderr

    rec = _record(cluster, log, 990002, timeout=30)
    assert rec["reason"] == "killed" and rec["signal"] == "SIGTERM"
    assert cancel <= rec["end"] <= cancel + RPC_SLACK
    # The first suspension is ours; a loaded host once showed a second, short stop/continue
    # around the cancellation (n_suspensions 2), which the running time below still accounts for.
    assert rec["n_suspensions"] >= 1
    start, end = rec["suspensions"][0]
    assert sus0 <= start <= sus1 + RPC_SLACK
    assert res0 <= end <= res1 + RPC_SLACK
    assert rec["running"] == pytest.approx(rec["end"] - rec["start"] - rec["suspended"], abs=1e-5)


def test_preemption_by_suspension_keeps_the_running_time(clean_queue, log: str) -> None:
    """PreemptMode=SUSPEND,GANG: an urgent-partition job on the same node suspends the
    compute job (Slurm's gang scheduler, not scontrol) and it resumes when the urgent job
    ends. The compute job's record holds one suspension spanning the urgent job's run,
    and its running time is still the requested runtime."""
    cluster = clean_queue
    cluster.reconfigure(SchedulerConfig(preempt_suspend=True))
    try:
        low = _submit(cluster, log, 990003, RUNTIME, "--partition=compute", "--nodelist=c001")
        time.sleep(1.5)
        _submit(cluster, log, 990004, 4.0, "--partition=urgent", "--nodelist=c001")
        assert cluster.wait_state(low, {"SUSPENDED"}, 10) == "SUSPENDED"
        urgent = _record(cluster, log, 990004, timeout=30)
        low_rec = _record(cluster, log, 990003, timeout=RUNTIME + 90)
    finally:
        cluster.cancel_all()
        cluster.reconfigure(SchedulerConfig())
    assert urgent["reason"] == "completed" and urgent["n_suspensions"] == 0
    assert low_rec["reason"] == "completed"
    assert low_rec["running"] == pytest.approx(RUNTIME, abs=0.050)
    assert low_rec["n_suspensions"] == 1
    start, end = low_rec["suspensions"][0]
    # suspended before the urgent job started, resumed after it ended
    assert start <= urgent["start"] + 0.05 and end >= urgent["end"] - 0.05
    assert low_rec["end"] - low_rec["start"] == pytest.approx(RUNTIME + low_rec["suspended"], abs=0.050)
