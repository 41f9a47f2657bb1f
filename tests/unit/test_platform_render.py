"""Rendering the Slurm files from platform descriptions: exact node lists, ports, licenses, GRES."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.cluster.containers.state_dir import render_compose
from harness.model.hostlist import compress_hostlist as hostlist
from harness.model.paths import repo_path
from harness.platform import PlatformError, load_platform, platform_from_dict
from harness.slurm.config import NodeLine, SchedulerConfig, render_slurm_files
from harness.slurm.config import node_lines as group_node_lines
from tests.platforms import slurm_nodes

SMALL = """
[platform]
name = "tiny"
[topology]
groups = 1
chassis_per_group = 1
compute_per_chassis = 8
[compute]
prefix = "n"
digits = 2
cpus = 4
real_memory_mb = 2000
partition = "batch"
[burst_buffer]
prefix = "ssd"
digits = 1
capacity_mb = 1000
cpus = 1
real_memory_mb = 500
partition = "ssd"
license = "bbmb"
[network]
controller_host = "localhost"
controller_port = 7817
slurmd_base_port = 20000
[deploy]
node_containers = 2
"""


@pytest.fixture
def small(tmp_path: Path):
    path = tmp_path / "tiny.toml"
    path.write_text(SMALL)
    return load_platform(path)


def node_lines(conf: str) -> list[str]:
    return [line for line in conf.splitlines() if line.startswith("NodeName=")]


def test_default_platform_sizes() -> None:
    p = load_platform()
    assert (p.compute_count, p.bb_count, p.node_count) == (96, 12, 108)
    assert p.bb_total_mb == 480_000
    assert p.compute_nodes()[0] == "c001" and p.compute_nodes()[-1] == "c096"
    assert p.bb_nodes() == [f"bb{i:02d}" for i in range(1, 13)]


def test_default_topology_nearest_bb() -> None:
    p = load_platform()
    # compute node 9 (c010) sits in chassis 1 of group 0: its own BB node first, then group 0's.
    assert p.bb_preference(9)[:4] == [1, 0, 2, 3]
    assert p.bb_distance(9, 1) == 0 and p.bb_distance(9, 3) == 1 and p.bb_distance(9, 4) == 2
    # compute node 95 (c096) is in the last chassis, 11, of group 2.
    assert p.bb_preference(95)[:4] == [11, 8, 9, 10]


def test_default_slurm_conf_nodes_ports_licenses() -> None:
    files = render_slurm_files(load_platform())
    conf = files["slurm.conf"]
    # Two ranged lines, not 108: every Slurm command parses the file at ~0.1 ms per line.
    assert node_lines(conf) == [
        "NodeName=c[001-096] NodeHostname=localhost NodeAddr=127.0.0.1 Port=[17001-17096] CPUs=1 "
        "RealMemory=1000 State=UNKNOWN",
        "NodeName=bb[01-12] NodeHostname=localhost NodeAddr=127.0.0.1 Port=[17097-17108] CPUs=1 "
        "RealMemory=1000 Gres=bb:40000 State=UNKNOWN",
    ]
    nodes = slurm_nodes(conf)
    assert list(nodes) == load_platform().all_nodes()
    assert {n: int(a["Port"]) for n, a in nodes.items()} == load_platform().ports()
    assert nodes["c096"]["Port"] == "17096" and nodes["bb01"]["Port"] == "17097"
    assert "Gres" not in nodes["c001"] and nodes["bb12"]["Gres"] == "bb:40000"
    assert "Licenses=bb:480000" in conf.splitlines()
    assert "GresTypes=bb" in conf.splitlines()
    assert "CommunicationParameters=NoCtldInAddrAny,NoInAddrAny" in conf.splitlines()
    assert re.search(r"^PartitionName=compute Nodes=c\[001-096\] Default=YES", conf, re.M)
    assert re.search(r"^PartitionName=bb Nodes=bb\[01-12\] Default=NO", conf, re.M)
    assert files["gres.conf"].splitlines()[-1] == "NodeName=bb[01-12] Name=bb Count=40000"


def test_node_lines_split_at_address_name_and_port_breaks() -> None:
    names = ["c8", "c9", "c10", "c11", "d01", "d02", "d04", "x"]
    ports = {n: 100 + i for i, n in enumerate(names)}
    ports["d04"] = 110  # d04 follows d02 in the list but neither in name nor in port
    addresses = {"c11": "127.0.0.2"}
    assert group_node_lines(names, ports, addresses) == [
        NodeLine("c[8-9]", "[100-101]"),
        NodeLine("c10", "102"),  # c9 -> c10 changes the digit width: a new line
        NodeLine("c11", "103", "127.0.0.2"),
        NodeLine("d[01-02]", "[104-105]"),
        NodeLine("d04", "110"),
        NodeLine("x", "107"),
    ]


def test_no_address_other_than_loopback() -> None:
    for text in render_slurm_files(load_platform()).values():
        addresses = set(re.findall(r"\b\d{1,3}(?:\.\d{1,3}){3}\b", text))
        assert addresses <= {"127.0.0.1"}


def test_small_platform_renders_exactly(small) -> None:
    files = render_slurm_files(small, SchedulerConfig(mode="builtin"), cluster_name="tiny")
    conf = files["slurm.conf"]
    assert node_lines(conf) == [
        "NodeName=n[01-08] NodeHostname=localhost NodeAddr=127.0.0.1 Port=[20000-20007] CPUs=4 "
        "RealMemory=2000 State=UNKNOWN",
        "NodeName=ssd1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=20008 CPUs=1 RealMemory=500 "
        "Gres=bbmb:1000 State=UNKNOWN",
    ]
    assert "Licenses=bbmb:1000" in conf.splitlines()
    assert "SlurmctldPort=7817" in conf.splitlines()
    assert "SchedulerType=sched/builtin" in conf.splitlines()
    assert "SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,default_queue_depth=1000" in conf
    assert "bf_" not in conf.split("SchedulerParameters=")[1].splitlines()[0]
    assert re.search(r"^PartitionName=batch Nodes=n\[01-08\] Default=YES", conf, re.M)
    assert files["gres.conf"].splitlines()[-1] == "NodeName=ssd1 Name=bbmb Count=1000"
    assert 'local BB_LICENSE = "bbmb"' in files["job_submit.lua"]
    assert "local BB_TOTAL_MB = 1000" in files["job_submit.lua"]
    assert small.node_groups() == [[f"n{i:02d}" for i in range(1, 6)], ["n06", "n07", "n08", "ssd1"]]


def test_scheduler_parameters_backfill_variants() -> None:
    with_reserve = SchedulerConfig(reserve_depth=4).scheduler_parameters.split(",")
    assert "bf_licenses" in with_reserve and "bf_job_part_count_reserve=4" in with_reserve
    assert "bf_resolution=1" in with_reserve and "batch_sched_delay=0" in with_reserve
    no_future = SchedulerConfig(bf_licenses=False, reserve_depth=1).scheduler_parameters.split(",")
    assert "bf_licenses" not in no_future and "bf_job_part_count_reserve=1" in no_future
    with pytest.raises(ValueError):
        SchedulerConfig(mode="fifo")  # type: ignore[arg-type]


def test_virtual_clock_gives_slurm_passes_their_real_time_length_at_x100() -> None:
    """bf_max_time, bf_yield_interval and max_sched_time count slurmctld's (virtual) seconds:
    at x100 Slurm's defaults (1 s, 2 s, 2 s) would cut a cycle after 10-20 real ms."""
    wall = SchedulerConfig().scheduler_parameters.split(",")
    assert not any(p.startswith(("bf_max_time", "bf_yield_interval", "max_sched_time")) for p in wall)
    virtual = SchedulerConfig(clock="virtual").scheduler_parameters.split(",")
    assert {"bf_max_time=100", "bf_yield_interval=10000000", "max_sched_time=150"} <= set(virtual)
    builtin = SchedulerConfig(mode="builtin", clock="virtual").scheduler_parameters.split(",")
    assert "max_sched_time=150" in builtin and not any(p.startswith("bf_") for p in builtin)
    settings = (("SchedulerParameters.bf_max_time", 1),)
    chosen = SchedulerConfig(clock="virtual", settings=settings).scheduler_parameters.split(",")
    assert "bf_max_time=1" in chosen and "bf_max_time=100" not in chosen  # a cell's setting wins


