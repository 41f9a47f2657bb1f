"""Herbein's I/O-aware schedulers live, on the real Slurm 24.11 and the event clock.

A cluster of its own (``bbherbein``: 8 compute nodes in 2 chassis, 2 BB nodes, one node
container, controller port 7890, slurmd ports 14001-14010) on the toy I/O tree of
``tests/unit/test_io_tree_live.py`` (edge switches of 100 MB/s, a PFS of 200 MB/s) replays
its five jobs under ``io-easy`` and ``io-fcfs`` through the ordering agent. Each job's rate
travels in its comment; the agent builds the tree from the platform as the twin does. The
starts are the hand-computed ones (the module docstring there) and the twin's, the node
lists are the ones the policy chose (job 2 split over both switches because switch0 has
room for one more of its nodes, job 3 held by the PFS with 4 nodes free), and no link is
ever above its bandwidth in Slurm's own schedule.

``HARNESS_HERBEIN_TEST_CLUSTER`` and ``HARNESS_HERBEIN_TEST_PORTS`` (``CONTROLLER:SLURMD_BASE``)
move the cluster to another name and other ports (a shared host).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from harness.cluster.containers.backend import DockerCluster
from harness.emulation.run.experiment import Experiment
from harness.emulation.run.io_tree import live_link_peaks
from harness.emulation.run.specs import ClusterSpec, ReplaySpec, RunOptions, WorkloadSpec
from harness.model import rundir
from harness.model.hostlist import expand_hostlist
from harness.model.jsonio import read_json
from harness.platform import load_platform
from harness.policies.io_platform import platform_tree
from harness.policies.iotree import over_allocated
from harness.workload.plan import save_plan
from tests.platforms import platform_toml
from tests.unit.test_io_tree_live import TOY_IO, toy_plan

pytestmark = pytest.mark.integration

NAME = os.environ.get("HARNESS_HERBEIN_TEST_CLUSTER", "bbherbein")
PORTS = os.environ.get("HARNESS_HERBEIN_TEST_PORTS", "7890:14001")  # controller : first slurmd
CONTROLLER_PORT, SLURMD_BASE_PORT = (int(port) for port in PORTS.split(":"))
# hand-computed (tests/unit/test_io_tree_live.py): start (trace s) and Slurm's node list per job
EXPECTED = {
    "io-easy": {1: (0, "s[01-02]"), 2: (10, "s03,s05"), 3: (100, "s[01-02],s06"),
                4: (30, "s04"), 5: (40, "s06")},
    "io-fcfs": {1: (0, "s[01-02]"), 2: (10, "s03,s05"), 3: (100, "s[01-02],s06"),
                4: (100, "s04"), 5: (110, "s05")},
}  # fmt: skip
# Slurm (sched/builtin) starts what the agent released at its next main cycle: the same
# instant or one to a few seconds later on the event clock (docs/virtual-time.md)
SLURM_PASS_S = 5.0


@pytest.fixture(scope="module")
def herbein_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    tmp = tmp_path_factory.mktemp("herbein")
    platform = tmp / "hbtoy.toml"
    platform.write_text(platform_toml(name="hbtoy", controller_port=CONTROLLER_PORT,
                                      slurmd_base_port=SLURMD_BASE_PORT, chassis_per_group=2,
                                      compute_per_chassis=4, node_containers=1) + TOY_IO)  # fmt: skip
    plan = tmp / "plan.parquet"
    save_plan(toy_plan(), {"format": "harness-plan", "version": 1, "shrink": 0.0, "seed": 0}, plan)
    cluster = DockerCluster(NAME, load_platform(str(platform)))
    cluster.down()
    runs = {}
    try:
        for policy in EXPECTED:
            opts = RunOptions(WorkloadSpec(trace=plan, shrink=0.0),
                              ClusterSpec(name=NAME, platform=str(platform)),
                              ReplaySpec(policy=policy, events=True, compare_sim=True),
                              runs_dir=tmp / "runs", quiet=True, label=policy)  # fmt: skip
            runs[policy] = Experiment(opts, progress=print).execute()
        yield runs
    finally:
        cluster.down()


@pytest.mark.parametrize("policy", list(EXPECTED))
def test_the_hierarchy_places_and_delays_jobs_live_as_by_hand(herbein_runs, policy: str) -> None:
    run_dir = herbein_runs[policy]
    manifest = read_json(run_dir / rundir.MANIFEST)
    assert manifest["complete"] is True, manifest.get("incomplete_reason")
    results = pd.read_parquet(run_dir / rundir.RESULTS).set_index("job_id").sort_index()
    assert (results["status"] == "completed").all(), results["status"].tolist()
    hand = EXPECTED[policy]
    nodes = {job: expand_hostlist(names) for job, names in results["nodelist"].items()}
    assert nodes == {job: expand_hostlist(names) for job, (_, names) in hand.items()}
    late = {job: results.at[job, "start"] - start for job, (start, _) in hand.items()}
    assert all(0 <= d <= SLURM_PASS_S for d in late.values()), late
    # the twin (the simulator on the same platform tree and rates) starts them at the hand values
    metrics = read_json(run_dir / rundir.METRICS)
    fidelity = metrics["fidelity"]
    assert fidelity["start_order"]["kendall_tau"] == pytest.approx(1.0), fidelity["start_order"]
    twin_wait = (
        sum(start - sub for (start, _), sub in zip(hand.values(), toy_plan()["submit"], strict=True)) / 5
    )
    assert fidelity["metrics"]["mean_wait"]["simulated"] == pytest.approx(twin_wait)
    assert metrics["agent"]["errors"] == 0, metrics["agent"]
    # Slurm's own schedule never put a link above its bandwidth; switch0 was full
    machine = load_platform(manifest["options"]["cluster"]["platform"])
    tree = platform_tree(machine, policy)
    peaks = live_link_peaks(results.reset_index(), toy_plan(), machine, tree)
    assert over_allocated(tree, peaks) == [] and peaks["switch0"] == pytest.approx(100.0), peaks
