"""The platform split (harness.platform): machine and deployment, the BB placement rule as a
parameter of the machine, and platform files of the first format still loading."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pandas as pd
import pytest

from harness.platform import Deployment, PlatformError, load_platform, platform_from_dict
from harness.policies.allocation import choose_allocation
from harness.policies.registry import get_policy
from harness.policies.state import Allocation, Topology
from harness.sim.checks import check_schedule
from harness.sim.engine import simulate
from tests.platforms import platform_toml, tiny_machine

FIRST_FORMAT = """
[platform]
name = "small"
[topology]
groups = 1
chassis_per_group = 1
compute_per_chassis = 8
[compute]
prefix = "s"
digits = 2
cpus = 1
real_memory_mb = 1000
partition = "compute"
[burst_buffer]
prefix = "sbb"
digits = 1
capacity_mb = 40000
cpus = 1
real_memory_mb = 1000
partition = "bb"
license = "bb"
[network]
controller_host = "localhost"
controller_port = 7001
slurmd_base_port = 27001
[deploy]
node_containers = 2
"""


def test_first_format_loads_as_the_current_one(tmp_path: Path) -> None:
    old, new = tmp_path / "old.toml", tmp_path / "new.toml"
    old.write_text(FIRST_FORMAT)
    new.write_text(
        platform_toml(name="small", controller_port=7001, slurmd_base_port=27001, accounting_off=False)
    )
    assert load_platform(old) == load_platform(new)
    assert load_platform(old).deployment == Deployment("localhost", 7001, 27001, 2, "bb")


@pytest.mark.parametrize(
    ("cut", "message"),
    [
        ("[deployment]", r"missing table \[deployment\]"),
        ("[machine.topology]", r"missing table \[machine.topology\]"),
    ],
)
def test_missing_table_of_the_current_format_is_named(cut: str, message: str) -> None:
    small = platform_toml(name="small", controller_port=7001, slurmd_base_port=27001, accounting_off=False)
    text = small.replace(cut, "[unused]")
    with pytest.raises(PlatformError, match=message):
        platform_from_dict(tomllib.loads(text), source="p.toml")


def test_bb_per_chassis_must_be_positive() -> None:
    text = platform_toml(name="small", controller_port=7001, slurmd_base_port=27001)
    text = text.replace("[machine.burst_buffer]\n", "[machine.burst_buffer]\nper_chassis = 0\n")
    with pytest.raises(PlatformError, match=r"p.toml: machine.burst_buffer.per_chassis: must be positive"):
        platform_from_dict(tomllib.loads(text), source="p.toml")


def test_default_machine_keeps_one_bb_node_per_chassis() -> None:
    p = load_platform()
    assert (p.bb_per_chassis, p.bb_count, p.chassis_of_bb(11), p.bbs_of_chassis(5)) == (1, 12, 11, [5])
    assert p.machine.as_dict() | {"source": "<built-in default>"} == p.as_dict()


def test_two_bb_nodes_per_chassis_topology() -> None:
    m = tiny_machine(bb_per_chassis=2)  # chassis 0: c001, c002, bb01, bb02; chassis 1: c003, c004, bb03, bb04
    assert (m.compute_count, m.bb_count, m.bb_nodes()) == (4, 4, ["bb01", "bb02", "bb03", "bb04"])
    assert [m.chassis_of_bb(b) for b in range(4)] == [0, 0, 1, 1]
    assert [m.bb_distance(0, b) for b in range(4)] == [0, 0, 2, 2]
    assert m.bb_preference(2) == [2, 3, 0, 1]
    assert Topology.from_platform(m).bbs_of_chassis == ((0, 1), (2, 3))


def test_allocation_counts_every_local_bb_node_of_a_chassis() -> None:
    """BB 0 is full: chassis 0 keeps one share local, chassis 1 two, so chassis 1 is chosen."""
    topo = Topology.from_platform(tiny_machine(bb_per_chassis=2))
    alloc = choose_allocation(topo, [[0, 1], [2, 3]], [0, 100, 100, 100], nodes=2, share_mb=60)
    assert alloc == Allocation((2, 3), (2, 3))


def test_simulation_on_two_bb_nodes_per_chassis_is_valid() -> None:
    m = tiny_machine(bb_per_chassis=2)
    plan = pd.DataFrame({"job_id": [1, 2], "submit": [0.0, 0.0], "runtime": [10.0, 10.0],
                         "walltime": [20.0, 20.0], "nodes": [2, 2], "bb_per_node_mb": [60, 60]})  # fmt: skip
    jobs = simulate(plan, get_policy("fcfs"), m).jobs
    assert jobs["bb_nodes"].tolist() == ["c001:bb01,c002:bb02", "c003:bb03,c004:bb04"]
    assert jobs["start"].tolist() == [0.0, 0.0]
    assert check_schedule(jobs, m) == []


def test_redeployed_changes_only_the_deployment() -> None:
    p = load_platform()
    moved = p.redeployed(controller_port=6999, slurmd_base_port=40001)
    assert moved.machine == p.machine and moved.ports()["c001"] == 40001
    with pytest.raises(PlatformError, match="collides"):
        p.redeployed(controller_port=17005)


def test_save_platform_writes_the_redeployed_platform(tmp_path: Path) -> None:
    from harness.platform import platform_text
    from harness.platform.writing import save_platform

    moved = load_platform().redeployed(controller_port=6970, slurmd_base_port=25001)
    saved = save_platform(moved, tmp_path / "moved.toml")
    assert saved == moved and saved.source == str(tmp_path / "moved.toml")
    assert saved.deployment.controller_port == 6970 and saved.ports()["c001"] == 25001
    assert platform_text(saved) == (tmp_path / "moved.toml").read_text()
    assert load_platform(str(tmp_path / "moved.toml")).node_count == 108