def test_external_ordering_switches_priority_and_holds() -> None:
    files = render_slurm_files(load_platform(), SchedulerConfig(external_ordering=True))
    assert "PriorityType=priority/multifactor" in files["slurm.conf"].splitlines()
    assert "PriorityWeightAge=0" in files["slurm.conf"].splitlines()
    assert "local EXTERNAL_ORDERING = true" in files["job_submit.lua"]
    plain = render_slurm_files(load_platform())
    assert "PriorityType=priority/basic" in plain["slurm.conf"].splitlines()
    assert "local EXTERNAL_ORDERING = false" in plain["job_submit.lua"]


def test_preempt_suspend_adds_an_urgent_tier_over_the_compute_nodes() -> None:
    conf = render_slurm_files(load_platform(), SchedulerConfig(preempt_suspend=True))["slurm.conf"]
    lines = conf.splitlines()
    assert "PreemptType=preempt/partition_prio" in lines and "PreemptMode=SUSPEND,GANG" in lines
    partitions = [line for line in lines if line.startswith("PartitionName=")]
    assert partitions[:2] == [
        "PartitionName=compute Nodes=c[001-096] Default=YES MaxTime=INFINITE OverSubscribe=FORCE:1 "
        "PriorityTier=1 State=UP",
        "PartitionName=urgent Nodes=c[001-096] Default=NO MaxTime=INFINITE OverSubscribe=FORCE:1 "
        "PriorityTier=2 State=UP",
    ]
    plain = render_slurm_files(load_platform())["slurm.conf"]
    assert "Preempt" not in plain and "urgent" not in plain


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["c001", "c002", "c003"], "c[001-003]"),
        (["c001", "c003"], "c001,c003"),
        (["bb01", "bb02", "c001"], "bb[01-02],c001"),
        (["head"], "head"),
        ([], ""),
    ],
)
def test_hostlist(names: list[str], expected: str) -> None:
    assert hostlist(names) == expected


