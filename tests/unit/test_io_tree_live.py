"""Herbein's schedulers live: the job's PFS rate in its comment, the platform's I/O tree in the
agent and in the simulator twin (one definition), the agent's link books, the refusals.

The toy platform: 2 chassis of 4 compute nodes (s01-s04 under switch0, s05-s08 under
switch1), edge switches of 100 MB/s, a core pool of 1,000 MB/s and a PFS of 8 x 25 = 200
MB/s. Hand-computed: job 1 (2 nodes x 30 MB/s) takes s01-s02 (switch0 60); job 2 (2 x 30)
fits only one node more under switch0 (90 <= 100, 120 > 100), so it gets s03 and s05; job 3
(3 x 30 = 90) would bring the PFS to 210 > 200 and waits although 4 nodes are free; job 4
(1 x 10, ends before job 3's shadow time) is backfilled on s04 (switch0 exactly full); when
job 1 ends, job 3 starts on s01, s02 (switch0 30 + 10 + 60 = 100) and s06.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from harness.emulation.head.agent import Agent
from harness.emulation.head.replay import ReplayOptions, sbatch_command
from harness.emulation.run.io_tree import with_pfs_rates
from harness.platform import Machine, load_platform
from harness.policies.io_platform import NoIoTreeError, never_carried, on_platform, platform_tree
from harness.policies.iotree import IoTree, link_use, over_allocated, peak_link_use
from harness.policies.registry import get_policy
from harness.sim.engine import simulate
from harness.sim.machine import parse_bb_map
from harness.slurm.client import SlurmClient
from harness.slurm.jobspec import decode_comment, encode_comment, parse_comment
from tests.platforms import platform_toml
from tests.unit.test_agent import ScriptedSlurm

TOY_IO = """
[machine.io.hierarchy]
edge_mbps = 100
core_mbps = 1000
demand_mbps_per_node = 25
pfs_underprovision_pct = 0
"""


def toy_platform(tmp_path: Path) -> Machine:
    path = tmp_path / "hbtoy.toml"
    toml = platform_toml(name="hbtoy", controller_port=7890, slurmd_base_port=14001,
                         chassis_per_group=2, compute_per_chassis=4, node_containers=1)  # fmt: skip
    path.write_text(toml + TOY_IO)
    return load_platform(str(path))


def toy_plan() -> pd.DataFrame:
    """The module's five jobs (job 5: 1 node x 60 MB/s at 40 s, only switch1 has the room)."""
    return pd.DataFrame({
        "job_id": [1, 2, 3, 4, 5], "submit": [0.0, 10.0, 20.0, 30.0, 40.0],
        "runtime": [100.0, 100.0, 100.0, 50.0, 30.0], "walltime": [120.0, 120.0, 120.0, 60.0, 40.0],
        "nodes": [2, 2, 3, 1, 1], "bb_per_node_mb": [0] * 5,
        "pfs_mbps_per_node": [30.0, 30.0, 30.0, 10.0, 60.0],
    })  # fmt: skip


def test_the_pfs_rate_travels_in_the_comment() -> None:
    words = encode_comment(7, 36.5, 1200, 18.0)
    assert words == "trace_id=7 walltime=36.500000 bb_per_node=1200 pfs_per_node=18.000000"
    assert decode_comment(parse_comment(words)).pfs_mbps_per_node == 18.0
    assert decode_comment(parse_comment(encode_comment(7, 36.5, 1200))).pfs_mbps_per_node is None


def test_the_replay_gives_the_rate_to_the_agent_without_a_license() -> None:
    job = {
        "job_id": 9,
        "nodes": 3,
        "bb_per_node_mb": 0,
        "runtime": 5.0,
        "walltime": 18.0,
        "pfs_mbps_per_node": 18.0,
    }
    opts = ReplayOptions(run_dir=Path("/r"), run_id="x", bandwidth_license=False)
    cmd = sbatch_command(job, opts, 0.0)
    assert not any(word.startswith("--licenses") for word in cmd)
    comment = next(word for word in cmd if word.startswith("--comment="))
    assert " pfs_per_node=18.000000 " in comment


def test_the_platform_tree_is_the_hierarchy(tmp_path: Path) -> None:
    tree = platform_tree(toy_platform(tmp_path), "io-easy")
    assert tree.switch_of_node == (0, 0, 0, 0, 1, 1, 1, 1)
    assert tree.switch_mb_s == (100.0, 100.0) and tree.chain == (("core", 1000.0), ("pfs", 200.0))
    assert tree.node_mb_s == 1250.0  # the platform's compute link


def test_link_use_and_peaks_hand_computed() -> None:
    tree = IoTree.uniform([0, 0, 0, 0, 1, 1, 1, 1], 1250.0, 100.0, [("core", 1000.0), ("pfs", 200.0)])
    use = link_use(tree, [((0, 1), 30.0), ((2, 4), 30.0)])
    assert use == {"switch0": 90.0, "switch1": 30.0, "core": 120.0, "pfs": 120.0}
    assert over_allocated(tree, use) == []
    assert over_allocated(tree, {**use, "switch0": 120.0}) == ["switch0"]
    # job 1 ends at 100 when job 3 starts: not at the same time; job 2 overlaps both
    peaks = peak_link_use(tree, [(0.0, 100.0, (0, 1), 30.0), (10.0, 110.0, (2, 4), 30.0),
                                 (100.0, 200.0, (0, 1, 5), 30.0)])  # fmt: skip
    assert peaks == {"switch0": 90.0, "switch1": 60.0, "core": 150.0, "pfs": 150.0}
    assert never_carried(tree, [6, 7, 3], [30.0, 30.0, 100.0]) == [
        False,
        True,
        True,
    ]  # 210 > 200; 3 x 100 > 100


