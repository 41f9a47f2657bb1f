"""Background drains of checkpoints in live jobs, on the real Slurm 24.11 (burst_buffer/lua).

A cluster of its own (``drainlive``, controller port 6985, slurmd ports 23501-23608). On the
default platform a one-node checkpoint of 2,500 MB goes into the BB node of its chassis at
the node's 1,250 MB/s (2 s), then drains from that BB node to the PFS at 1,250 MB/s (2 s)
while the job goes on:

- job A (c001, no burst buffer) computes 4 s after its checkpoint: the drain runs during
  that phase and ends before the job;
- job B (c009, another chassis and BB node, with a burst buffer) computes 0.5 s after its
  checkpoint: Slurm holds it in STAGE_OUT (and its burst buffer) until the drain is done,
  1.5 s after the job's end, and the contention service does not drop the drain of a job
  staging out.

The contention service is killed while A's drain runs (and restarted by the entrypoint):
the drain's file holds how far it is, so it still ends on time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from harness.cluster.containers.backend import DockerCluster
from harness.emulation.iolive.drains import DRAIN_RECORDS
from harness.emulation.iolive.staging import RECORDS
from harness.slurm.config import SchedulerConfig
from tests.platforms import bundled_cluster
from tests.sigsleep_jobs import phase_records, submit_phases
from tests.slurm_queue import squeue_lines

pytestmark = pytest.mark.integration

NAME = "drainlive"
LOG = "log/drainlive-phases.jsonl"
CHECKPOINT_MB = 2500.0
DRAIN_S = 2.0  # 2,500 MB from a BB node to the PFS at one card's 1,250 MB/s


@pytest.fixture(scope="module")
def drain_cluster(tmp_path_factory) -> Iterator[DockerCluster]:
    ports = {"controller_port": 6985, "slurmd_base_port": 23501}
    with bundled_cluster(
        tmp_path_factory.mktemp("drainlive"), NAME, SchedulerConfig(burst_buffer="lua"), **ports
    ) as cluster:
        yield cluster


BB_HEAD = "#BB_LUA pool=bb capacity=1000\n#HARNESS_IO nodes=1 stage_in_mb=0 stage_out_mb=0 time_scale=1\n"


def _drain_rated(cluster: DockerCluster, job: int) -> bool:
    """Whether trace job 1's drain has its rate (or is over already)."""
    text = cluster.read_text("io/flows/1.0.flow") or ""
    return ("channel=drain" in text and " rate=0 " not in text) or any(
        d["job"] == job for d in _jsonl(cluster, DRAIN_RECORDS)
    )


def _state(cluster: DockerCluster, job: int) -> str:
    return " ".join(squeue_lines(cluster, "-j", str(job), "-o", "%T"))


def _jsonl(cluster: DockerCluster, name: str) -> list[dict]:
    return [json.loads(line) for line in (cluster.read_text(f"io/{name}") or "").splitlines()]


def test_a_checkpoint_drains_beside_the_next_phase_and_holds_the_stage_out(
    drain_cluster: DockerCluster,
) -> None:
    cluster = drain_cluster
    a = submit_phases(cluster, 1, "c001", f"checkpoint:{CHECKPOINT_MB:g},compute:4", LOG)
    b = submit_phases(cluster, 2, "c009", f"checkpoint:{CHECKPOINT_MB:g},compute:0.5", LOG, head=BB_HEAD)
    # A's drain under way (its rate published), the contention service dies; the entrypoint
    # starts it again, which reads how far the drain is from its file and ends it on time
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not _drain_rated(cluster, a):
        time.sleep(0.05)
    service = "harness.emulation.iolive.contention"
    pid = cluster.exec(["pgrep", "-f", "-o", service], timeout=30).stdout.strip()
    assert pid.isdigit(), pid
    assert cluster.exec(["kill", pid], timeout=30).ok
    seen: list[tuple[float, str]] = []  # job B's states as squeue shows them
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        state = _state(cluster, b)
        seen.append((time.time(), state))
        if state != "STAGE_OUT" and any(
            r["job"] == b and r["kind"] == "out" for r in _jsonl(cluster, RECORDS)
        ):
            break
        time.sleep(0.2)
    rec = phase_records(cluster, LOG, {1, 2}, timeout=20)
    drains = {d["job"]: d for d in _jsonl(cluster, DRAIN_RECORDS)}
    outs = {r["job"]: r for r in _jsonl(cluster, RECORDS) if r["kind"] == "out"}
    print(drains, outs.get(b), [s for s in seen if s[1] == "STAGE_OUT"][::5])
    assert set(drains) == {a, b}, (drains, seen)
    for job, trace in ((a, 1), (b, 2)):
        ckpt, compute = rec[trace]["phases"]
        assert ckpt["done"] and compute["done"]
        d = drains[job]
        assert (d["trace_job"], d["phase"], d["mb"], d["solo_s"]) == (trace, 0, CHECKPOINT_MB, DRAIN_S)
        assert d["start"] == pytest.approx(ckpt["end"], abs=0.05)  # handed over at the checkpoint's end
    # A's drain: the model's time, alone on its links, though the service restarted meanwhile;
    # B's checkpoint or drain may have begun while the service was down (waiting for a rate)
    assert rec[1]["phases"][0]["running"] == pytest.approx(DRAIN_S, rel=0.05)  # A's checkpoint
    assert drains[a]["seconds"] == pytest.approx(DRAIN_S, rel=0.10)
    assert 0.9 * DRAIN_S <= drains[b]["seconds"] <= DRAIN_S + 3.0
    log = cluster.exec(["cat", "/var/log/slurm/contention.log"], timeout=30).stdout
    assert "contention service exited; restarting" in log, log
    # A: the drain ran during the 4 s compute phase and ended before the job
    assert drains[a]["end"] < rec[1]["phases"][1]["end"]
    # B: its job ended 0.5 s after the checkpoint; Slurm kept it in stage-out until the drain ended
    out = outs[b]
    assert out["start"] >= rec[2]["end"] and out["end"] >= drains[b]["end"]
    # (Slurm starts the stage-out some 0.5 s after the job's end: the wait is what is left)
    assert out["drain_wait_s"] == pytest.approx(drains[b]["end"] - out["start"], abs=0.25)
    assert out["drain_wait_s"] > 0.3 and out["seconds"] == pytest.approx(out["drain_wait_s"], abs=0.01)
    stage_out = [t for t, s in seen if s == "STAGE_OUT"]
    assert stage_out and max(stage_out) >= drains[b]["end"] - 0.5, seen
