"""sigsleep's I/O phases slowed by the live contention service, on the real Slurm 24.11.

A cluster of its own (``iolive2``, controller port 6960, slurmd ports 26001-26108) with
``BurstBufferType=burst_buffer/lua``, so that the controller container runs the contention
service beside slurmctld. On the default platform a one-node checkpoint goes to the BB node
of its chassis at the node's 1,250 MB/s; two nodes of one chassis checkpointing at once
share that BB node's 1,250 MB/s link: 625 MB/s each, twice the time. A node of another
chassis checkpoints to another BB node, unaffected, at the same moment; the service is
killed in the middle (and restarted by the controller's entrypoint) without changing that.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from harness.cluster.containers.backend import SUBMIT_USER, DockerCluster
from harness.slurm.config import SchedulerConfig
from tests.platforms import bundled_cluster
from tests.sigsleep_jobs import phase_records, submit_phases

pytestmark = pytest.mark.integration

NAME = "iolive2"
LOG = "log/iolive2-phases.jsonl"
CHECKPOINT_MB = 6250.0  # 5 s alone at 1,250 MB/s
SOLO_S = 5.0


@pytest.fixture(scope="module")
def io_cluster(tmp_path_factory) -> Iterator[DockerCluster]:
    ports = {"controller_port": 6960, "slurmd_base_port": 26001}
    with bundled_cluster(
        tmp_path_factory.mktemp("iolive2"), NAME, SchedulerConfig(burst_buffer="lua"), **ports
    ) as cluster:
        yield cluster


def test_two_checkpoints_on_one_link_each_take_twice_their_solo_time(io_cluster: DockerCluster) -> None:
    cluster = io_cluster
    phases = f"compute:0.5,checkpoint:{CHECKPOINT_MB:g},compute:0.5"
    # c001 and c002 share chassis 1 and its BB node bb01; c009 is alone on chassis 2 (bb02)
    placed = ((1, "c001"), (2, "c002"), (3, "c009"))
    slurm_ids = [submit_phases(cluster, j, n, phases, LOG, held=True) for j, n in placed]
    res = cluster.exec(["scontrol", "release", ",".join(map(str, slurm_ids))], user=SUBMIT_USER, timeout=30)
    assert res.ok, res.stderr
    # mid-checkpoint, the contention service dies: the entrypoint starts it again, the jobs keep
    # their last rates meanwhile (nothing is lost: the flow files are its state)
    time.sleep(3.0)
    service = "harness.emulation.iolive.contention"
    pid = cluster.exec(["pgrep", "-f", "-o", service], timeout=30).stdout.strip()
    assert pid.isdigit(), pid
    assert cluster.exec(["kill", pid], timeout=30).ok
    rec = phase_records(cluster, LOG, {1, 2, 3}, timeout=40)
    log = cluster.exec(["cat", "/var/log/slurm/contention.log"], timeout=30).stdout
    assert "contention service exited; restarting" in log, log
    assert set(rec) == {1, 2, 3}, rec
    ckpt = {j: r["phases"][1] for j, r in rec.items()}
    assert all(r["reason"] == "completed" and all(p["done"] for p in r["phases"]) for r in rec.values())
    assert all(p["moved_mb"] == pytest.approx(CHECKPOINT_MB) for p in ckpt.values())
    print({j: (p["running"], p["mean_mbps"], p["min_mbps"], p["start"]) for j, p in ckpt.items()})
    solo = ckpt[3]["running"]
    assert solo == pytest.approx(SOLO_S, rel=0.05)
    assert ckpt[3]["min_mbps"] == pytest.approx(1250.0)
    # the pair, begun d seconds apart (launch jitter): the first moves d x R alone, then both
    # share R until it ends, then the second moves its last d x R alone: each lasts 2 x solo - d
    apart = abs(ckpt[1]["start"] - ckpt[2]["start"])
    for j in (1, 2):
        assert ckpt[j]["running"] == pytest.approx(2 * solo - apart, rel=0.10), (apart, ckpt[1], ckpt[2])
        assert ckpt[j]["min_mbps"] == pytest.approx(625.0)
    overlap = min(ckpt[1]["end"], ckpt[2]["end"]) - max(ckpt[1]["start"], ckpt[2]["start"])
    assert overlap > 1.5 * solo  # they really ran together
