"""A Slurm site's own machine as a platform: slurm.conf and scontrol JSON read, the TOML round
trip, the rendered Slurm files (exact lines), the shipped platforms' renders unchanged, and
every bad input a one-line error naming file, line and key, with nothing written."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import __version__
from harness.cli import main
from harness.cluster.node import supervisor
from harness.platform import PlatformError, load_platform, platform_from_dict
from harness.platform.deployment import DEFAULT_DBD_PORT, Accounting
from harness.platform.from_slurm import read_site, site_from_conf, site_platform
from harness.platform.scontrol import read_scontrol
from harness.platform.site import Gres
from harness.platform.slurm_conf import (
    SlurmConfError,
    format_minutes,
    read_slurm_conf,
    slurm_minutes,
)
from harness.platform.writing import platform_to_toml, save_platform
from harness.slurm.config import GPU_STANDIN_DIR, NODES_CLOCK_ENV, SchedulerConfig, render_slurm_files
from harness.slurm.settings import VIRTUAL_BACKFILL_LIMITS, VIRTUAL_PASS_LIMITS

REPO = Path(__file__).resolve().parents[2]
BEFORE = REPO / "tests" / "data" / "platform_renders_before_site.json"

# The small heterogeneous example: 4 CPU nodes + 2 GPU nodes with 2 GPUs each, two partitions.
SITE = """\
# a small site (comments, DEFAULT lines, a continuation, case-insensitive keys)
ClusterName=mini
SlurmctldHost=head01
SchedulerType=sched/backfill
SchedulerParameters=bf_window=2880,bf_continue,\\
bf_max_job_test=500
PriorityType=priority/multifactor
PriorityWeightAge=1000 priorityweightfairshare=10000
GresTypes=gpu
Licenses=matlab:10,fluent
NodeName=DEFAULT Sockets=2 CoresPerSocket=8 ThreadsPerCore=1 RealMemory=64000
NodeName=cn[01-04] Features=skylake,ib Weight=10 NodeAddr=10.0.0.[1-4]  # addresses are replaced
nodename=gpu[01-02] CPUs=16 realmemory=256000 Gres=gpu:a100:2 Features=a100 Weight=100
PartitionName=DEFAULT MaxTime=1-00:00:00 State=UP
PartitionName=batch Nodes=cn[01-04] Default=YES DefaultTime=30:00 MaxNodes=4
PartitionName=gpu Nodes=gpu[01-02] MaxTime=UNLIMITED PriorityTier=2 OverSubscribe=NO AllowGroups=ALL
"""


def write(tmp_path: Path, text: str, name: str = "slurm.conf") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def mini(tmp_path: Path):
    return read_site(write(tmp_path, SITE))


# -- parsing -----------------------------------------------------------------------------------
def test_node_types_from_ranges_defaults_and_case(mini) -> None:
    cn, gpu = mini.site.node_types
    assert (cn.name, cn.nodes, cn.cpus, cn.real_memory_mb) == (
        "cn",
        ("cn01", "cn02", "cn03", "cn04"),
        16,
        64000,
    )
    assert (cn.sockets, cn.cores_per_socket, cn.threads_per_core) == (2, 8, 1)
    assert (cn.features, cn.gres, cn.weight) == (("skylake", "ib"), (), 10)
    assert (gpu.name, gpu.nodes, gpu.cpus, gpu.real_memory_mb) == ("gpu", ("gpu01", "gpu02"), 16, 256000)
    assert gpu.gres == (Gres("gpu", 2, "a100"),) and gpu.features == ("a100",) and gpu.weight == 100


def test_partitions_with_defaults_limits_and_default(mini) -> None:
    batch, gpu = mini.site.partitions
    assert (batch.name, batch.nodes, batch.default) == ("batch", ("cn01", "cn02", "cn03", "cn04"), True)
    assert (batch.max_time_min, batch.default_time_min, batch.max_nodes, batch.state) == (1440, 30, 4, "UP")
    assert (gpu.default, gpu.max_time_min, gpu.priority_tier, gpu.oversubscribe) == (False, None, 2, "NO")


def test_settings_kept_licenses_and_what_is_ignored(mini) -> None:
    assert mini.site.settings == (
        ("SchedulerType", "sched/backfill"),
        ("SchedulerParameters", "bf_window=2880,bf_continue,bf_max_job_test=500"),  # the continuation
        ("PriorityType", "priority/multifactor"),
        ("PriorityWeightAge", "1000"),
        ("PriorityWeightFairshare", "10000"),  # two pairs on one line, any case
    )
    assert mini.site.licenses == (("matlab", 10), ("fluent", 1))
    assert mini.site.gres_types == ("gpu",)
    assert mini.ignored == ("ClusterName", "SlurmctldHost", "NodeName:NodeAddr", "PartitionName:AllowGroups")
    assert mini.cluster_name == "mini" and mini.dropped == () and mini.notes == ()


def test_include_beside_the_file_is_read_and_comments_escaped(tmp_path: Path) -> None:
    (tmp_path / "conf.d").mkdir()
    write(tmp_path, "NodeName=n[08-10] CPUs=4 Reason=disk\\#3\n", "conf.d/nodes.conf")
    main_file = write(tmp_path, "include conf.d/nodes.conf\nPartitionName=p Nodes=ALL Default=YES # all\n")
    lines = read_slurm_conf(main_file)
    assert [str(line.where) for line in lines] == [f"{tmp_path / 'conf.d/nodes.conf'}:1", f"{main_file}:2"]
    site = read_site(main_file).site
    assert site.node_types[0].nodes == ("n08", "n09", "n10")
    assert site.partitions[0].nodes == ("n08", "n09", "n10")
    assert lines[0].pairs[-1] == ("Reason", "disk#3")


def test_quoted_values_and_two_lines_of_one_configuration_make_one_type(tmp_path: Path) -> None:
    text = (
        'NodeName=a[1-2] CPUs=4\nNodeName=a[3-4] CPUs=4\nNodeName=a5 CPUs=8\nPartitionName=p Nodes="a[1-5]"\n'
    )
    result = read_site(write(tmp_path, text))
    assert [(t.name, t.nodes) for t in result.site.node_types] == [
        ("a", ("a1", "a2", "a3", "a4")),
        ("a-2", ("a5",)),
    ]
    assert result.notes == ("no partition is Default=YES: p, the first, is the emulation's default",)


@pytest.mark.parametrize(
    ("text", "minutes"),
    [("90", 90), ("30:00", 30), ("30:01", 31), ("2:00:00", 120), ("1-0", 1440), ("1-2:30", 1590),
     ("2-00:00:00", 2880), ("UNLIMITED", None), ("infinite", None)],
)  # fmt: skip
def test_slurm_times(text: str, minutes: int | None) -> None:
    assert slurm_minutes(text) == minutes


def test_minutes_shown_as_slurm_does() -> None:
    assert [format_minutes(m) for m in (None, 30, 1440, 1590)] == [
        "INFINITE",
        "00:30:00",
        "1-00:00:00",
        "1-02:30:00",
    ]


@pytest.mark.parametrize(
    ("text", "gres"),
    [("gpu:a100:2", Gres("gpu", 2, "a100")), ("gpu:4", Gres("gpu", 4)), ("gpu", Gres("gpu", 1)),
     ("gpu:a100:2(S:0-1)", Gres("gpu", 2, "a100")),
     ("bw:lustre:no_consume:4K", Gres("bw", 4096, "lustre", True))],
)  # fmt: skip
def test_gres_forms(text: str, gres: Gres) -> None:
    assert Gres.parse(text) == gres


# -- scontrol JSON (Slurm 24.11, data_parser v0.0.42) --------------------------------------------
def _node(name: str, cpus: int, memory: int, gres: str = "", features: list[str] | None = None) -> dict:
    return {"name": name, "cpus": cpus, "sockets": 2, "cores": cpus // 2, "threads": 1, "real_memory": memory,
            "gres": gres, "features": features or [], "weight": 1, "state": ["IDLE"],
            "partitions": ["batch"] if name.startswith("cn") else ["gpu"], "port": 6818}  # fmt: skip


def _no_val(number: int | None, infinite: bool = False) -> dict:
    return {"set": number is not None or infinite, "infinite": infinite, "number": number or 0}


NODES = {
    "nodes": [_node(f"cn0{i}", 16, 64000, features=["skylake"]) for i in range(1, 5)]
    + [_node(f"gpu0{i}", 16, 256000, "gpu:a100:2(S:0-1)", ["a100"]) for i in (1, 2)],
    "meta": {"plugin": {"data_parser": "data_parser/v0.0.42"}},
    "errors": [],
    "warnings": [],
}
PARTITIONS = {
    "partitions": [
        {"name": "batch", "nodes": {"configured": "cn[01-04]", "total": 4},
         "maximums": {"time": _no_val(1440),
         "nodes": _no_val(4), "oversubscribe": {"jobs": 1, "flags": []}}, "defaults": {"time": _no_val(None)},
         "priority": {"tier": 1, "job_factor": 1}, "partition": {"state": ["UP"]},
         "accounts": {"allowed": "", "deny": ""}, "groups": {"allowed": "ALL"},
         "qos": {"allowed": "", "assigned": ""}},
        {"name": "gpu", "nodes": {"configured": "gpu[01-02]", "total": 2},
         "maximums": {"time": _no_val(None, True),
         "nodes": _no_val(None, True), "oversubscribe": {"jobs": 4, "flags": ["force"]}},
         "defaults": {"time": _no_val(60)}, "priority": {"tier": 2}, "partition": {"state": ["UP"]}},
    ],
}  # fmt: skip


def test_scontrol_json_two_files(tmp_path: Path) -> None:
    nodes = write(tmp_path, json.dumps(NODES), "nodes.json")
    parts = write(tmp_path, json.dumps(PARTITIONS), "partitions.json")
    result = read_scontrol([nodes, parts], default_partition="batch")
    cn, gpu = result.site.node_types
    assert (cn.nodes, cn.cpus, cn.real_memory_mb) == (("cn01", "cn02", "cn03", "cn04"), 16, 64000)
    assert cn.features == ("skylake",)
    assert (gpu.nodes, gpu.gres, result.site.gres_types) == (
        ("gpu01", "gpu02"),
        (Gres("gpu", 2, "a100"),),
        ("gpu",),
    )
    batch, gp = result.site.partitions
    assert (batch.default, batch.max_time_min, batch.max_nodes, batch.default_time_min) == (
        True,
        1440,
        4,
        None,
    )
    assert (batch.oversubscribe, batch.priority_tier) == ("NO", 1)
    assert (gp.default, gp.max_time_min, gp.max_nodes, gp.default_time_min) == (False, None, None, 60)
    assert (gp.oversubscribe, gp.priority_tier, gp.state) == ("FORCE:4", 2, "UP")
    assert result.notes == ()


def test_scontrol_json_one_file_holding_both_and_the_first_partition_default(tmp_path: Path) -> None:
    both = write(tmp_path, json.dumps(NODES | PARTITIONS), "both.json")
    result = read_scontrol([both])
    assert [p.name for p in result.site.partitions if p.default] == ["batch"]
    assert result.notes == ("scontrol's JSON does not say which partition is the default: batch, the first",)


def test_scontrol_nodes_only_partitions_from_the_nodes(tmp_path: Path) -> None:
    result = read_scontrol([write(tmp_path, json.dumps(NODES), "nodes.json")])
    assert [(p.name, p.hostlist, p.max_time_min) for p in result.site.partitions] == [
        ("batch", "cn[01-04]", None),
        ("gpu", "gpu[01-02]", None),
    ]


def test_scontrol_scheduling_field_refused_unless_dropped(tmp_path: Path) -> None:
    restricted = json.loads(json.dumps(PARTITIONS))
    restricted["partitions"][1]["groups"] = {"allowed": "physics"}
    path = write(tmp_path, json.dumps(NODES | restricted), "both.json")
    with pytest.raises(SlurmConfError, match=r"both.json: partitions\[1\].groups.allowed \(AllowGroups\)"):
        read_scontrol([path])
    assert read_scontrol([path], drop=["allowgroups"]).dropped == ("AllowGroups",)


# -- the platform and its TOML -------------------------------------------------------------------
def test_toml_round_trip_gives_the_same_platform(mini, tmp_path: Path) -> None:
    platform = site_platform(mini.site, "mini")
    loaded = save_platform(platform, tmp_path / "mini.toml")
    assert loaded.machine == platform.machine and loaded.site == mini.site
    assert platform_to_toml(loaded) == platform_to_toml(platform)
    assert loaded.compute_nodes() == ["cn01", "cn02", "cn03", "cn04", "gpu01", "gpu02"]
    assert loaded.bb_nodes() == ["bb01"] and loaded.compute_name(4) == "gpu01"
    assert (loaded.compute.cpus, loaded.compute.real_memory_mb, loaded.compute.partition) == (
        16,
        64000,
        "batch",
    )
    assert loaded.ports()["gpu02"] == 17006 and loaded.ports()["bb01"] == 17007


def test_a_bb_prefix_and_partition_the_site_does_not_use(tmp_path: Path) -> None:
    text = "NodeName=bb[01-02] CPUs=2\nPartitionName=bb Nodes=ALL Default=YES\n"
    platform = site_platform(read_site(write(tmp_path, text)).site, "bbsite")
    assert platform.bb_nodes() == ["hbb01"] and platform.bb.partition == "hbb"


def test_site_table_checked_like_every_platform_table(mini, tmp_path: Path) -> None:
    import tomllib

    data = tomllib.loads(platform_to_toml(site_platform(mini.site, "mini")))
    data["machine"]["site"]["node_types"][0]["cpu"] = 4
    with pytest.raises(PlatformError, match=r"node_types\[0\]: unknown key 'cpu' \(did you mean 'cpus'\?\)"):
        platform_from_dict(data, "p.toml")
    data = tomllib.loads(platform_to_toml(site_platform(mini.site, "mini")))
    data["machine"]["topology"] = {"groups": 1}
    with pytest.raises(PlatformError, match=r"\[machine.topology\] cannot be given with \[machine.site\]"):
        platform_from_dict(data, "p.toml")
    data = tomllib.loads(platform_to_toml(site_platform(mini.site, "mini")))
    data["machine"]["site"]["partitions"][1]["nodes"] = "gpu[01-03]"
    with pytest.raises(PlatformError, match=r"partitions.gpu.nodes: unknown node\(s\) gpu03"):
        platform_from_dict(data, "p.toml")


# -- the rendered files ------------------------------------------------------------------------
def _lines(text: str, prefix: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(prefix)]


def test_rendered_slurm_conf_has_the_sites_nodes_partitions_and_gres(mini) -> None:
    files = render_slurm_files(site_platform(mini.site, "mini"))
    conf = files["slurm.conf"]
    assert _lines(conf, "NodeName=") == [
        "NodeName=cn[01-04] NodeHostname=localhost NodeAddr=127.0.0.1 Port=[17001-17004] CPUs=16 Sockets=2 "
        "CoresPerSocket=8 ThreadsPerCore=1 RealMemory=64000 Features=skylake,ib Weight=10 State=UNKNOWN",
        "NodeName=gpu[01-02] NodeHostname=localhost NodeAddr=127.0.0.1 Port=[17005-17006] CPUs=16 Sockets=2 "
        "CoresPerSocket=8 ThreadsPerCore=1 RealMemory=256000 Features=a100 Gres=gpu:a100:2 "
        "Weight=100 State=UNKNOWN",
        "NodeName=bb01 NodeHostname=localhost NodeAddr=127.0.0.1 Port=17007 CPUs=1 "
        "RealMemory=1000 Gres=bb:40000 "
        "State=UNKNOWN",
    ]
    assert _lines(conf, "PartitionName=") == [
        "PartitionName=batch Nodes=cn[01-04] Default=YES MaxTime=1-00:00:00 "
        "DefaultTime=00:30:00 MaxNodes=4 State=UP",
        "PartitionName=gpu Nodes=gpu[01-02] Default=NO MaxTime=INFINITE OverSubscribe=NO "
        "PriorityTier=2 State=UP",
        "PartitionName=bb Nodes=bb01 Default=NO MaxTime=INFINITE OverSubscribe=EXCLUSIVE State=UP",
    ]
    assert _lines(conf, "Licenses=") == ["Licenses=bb:40000,matlab:10,fluent:1"]
    assert _lines(conf, "GresTypes=") == ["GresTypes=bb,gpu"]
    assert "#   PriorityWeightFairshare=10000" in conf.splitlines()  # kept, shown, not applied
    assert _lines(conf, "PriorityType=") == ["PriorityType=priority/basic"]  # the harness's own
    assert files["gres.conf"].splitlines()[1:] == [
        "# No GPU is probed: every GRES of the site is declared here (GPUs are emulated without GPUs).",
        "AutoDetect=off",
        "# Count-only GRES: the BB capacity of each burst-buffer node, in MB.",
        "NodeName=bb01 Name=bb Count=40000",
        "# The site's GRES. A GPU's File= is a stand-in, a link to /dev/null that each node container",
        "# makes in /run/slurm/gres: slurmd counts and indexes it as a device, nothing binds it",
        "# (task/none, no cgroup device constraint), so jobs are scheduled and placed as on real GPUs.",
        "NodeName=gpu[01-02] Name=gpu Type=a100 File=/run/slurm/gres/gpu[0-1] Count=2",
    ]


def test_the_urgent_tier_over_the_default_partition(mini) -> None:
    tiers = render_slurm_files(site_platform(mini.site, "mini"), SchedulerConfig(priority_tiers=True))
    assert _lines(tiers["slurm.conf"], "PartitionName=urgent") == [
        "PartitionName=urgent Nodes=cn[01-04] Default=NO MaxTime=INFINITE PriorityTier=3 State=UP"
    ]
    preempt = render_slurm_files(site_platform(mini.site, "mini"), SchedulerConfig(preempt_suspend=True))
    conf = preempt["slurm.conf"]
    assert "PreemptMode=SUSPEND,GANG" in conf.splitlines()
    assert _lines(conf, "PartitionName=batch")[0].endswith("MaxNodes=4 OverSubscribe=FORCE:1 State=UP")
    assert _lines(conf, "PartitionName=urgent") == [
        "PartitionName=urgent Nodes=cn[01-04] Default=NO MaxTime=INFINITE OverSubscribe=FORCE:1 "
        "PriorityTier=3 State=UP"
    ]


def test_own_node_files_carry_each_nodes_gres(mini) -> None:
    platform = site_platform(mini.site, "mini").redeployed(slurmd_conf="own-node")
    files = render_slurm_files(platform)
    own = files["nodes/slurm-gpu02.conf"]
    assert _lines(own, "NodeName=") == [
        "NodeName=gpu02 NodeHostname=localhost NodeAddr=127.0.0.1 Port=17006 CPUs=16 Sockets=2 "
        "CoresPerSocket=8 "
        "ThreadsPerCore=1 RealMemory=256000 Features=a100 Gres=gpu:a100:2 Weight=100 State=UNKNOWN"
    ]
    assert _lines(own, "PartitionName=") == [] and _lines(own, "GresTypes=") == ["GresTypes=bb,gpu"]
    assert files["nodes/gres.conf"] == files["gres.conf"]
    assert sorted(n for n in files if n.startswith("nodes/slurm-")) == [
        f"nodes/slurm-{n}.conf" for n in sorted(platform.all_nodes())
    ]
    assert _lines(files["slurm.conf"], "NodeName=cn")[0].startswith(
        "NodeName=cn[01-04] "
    )  # the controller's: all


def test_gpu_standins_made_by_the_supervisor(mini, tmp_path: Path) -> None:
    assert supervisor.GPU_STANDIN_DIR == GPU_STANDIN_DIR
    gres = write(tmp_path, render_slurm_files(site_platform(mini.site, "mini"))["gres.conf"], "gres.conf")
    made = supervisor.make_gpu_standins(gres, root=tmp_path / "root")
    assert [str(p.relative_to(tmp_path / "root")) for p in made] == [
        "run/slurm/gres/gpu0",
        "run/slurm/gres/gpu1",
    ]
    assert all(os.readlink(p) == "/dev/null" for p in made)
    assert supervisor.make_gpu_standins(gres, root=tmp_path / "root") == made  # again: nothing breaks
    assert supervisor.make_gpu_standins(tmp_path / "absent.conf") == []


def test_two_gpu_types_on_a_node_get_distinct_standins(tmp_path: Path) -> None:
    text = (
        "GresTypes=gpu,nvme\nNodeName=g1 CPUs=8 Gres=gpu:a100:2,gpu:v100:1,nvme:1\nPartitionName=p Nodes=g1\n"
    )
    gres = render_slurm_files(site_platform(read_site(write(tmp_path, text)).site, "two"))["gres.conf"]
    assert _lines(gres, "NodeName=g1") == [
        "NodeName=g1 Name=gpu Type=a100 File=/run/slurm/gres/gpu[0-1] Count=2",
        "NodeName=g1 Name=gpu Type=v100 File=/run/slurm/gres/gpu2 Count=1",
        "NodeName=g1 Name=nvme Count=1",
    ]
    assert supervisor.gpu_standins(gres) == [f"{GPU_STANDIN_DIR}/gpu{i}" for i in range(3)]


def test_accounting_tracks_every_site_gres_by_name_and_type(mini, tmp_path: Path) -> None:
    """sacct keeps a job's GPUs only when AccountingStorageTRES names them (the round trip,
    tests/integration/test_sacct_roundtrip.py): each GRES name once, each typed one too."""
    conf = render_slurm_files(site_platform(mini.site, "mini"))["slurm.conf"]
    assert _lines(conf, "AccountingStorageTRES=") == [
        "AccountingStorageTRES=license/bb,gres/gpu,gres/gpu:a100"
    ]
    text = (
        "GresTypes=gpu,nvme\nNodeName=g1 CPUs=8 Gres=gpu:a100:2,gpu:v100:1,nvme:1\nNodeName=g2 Gres=gpu:1\n"
    )
    two = render_slurm_files(
        site_platform(read_site(write(tmp_path, text + "PartitionName=p Nodes=g[1-2]\n")).site, "t")
    )
    assert _lines(two["slurm.conf"], "AccountingStorageTRES=") == [
        "AccountingStorageTRES=license/bb,gres/gpu,gres/gpu:a100,gres/gpu:v100,gres/nvme"
    ]


# -- the shipped platforms: loaded and rendered byte for byte as before -------------------------
SCHEDS = {
    "default": SchedulerConfig(),
    "builtin": SchedulerConfig(mode="builtin"),
    "preempt": SchedulerConfig(preempt_suspend=True),
    "tiers": SchedulerConfig(priority_tiers=True),
    "lua": SchedulerConfig(burst_buffer="lua"),
    "bw": SchedulerConfig(bandwidth_license=True, reserve_depth=2),
    "virtual": SchedulerConfig(clock="virtual", external_ordering=True),
}


def _digest(files: dict[str, str]) -> str:
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + files[name].replace(__version__, "VERSION").encode() + b"\0")
    return h.hexdigest()


def without_pass_limits(conf: str) -> str:
    """slurm.conf without the virtual clock's SchedulerParameters limits (added 2026-11-30)."""
    for key, value in {**VIRTUAL_PASS_LIMITS, **VIRTUAL_BACKFILL_LIMITS}.items():
        conf = conf.replace(f",{key}={value}", "")
    return conf