def test_committed_compose_file_is_the_default_render() -> None:
    committed = repo_path("containers", "compose.yaml").read_text()
    assert committed == render_compose(load_platform(), "bbemu", "harness-slurm:latest", "./state")
    assert "network_mode: host" in committed
    assert "networks:" not in committed


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ("controller_port = 7817", "controller_port = 20003"),
        ('prefix = "ssd"', 'prefix = "n"'),
        ("digits = 1", "digits = 0"),
    ],
)
def test_bad_platform_is_rejected_clearly(patch: str, message: str) -> None:
    import tomllib

    data = tomllib.loads(SMALL.replace(patch, message))
    with pytest.raises(PlatformError):
        platform_from_dict(data)


def test_missing_table_named(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(SMALL.replace("[deploy]\nnode_containers = 2\n", ""))
    with pytest.raises(PlatformError, match=r"missing table \[deploy\]"):
        load_platform(path)


def _own_node(platform_text: str) -> str:
    """The platform with ``slurmd_conf = "own-node"`` in its [deployment]."""
    return platform_text.replace("[deployment]\n", '[deployment]\nslurmd_conf = "own-node"\n')


def test_own_node_confs_give_each_slurmd_its_own_node_only(tmp_path: Path) -> None:
    from harness.platform.writing import save_platform
    from tests.platforms import platform_toml

    text = _own_node(platform_toml(name="own", controller_port=6900, slurmd_base_port=17001))
    (tmp_path / "own.toml").write_text(text)
    platform = load_platform(tmp_path / "own.toml")
    files = render_slurm_files(platform)
    shared = files["slurm.conf"]
    assert "TreeWidth=65533" in shared and "DebugFlags=NO_CONF_HASH" in shared
    assert len(re.findall(r"^NodeName=", shared, re.M)) >= 2  # the controller's lists every node
    nodes = [*platform.compute_nodes(), *platform.bb_nodes()]
    assert sorted(k for k in files if k.startswith("nodes/slurm-")) == sorted(
        f"nodes/slurm-{n}.conf" for n in nodes
    )
    assert (
        files["nodes/gres.conf"] == files["gres.conf"] and files["nodes/cgroup.conf"] == files["cgroup.conf"]
    )
    for node in nodes:
        own = files[f"nodes/slurm-{node}.conf"]
        lines = re.findall(r"^NodeName=\S+ .* Port=(\d+)", own, re.M)
        assert re.findall(r"^NodeName=(\S+)", own, re.M) == [node]
        assert lines == [str(platform.node_port(node))]
        assert "PartitionName=" not in own
    # 8 compute nodes s01..s08 from port 17001, then the BB node sbb1 at 17009
    assert (
        "NodeName=sbb1 " in files["nodes/slurm-sbb1.conf"] and "Port=17009" in files["nodes/slurm-sbb1.conf"]
    )
    save_platform(platform, tmp_path / "again.toml")
    assert load_platform(tmp_path / "again.toml").deployment.slurmd_conf == "own-node"


def test_a_shared_deployment_has_no_own_node_files_and_writing_removes_stale_ones(tmp_path: Path) -> None:
    from harness.slurm.config import write_slurm_files

    files = render_slurm_files(load_platform())
    assert not any(k.startswith("nodes/") for k in files) and "TreeWidth" not in files["slurm.conf"]
    stale = tmp_path / "nodes" / "slurm-c001.conf"
    stale.parent.mkdir()
    stale.write_text("old\n")
    write_slurm_files(tmp_path, files)
    assert not (tmp_path / "nodes").exists() and (tmp_path / "slurm.conf").exists()


def test_an_unknown_slurmd_conf_mode_is_refused() -> None:
    from tests.platforms import platform_toml

    text = platform_toml(name="x", controller_port=6900, slurmd_base_port=17001).replace(
        "[deployment]\n", '[deployment]\nslurmd_conf = "mine"\n'
    )
    with pytest.raises(PlatformError, match=r"slurmd_conf must be one of shared, own-node, got 'mine'"):
        platform_from_dict(__import__("tomllib").loads(text), "<test>")
