"""The ordering agent sees a job in Slurm's STAGE_OUT (burst_buffer/lua, Slurm 24.11).

A cluster of its own (``agentso``, controller port 6986, slurmd ports 23701-23808). One job of
one node on c009 (chassis 1) with a burst buffer of 30,000 MB and a stage-out of 3,750 MB:
alone, a one-node job stages at its card's 1,250 MB/s, so Slurm keeps it in STAGE_OUT
(node released, pool held) for 3 s after its run. The agent (its real Slurm client, the
policy never called: no job waits) adopts it while it runs, keeps it in STAGE_OUT as
holding its BB share and no node, and forgets it when it leaves the queue. A plain squeue
without STAGE_OUT in ``--states`` (the agent's list before) does not show it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from harness.cluster.containers.backend import SUBMIT_USER, DockerCluster
from harness.emulation.head.agent import Agent
from harness.platform import load_platform
from harness.policies.registry import get_policy
from harness.slurm.client import SQUEUE_FORMAT, SlurmClient, parse_squeue
from harness.slurm.config import SchedulerConfig
from harness.slurm.jobspec import encode_comment
from tests.platforms import bundled_cluster

pytestmark = pytest.mark.integration

NAME = "agentso"
SHARE_MB = 30_000
STAGE_OUT_MB = 3750.0  # 3 s at one card's 1,250 MB/s


@pytest.fixture(scope="module")
def so_cluster(tmp_path_factory) -> Iterator[DockerCluster]:
    ports = {"controller_port": 6986, "slurmd_base_port": 23701}
    with bundled_cluster(
        tmp_path_factory.mktemp("agentso"), NAME, SchedulerConfig(burst_buffer="lua"), **ports
    ) as cluster:
        yield cluster


def test_agent_keeps_a_staging_out_job_on_its_bb_share_only(so_cluster: DockerCluster) -> None:
    cluster = so_cluster
    lines = (
        f"#BB_LUA pool=bb capacity={SHARE_MB}\n"
        f"#HARNESS_IO nodes=1 stage_in_mb=0 stage_out_mb={STAGE_OUT_MB:g} time_scale=1\n"
    )
    res = cluster.exec(
        ["sbatch", "--parsable", "--nodes=1", "--nodelist=c009", "--time=2", "--chdir=/shared/jobs",
         "--output=/dev/null", f"--comment={encode_comment(1, 60.0, SHARE_MB)}", f"--wrap={lines}sleep 1"],
        user=SUBMIT_USER, timeout=60,
    )  # fmt: skip
    assert res.ok, res.stderr
    job = int(res.stdout.strip())
    agent = Agent(
        get_policy("fcfs"), load_platform(), SlurmClient(runner=lambda c: cluster.exec(c, timeout=30))
    )
    seen: list[tuple[str, list[int], list[int], tuple[int, ...]]] = []
    legacy_listed = []  # does squeue with the former states list show the job in STAGE_OUT?
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        agent.step()
        state = agent.state()
        slurm_state = next((j.state for j in agent.client.jobs() if j.job_id == job), "gone")
        seen.append((slurm_state, [j.job_id for j in state.running], [j.job_id for j in state.holding_bb],
                     state.free_bb_mb[:2]))  # fmt: skip
        if slurm_state == "STAGE_OUT" and not legacy_listed:
            states = "--states=PENDING,RUNNING,COMPLETING,CONFIGURING,SUSPENDED"
            out = cluster.exec(["squeue", "--noheader", f"--format={SQUEUE_FORMAT}", states], timeout=30)
            legacy_listed.append(job in {j.job_id for j in parse_squeue(out.stdout)})
        if slurm_state == "gone" and any(s[0] == "STAGE_OUT" for s in seen):
            break
        time.sleep(0.2)
    print([s for k, s in enumerate(seen) if k == 0 or s != seen[k - 1]], len(seen))
    staging = [s for s in seen if s[0] == "STAGE_OUT" and s[2] == [job]]
    assert staging, seen  # listed in STAGE_OUT, and held as BB only
    # while staging out: no node, its share still on chassis 1's BB node
    assert all(s[1] == [] and s[3] == (40_000, 40_000 - SHARE_MB) for s in staging)
    assert any(s[0] == "RUNNING" and s[1] == [job] for s in seen)
    assert legacy_listed == [False]
    assert seen[-1][0] == "gone"
    agent.step()  # the agent's own look after the job left the queue: its BB is free
    assert job not in agent.started and agent.state().free_bb_mb[:2] == (40_000, 40_000)
    assert len(staging) >= 3  # seen for the ~3 s of the stage-out