def test_shipped_platforms_render_as_before_the_site_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fingerprints were taken from the renders before [machine.site] existed."""
    before = json.loads(BEFORE.read_text())
    monkeypatch.chdir(REPO)  # the benchmark platforms are named relative to the repository
    checked = 0
    for key, digest in before.items():
        source, what = key.split("|")
        # accounting was off by default then
        platform = load_platform(source).redeployed(
            accounting=Accounting(enabled=False, dbd_port=DEFAULT_DBD_PORT)
        )
        if what == "toml":
            got = hashlib.sha256(platform_to_toml(platform, "c").encode()).hexdigest()
        elif what == "dict":
            got = hashlib.sha256(json.dumps(platform.as_dict(), sort_keys=True).encode()).hexdigest()
        else:  # every file rendered then is rendered the same (the slurmd's preload file and
            # the virtual clock's pass limits came later)
            files = render_slurm_files(platform, SCHEDS[what], "bbemu")
            files["slurm.conf"] = without_pass_limits(files["slurm.conf"])
            got = _digest({name: text for name, text in files.items() if name != NODES_CLOCK_ENV})
        assert got == digest, key
        checked += 1
    assert checked == len(before) >= 40


# -- bad input: one line naming file, line and key; nothing written ------------------------------
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("NodeName=n1 CPUs=4 garbage\n", "slurm.conf:1: syntax error at 'garbage': expected Key=Value"),
        ("NodeName=n[1-2]\nPartitionName=p Nodes=n[1-3]\n",
         "slurm.conf:2: Nodes: unknown node n3 (no NodeName line declares it)"),
        ("NodeName=n[3-1]\n", "slurm.conf:1: NodeName: bad range: descending range '3-1' in 'n[3-1]'"),
        ("NodeName=n1\nPartitionName=p Nodes=n1 MaxTime=1:2:3:4\n",
         "slurm.conf:2: MaxTime: '1:2:3:4' is not"),
        ("NodeName=n1 Gres=gpu:2\nPartitionName=p Nodes=n1\n", "slurm.conf:1: Gres: gpu is not in GresTypes"),
        ("NodeName=n1\nNodeName=n1\n", "slurm.conf:2: NodeName: node n1 is already declared at"),
        ("NodeName=n1 CPUs=four\n", "slurm.conf:1: CPUs: 'four' is not a whole number"),
        ("NodeName=n1 Sockts=2\n", "slurm.conf:1: Sockts: not a NodeName key this reader knows"),
        ("NodeName=n1 State=FUTURE\n",
         "slurm.conf:1: State: 'FUTURE': FUTURE and CLOUD nodes are not emulated"),
        ("Include missing.conf\n", "slurm.conf:1: Include: missing.conf: no such file beside"),
        ("NodeName=n1\nPartitionName=p Nodes=n1 QOS=normal\n",
         "slurm.conf:2: QOS: changes scheduling and is not emulated: limits who may run there"),
        ("TopologyPlugin=topology/tree\nNodeName=n1\nPartitionName=p Nodes=n1\n",
         "slurm.conf:1: TopologyPlugin: changes scheduling and is not emulated: places jobs by the network"),
        ("ClusterName=x\n", "no NodeName lines"),
    ],
)  # fmt: skip
def test_bad_slurm_conf_is_one_line_exit_2_and_nothing_overwritten(
    tmp_path: Path, text: str, message: str
) -> None:
    conf = write(tmp_path, text)
    out = write(tmp_path, "previous = 1\n", "site.toml")
    result = invoke("platform", "from-slurm", str(conf), "-o", str(out))
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0], lines
    assert "Traceback" not in result.output and out.read_text() == "previous = 1\n"


def test_a_scheduling_key_dropped_knowingly_is_listed(tmp_path: Path) -> None:
    conf = write(tmp_path, "NodeName=n1\nPartitionName=p Nodes=n1 Default=YES QOS=normal\n")
    result = site_from_conf(read_slurm_conf(conf), drop=["QOS"])
    assert result.dropped == ("QOS",) and result.site.partitions[0].nodes == ("n1",)


def test_bad_scontrol_json_is_one_line(tmp_path: Path) -> None:
    garbage = write(tmp_path, "{not json", "n.json")
    result = invoke("platform", "from-slurm", "--scontrol", str(garbage), "-o", str(tmp_path / "o.toml"))
    assert result.exit_code == 2 and result.output.startswith(f"Error: {garbage}: not JSON")
    assert not (tmp_path / "o.toml").exists()
    unknown = json.loads(json.dumps(PARTITIONS))
    unknown["partitions"][0]["nodes"]["configured"] = "cn[01-05]"
    both = write(tmp_path, json.dumps(NODES | unknown), "both.json")
    result = invoke("platform", "from-slurm", "--scontrol", str(both), "-o", str(tmp_path / "o.toml"))
    assert result.exit_code == 2 and "partitions[0].nodes.configured: unknown node cn05" in result.output


# -- the command -------------------------------------------------------------------------------
def test_from_slurm_writes_a_platform_cluster_and_run_accept(tmp_path: Path) -> None:
    conf = write(tmp_path, SITE)
    out = tmp_path / "site.toml"
    result = invoke("platform", "from-slurm", str(conf), "-o", str(out))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"{out}: platform 'mini'"
    assert "node types   cn: 4 x 16 CPUs, 64,000 MB, features skylake,ib, weight 10 (cn[01-04])" in lines
    assert (
        "             gpu: 2 x 16 CPUs, 256,000 MB, features a100, gres gpu:a100:2, weight 100 (gpu[01-02])"
        in lines
    )
    assert "partitions   batch (default): cn[01-04], MaxTime 1-00:00:00, MaxNodes 4, UP" in lines
    assert "GRES         gpu: 4 (2 nodes x gpu:a100:2)" in lines
    assert (
        "ignored      ClusterName, SlurmctldHost, NodeName:NodeAddr, PartitionName:AllowGroups (not modelled)"
        in lines
    )
    platform = load_platform(out)
    assert platform.site is not None and platform.name == "mini"
    shown = invoke("platform", "show", str(out))
    assert shown.exit_code == 0 and "GRES         gpu: 4 (2 nodes x gpu:a100:2)" in shown.output
    # without -o: the TOML on stdout (the summary on stderr)
    piped = CliRunner().invoke(main, ["platform", "from-slurm", str(conf)])
    assert piped.exit_code == 0 and piped.stdout == out.read_text()
