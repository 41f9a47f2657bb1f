"""Tier choice on the real Slurm 24.11 (burst_buffer/lua): what the agent can and cannot change.

Pins the facts docs/io-live.md ("Tier choice by the agent") builds on, on a cluster of its own
(``tierlive1``, controller port 6963, slurmd ports 26401-26508):

- a held job's burst-buffer request cannot be changed: ``scontrol update BurstBuffer=`` is
  refused ("Requested operation not supported on this system"), so a job submitted with
  ``#BB_LUA`` keeps its request whatever the agent decides;
- the same job released (the fast tier, HPS) stages in and holds the pool;
- its script, read back with ``scontrol write batch_script`` and submitted again without the
  ``#BB_LUA`` line (the slow tier, LPS), runs without ever holding the pool;
- the ordering agent does that itself (harness.emulation.iolive.tiers): under ``sas-lps`` a BB job
  is submitted again and runs without BB, under ``sas-hps`` it is released and stages in;
- the LPS copy moves what Slurm would have staged itself, on the PFS: sigsleep's record shows
  the stage-in read first and the stage-out written last as ``io:pfs`` phases (and its
  checkpoint on the PFS too), at the contention service's rate (4 nodes alone: the PFS's
  5,000 MB/s).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from harness.cluster.containers.backend import SUBMIT_USER, DockerCluster
from harness.emulation.head.agent import Agent
from harness.policies.registry import get_policy
from harness.slurm.client import SlurmClient
from harness.slurm.config import SchedulerConfig
from tests.platforms import bundled_cluster
from tests.slurm_queue import squeue_lines

pytestmark = pytest.mark.integration

NAME = "tierlive1"
SCRIPT = (
    "#BB_LUA pool=bb capacity=4000\n"
    "#HARNESS_IO nodes=4 stage_in_mb=5000 stage_out_mb=0 time_scale=1\n"
    "exec sleep 1"
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[DockerCluster]:
    sched = SchedulerConfig(burst_buffer="lua", reserve_depth=1)
    ports = {"controller_port": 6963, "slurmd_base_port": 26401}
    with bundled_cluster(tmp_path_factory.mktemp("tierlive"), NAME, sched, **ports) as c:
        yield c


def _sbatch(c: DockerCluster, *args: str) -> int:
    cmd = ["sbatch", "--parsable", "--nodes=4", "--time=5", "--chdir=/tmp", "--output=/dev/null", *args]
    res = c.exec(cmd, user=SUBMIT_USER, timeout=60)
    assert res.ok, res.stderr
    return int(res.stdout.strip())


def _pool_used(c: DockerCluster) -> str:
    pool = c.exec(["scontrol", "show", "burstbuffer"], timeout=30).stdout
    return pool.split("PoolName")[1].split("UsedSpace=")[1].split()[0]


def _watch(c: DockerCluster, job: int, timeout: float = 60) -> list[tuple[str, str, str]]:
    """(state, reason, pool used) every 0.2 s until the job has left the queue."""
    seen: list[tuple[str, str, str]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = " ".join(squeue_lines(c, "-j", str(job), "-o", "%T %r")).split()
        used = _pool_used(c)
        if not state:
            return seen
        seen.append((state[0], state[1] if len(state) > 1 else "", used))
        time.sleep(0.2)
    raise AssertionError(f"job {job} did not complete in {timeout} s: {seen[-3:]}")


def _staged_in_holding_the_pool(seen: list[tuple[str, str, str]]) -> bool:
    """The job held the pool's 4000 units (printed with a byte suffix) while still pending:
    Slurm allocates them when the stage-in begins (the reason ``BurstBufferStageIn`` is only
    refreshed by a scheduling pass, which a loaded slurmctld may not run during a 2 s stage-in)."""
    return any(s == "PENDING" and u == "4KB" for s, _, u in seen)


@pytest.fixture(autouse=True)
def empty_pool(cluster: DockerCluster) -> Iterator[None]:
    """Each test starts on an empty queue and pool, whatever the one before left."""
    yield
    c = cluster
    c.exec(["scancel", "--user", SUBMIT_USER], timeout=30)
    deadline = time.monotonic() + 60
    while squeue_lines(c, "--user", SUBMIT_USER) or _pool_used(c) != "0":
        assert time.monotonic() < deadline, "the queue and the burst-buffer pool did not empty"
        time.sleep(0.5)


def test_bb_request_is_fixed_hps_holds_the_pool_resubmitted_lps_does_not(cluster: DockerCluster) -> None:
    c = cluster
    hps = _sbatch(c, "-H", f"--wrap={SCRIPT}")
    lps = _sbatch(c, "-H", f"--wrap={SCRIPT}")
    res = c.exec(["scontrol", "update", f"jobid={lps}", "BurstBuffer="], timeout=30)
    assert not res.ok and "not supported" in res.stdout + res.stderr, (res.stdout, res.stderr)
    show = c.exec(["scontrol", "show", "job", str(lps)], timeout=30).stdout
    assert "BurstBuffer=#BB_LUA pool=bb capacity=4000" in show

    assert c.exec(["scontrol", "release", str(hps)], timeout=30).ok
    seen = _watch(c, hps)
    assert _staged_in_holding_the_pool(seen), seen

    script = c.exec(["scontrol", "write", "batch_script", str(lps), "-"], timeout=30).stdout
    assert "#BB_LUA" in script
    slow = "\n".join(line for line in script.splitlines() if not line.startswith("#BB_LUA"))
    assert c.exec(["scancel", str(lps)], timeout=30).ok
    again = _sbatch(c, f"--wrap={slow.split(chr(10), 2)[2]}")  # drop sbatch's own two header lines
    seen = _watch(c, again)
    assert seen and all(u == "0" for _, _, u in seen), seen
    assert not any(r.startswith("BurstBuffer") for _, r, _ in seen), seen
    show = c.exec(["scontrol", "show", "job", str(again)], timeout=30).stdout
    assert "BurstBuffer=" not in show or "BurstBuffer=(null)" in show, show


def _agent_steps(c: DockerCluster, policy: str, steps: int) -> Agent:
    client = SlurmClient(runner=lambda cmd: c.exec(cmd, timeout=30), user=SUBMIT_USER)
    agent = Agent(get_policy(policy), c.platform, client)
    for _ in range(steps):
        agent.step()
        time.sleep(0.3)
    return agent


def test_agent_puts_a_job_on_lps_without_bb_and_on_hps_with_it(cluster: DockerCluster) -> None:
    c = cluster
    comment = "--comment=trace_id=1 walltime=60.000000 bb_per_node=1000"
    lps = _sbatch(c, "-H", comment, f"--wrap={SCRIPT}")
    _agent_steps(c, "sas-lps", 2)  # 1: submitted again without BB (held); 2: that copy released
    assert squeue_lines(c, "-j", str(lps), "-o", "%i") in ([], [f"{lps}"])
    mine = squeue_lines(c, "-u", SUBMIT_USER, "-o", "%i %k")
    copies = [int(line.split()[0]) for line in mine if "tier=lps" in line]
    assert len(copies) == 1, mine
    seen = _watch(c, copies[0])
    assert seen and all(u == "0" for _, _, u in seen), seen
    assert not any(r.startswith("BurstBuffer") for _, r, _ in seen), seen
    assert "BurstBuffer=#BB_LUA" not in c.exec(["scontrol", "show", "job", str(copies[0])], timeout=30).stdout

    hps = _sbatch(c, "-H", comment.replace("trace_id=1", "trace_id=2"), f"--wrap={SCRIPT}")
    _agent_steps(c, "sas-hps", 1)
    seen = _watch(c, hps)
    assert _staged_in_holding_the_pool(seen), seen


PHASE_LOG = "log/tierlive1-phases.jsonl"
LPS_SCRIPT = (
    "#BB_LUA pool=bb capacity=4000\n"
    "#HARNESS_IO nodes=4 stage_in_mb=5000 stage_out_mb=2500 time_scale=1\n"
    f"exec sigsleep --job-id 3 --log /shared/{PHASE_LOG} --phases compute:0.5,checkpoint:2000,compute:0.5"
)


def test_lps_copy_reads_its_stage_in_and_writes_its_stage_out_on_the_pfs(cluster: DockerCluster) -> None:
    c = cluster
    comment = "--comment=trace_id=3 walltime=60.000000 bb_per_node=1000"
    _sbatch(c, "-H", comment, f"--wrap={LPS_SCRIPT}")
    _agent_steps(c, "sas-lps", 2)  # submitted again on LPS, then released
    deadline, rec = time.monotonic() + 30, None
    while rec is None and time.monotonic() < deadline:
        time.sleep(0.5)
        rec = next((r for r in map(json.loads, (c.read_text(PHASE_LOG) or "").splitlines())), None)
    assert rec is not None and rec["reason"] == "completed", rec
    got = [(p["kind"], p["channel"], p["mb"]) for p in rec["phases"]]
    assert got == [("io", "pfs", 5000.0), ("compute", None, None), ("io", "pfs", 2000.0),
                   ("compute", None, None), ("io", "pfs", 2500.0)], got  # fmt: skip
    pfs = [p for p in rec["phases"] if p["kind"] == "io"]
    assert [p["moved_mb"] for p in pfs] == pytest.approx([5000.0, 2000.0, 2500.0])
    print([(p["running"], p["mean_mbps"], p["min_mbps"]) for p in pfs])
    # 4 nodes alone on the PFS: min(4 x 1,250, 5,000) = 5,000 MB/s, so 1.0 s, 0.4 s and 0.5 s
    assert [p["running"] for p in pfs] == pytest.approx([1.0, 0.4, 0.5], rel=0.15, abs=0.05)