def test_the_simulator_twin_runs_on_the_platform_tree(tmp_path: Path) -> None:
    machine = toy_platform(tmp_path)
    jobs = simulate(toy_plan(), get_policy("io-easy"), machine).jobs.set_index("job_id").sort_index()
    assert jobs["start"].tolist() == [0.0, 10.0, 100.0, 30.0, 40.0]
    nodes = {j: [c for c, _ in parse_bb_map(machine, r.bb_nodes)] for j, r in jobs.iterrows()}
    assert nodes == {1: [0, 1], 2: [2, 4], 3: [0, 1, 5], 4: [3], 5: [5]}
    fcfs = simulate(toy_plan(), get_policy("io-fcfs"), machine).jobs.set_index("job_id").sort_index()
    assert fcfs["start"].tolist() == [0.0, 10.0, 100.0, 100.0, 110.0]  # FCFS: 4 and 5 wait behind 3


def test_the_agent_places_and_delays_by_every_link(tmp_path: Path) -> None:
    slurm, now = ScriptedSlurm(), [0.0]
    log = tmp_path / "d.jsonl"
    agent = Agent(
        get_policy("io-easy"), toy_platform(tmp_path), SlurmClient(runner=slurm), log, clock=lambda: now[0]
    )

    def submit(job: int, nodes: int, walltime: float, rate: float) -> None:
        slurm.submit(job, nodes, walltime, 0)
        slurm.jobs[job]["comment"] += f" pfs_per_node={rate}"
        now[0] += 1
        agent.step()

    submit(1, 2, 120.0, 30.0)
    submit(2, 2, 120.0, 30.0)
    submit(3, 3, 120.0, 30.0)
    submit(4, 1, 60.0, 10.0)
    placed = {j: (d["state"], d["nodelist"]) for j, d in slurm.jobs.items()}
    assert placed == {1: ("RUNNING", "s[01-02]"), 2: ("RUNNING", "s03,s05"), 3: ("PENDING", ""),
                      4: ("RUNNING", "s04")}  # fmt: skip
    slurm.finish(1)
    now[0] += 100
    agent.step()
    assert slurm.jobs[3]["state"] == "RUNNING" and slurm.jobs[3]["nodelist"] == "s[01-02],s06"
    last = json.loads(log.read_text().splitlines()[-1])
    assert last["links_mb_s"] == {"switch0": 100.0, "switch1": 60.0, "core": 160.0, "pfs": 160.0}


def test_io_easy_without_an_io_tree_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(NoIoTreeError, match=r"^policy io-easy needs the platform's I/O tree") as exc:
        Agent(get_policy("io-easy"), load_platform(), SlurmClient(runner=ScriptedSlurm()))
    assert "\n" not in str(exc.value)
    ignorant = get_policy("io-ignorant-easy")
    assert on_platform(ignorant, load_platform()) is ignorant  # it never looks at the links


def test_the_run_plan_gets_rates_and_loses_what_the_tree_never_carries(tmp_path: Path) -> None:
    machine = toy_platform(tmp_path)
    plan = toy_plan().drop(columns="pfs_mbps_per_node")
    plan.loc[len(plan)] = [6, 50.0, 10.0, 20.0, 8, 0]  # 8 x 25 = 200: carried; the PFS is exactly full
    said: list[str] = []
    out, info = with_pfs_rates(plan, "io-easy", machine, 1, said.append)
    assert out["pfs_mbps_per_node"].tolist() == [25.0] * 6 and info == {"rejected_by_io_tree": 0}
    out, info = with_pfs_rates(toy_plan().assign(nodes=[2, 2, 3, 1, 4]), "io-fcfs", machine, 1, said.append)
    assert out["job_id"].tolist() == [1, 2, 3, 4] and info == {"rejected_by_io_tree": 1}  # 4 x 60 > 200
    assert said == ["1 job(s) need more than the I/O tree carries (PFS 200 MB/s), e.g. trace job 5: "
                    "rejected at submission, as in Herbein"]  # fmt: skip
    assert with_pfs_rates(plan, "backfill-1", machine, 1, said.append) == (plan, {})


def test_jobs_of_one_instant_queue_in_the_trace_order_not_slurms(tmp_path: Path) -> None:
    """Concurrent submitters give jobs of one instant Slurm ids in any order: the agent's FCFS
    order is the twin's (the trace's numbers), so trace job 1 (all 8 nodes, 8 x 25 = 200 MB/s,
    the whole PFS) goes first although Slurm numbered it after trace job 2."""
    slurm = ScriptedSlurm()
    agent = Agent(get_policy("io-fcfs"), toy_platform(tmp_path), SlurmClient(runner=slurm), clock=lambda: 5.0)
    for slurm_id, trace_id, nodes in ((10, 2, 3), (11, 1, 8)):
        slurm.submit(slurm_id, nodes, 60.0, 0)
        slurm.jobs[slurm_id]["comment"] = f"trace_id={trace_id} walltime=60.0 bb_per_node=0 pfs_per_node=25"
    agent.step()
    assert (slurm.jobs[11]["state"], slurm.jobs[11]["nodelist"]) == ("RUNNING", "s[01-08]")
    assert slurm.jobs[10]["state"] == "PENDING"
