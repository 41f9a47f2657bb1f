"""What ``harness cluster render-ansible`` writes for the playbook: layouts, placed Slurm files,
reproducible sources, a munge key kept across runs, and a 3,600-node platform over 10 workers."""

from __future__ import annotations

import io
import json
import re
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.cluster.ansible_render import variables as av
from harness.model.paths import repo_path
from harness.platform import load_platform
from harness.slurm.config import SchedulerConfig, render_slurm_files
from tests.platforms import platform_toml, slurm_nodes

# Kopański's emulation ran 360 slurmd per VM on 10 VMs; with one BB node per chassis of 8
# compute nodes that is 400 chassis: 3,200 compute + 400 BB nodes.
BIG_PLATFORM = platform_toml(
    name="raijin-3600",
    groups=20,
    chassis_per_group=20,
    compute_prefix="c",
    compute_digits=4,
    cpus=16,
    bb_prefix="bb",
    bb_digits=3,
    controller_port=6817,
    slurmd_base_port=17001,
    node_containers=10,
)


@pytest.fixture
def big(tmp_path: Path):
    path = tmp_path / "big.toml"
    path.write_text(BIG_PLATFORM)
    return load_platform(path)


def cloud_workers(count: int) -> list[av.HostSpec]:
    return [av.HostSpec(f"w{i:02d}", f"w{i:02d}.example.org") for i in range(1, count + 1)]


HEAD = av.HostSpec("head", "head.example.org")


def node_addr(conf: str) -> dict[str, str]:
    return {name: attrs["NodeAddr"] for name, attrs in slurm_nodes(conf).items()}


# -- layouts --------------------------------------------------------------------------------
def test_even_layout_keeps_node_order_and_consecutive_ports() -> None:
    p = load_platform()
    layout = av.plan_layout(p, av.HostSpec("head", "127.0.0.1"), av.even_workers(2))
    assert [len(w.nodes) for w in layout.workers] == [54, 54]
    assert layout.workers[0].nodes[0] == "c001" and layout.workers[1].nodes[-1] == "bb12"
    data = layout.as_dict(p, "bbemu")
    assert data["workers"]["worker1"]["first_port"] == 17001
    assert data["workers"]["worker1"]["last_port"] == 17054
    assert data["workers"]["worker2"]["first_port"] == 17055
    assert data["workers"]["worker2"]["last_port"] == 17108
    assert data["workers"]["worker1"]["hostlist"] == "c[001-054]"
    assert data["head"] == {"name": "head", "address": "127.0.0.1", "controller_port": 6817}


def test_uneven_split_gives_the_remainder_to_the_first_workers() -> None:
    layout = av.plan_layout(load_platform(), HEAD, cloud_workers(5))
    assert [len(w.nodes) for w in layout.workers] == [22, 22, 22, 21, 21]


def test_explicit_slurmd_counts_and_the_rest_shared() -> None:
    specs = [av.HostSpec("big", "a.example.org", 60), av.HostSpec("s1", "b"), av.HostSpec("s2", "c")]
    layout = av.plan_layout(load_platform(), HEAD, specs)
    assert [len(w.nodes) for w in layout.workers] == [60, 24, 24]
    assert sum(len(w.nodes) for w in layout.workers) == 108


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        ([100, 20], "add up to 120"),
        ([50, 50], "add up to 100"),
        ([108, None], "0 node(s) left for 1"),
        ([0, None], "must be positive"),
    ],
)
def test_impossible_counts_are_refused(counts: list[int | None], message: str) -> None:
    specs = [av.HostSpec(f"w{i}", "x", c) for i, c in enumerate(counts)]
    with pytest.raises(av.LayoutError, match=re.escape(message)):
        av.plan_layout(load_platform(), HEAD, specs)


def test_no_workers_or_repeated_names_are_refused() -> None:
    with pytest.raises(av.LayoutError, match="no worker hosts"):
        av.plan_layout(load_platform(), HEAD, [])
    with pytest.raises(av.LayoutError, match="repeat"):
        av.plan_layout(load_platform(), HEAD, [av.HostSpec("w", "a"), av.HostSpec("w", "b")])


def test_layout_round_trips_through_cluster_json() -> None:
    p = load_platform()
    layout = av.plan_layout(p, HEAD, cloud_workers(3))
    assert av.Layout.from_dict(json.loads(json.dumps(layout.as_dict(p, "x")))) == layout
    with pytest.raises(av.LayoutError, match="not a harness cluster"):
        av.Layout.from_dict({"head": {}})


def test_hosts_json_from_the_playbook() -> None:
    head, workers = av.hosts_from_json(
        json.dumps(
            {
                "head": {"name": "h", "address": "h.example.org"},
                "workers": [
                    {"name": "a", "address": "a.example.org", "slurmd_count": ""},
                    {"name": "b", "address": "b.example.org", "slurmd_count": "40"},
                    {"name": "c", "address": "c.example.org"},
                ],
            }
        )
    )
    assert head == av.HostSpec("h", "h.example.org")
    assert [w.slurmd_count for w in workers] == [None, 40, None]
    with pytest.raises(av.LayoutError, match="hosts JSON"):
        av.hosts_from_json('{"head": {}}')
    with pytest.raises(av.LayoutError):
        av.hosts_from_json('{"head": {"name": "h", "address": "a"}, "workers": [{"name": "a", '
                           '"address": "b", "slurmd_count": "1.5"}]}')  # fmt: skip


# -- Slurm files -----------------------------------------------------------------------------
def test_loopback_layout_gives_exactly_the_docker_files() -> None:
    p = load_platform()
    sched = SchedulerConfig(reserve_depth=1)
    layout = av.plan_layout(p, av.HostSpec("head", "127.0.0.1"), av.even_workers(2))
    assert av.render_cluster_files(p, sched, layout, "bbemu") == render_slurm_files(p, sched, "bbemu")


def test_cloud_layout_places_every_node_on_its_worker() -> None:
    p = load_platform()
    layout = av.plan_layout(p, HEAD, cloud_workers(3))
    docker = render_slurm_files(p, SchedulerConfig(), "bbemu")
    placed = av.render_cluster_files(p, SchedulerConfig(), layout, "bbemu")
    conf = placed["slurm.conf"]
    assert "SlurmctldHost=localhost(head.example.org)" in conf
    addrs = node_addr(conf)
    assert len(addrs) == 108
    assert addrs["c001"] == addrs["c036"] == "w01.example.org"
    assert addrs["c037"] == "w02.example.org" and addrs["bb12"] == "w03.example.org"
    # One NodeName line per worker's run of nodes (c[001-036] on w01, ...), same ports.
    assert [line.split()[0] for line in conf.splitlines() if line.startswith("NodeName=")] == [
        "NodeName=c[001-036]", "NodeName=c[037-072]", "NodeName=c[073-096]", "NodeName=bb[01-12]",
    ]  # fmt: skip

    # Nothing else moves: every node's attributes but its address, the other lines, other files.
    def without_addr(text: str) -> dict[str, dict[str, str]]:
        return {n: {k: v for k, v in a.items() if k != "NodeAddr"} for n, a in slurm_nodes(text).items()}

    assert without_addr(conf) == without_addr(docker["slurm.conf"])
    mask = re.compile(r"^NodeName=.*\n|SlurmctldHost=\S+|AccountingStorageHost=\S+", re.MULTILINE)
    assert mask.sub("", conf) == mask.sub("", docker["slurm.conf"])
    assert {k: v for k, v in placed.items() if k != "slurm.conf"} == {
        k: v for k, v in docker.items() if k != "slurm.conf"
    }


def test_3600_nodes_over_10_workers(big, tmp_path: Path) -> None:
    assert big.node_count == 3600
    layout = av.plan_layout(big, HEAD, cloud_workers(10))
    assert [len(w.nodes) for w in layout.workers] == [360] * 10
    result = av.render_ansible(tmp_path / "r", big, layout, source_root=None)
    conf = (tmp_path / "r" / "etc" / "slurm.conf").read_text()
    addrs = node_addr(conf)
    assert len(addrs) == 3600
    assert addrs["c0001"] == "w01.example.org" and addrs["c0360"] == "w01.example.org"
    assert addrs["c0361"] == "w02.example.org" and addrs["bb400"] == "w10.example.org"
    assert "Licenses=bb:16000000" in conf
    assert "PartitionName=compute Nodes=c[0001-3200]" in conf
    data = json.loads((tmp_path / "r" / "cluster.json").read_text())
    assert data["node_count"] == 3600
    assert data["workers"]["w10"]["last_port"] == 17001 + 3599
    assert data["workers"]["w09"]["hostlist"] == "c[2881-3200],bb[001-040]"
    assert data["workers"]["w10"]["hostlist"] == "bb[041-400]"
    assert sum(len(w["nodes"]) for w in data["workers"].values()) == 3600
    assert result.summary(big)["workers"]["w05"] == 360


# -- the directory ----------------------------------------------------------------------------
def test_second_render_changes_nothing_and_keeps_the_munge_key(tmp_path: Path) -> None:
    p = load_platform()
    layout = av.plan_layout(p, av.HostSpec("head", "127.0.0.1"), av.even_workers(2))
    first = av.render_ansible(tmp_path, p, layout, source_root=repo_path())
    assert set(first.changed) >= {"etc/slurm.conf", "cluster.json", "munge.key", "harness-src.tar.gz"}
    key = (tmp_path / "munge.key").read_bytes()
    assert len(key) == 1024 and (tmp_path / "munge.key").stat().st_mode & 0o777 == 0o600
    second = av.render_ansible(tmp_path, p, layout, source_root=repo_path())
    assert second.changed == ()
    assert (tmp_path / "munge.key").read_bytes() == key
    third = av.render_ansible(tmp_path, p, layout, SchedulerConfig(mode="builtin"), source_root=repo_path())
    assert third.changed == ("etc/slurm.conf",)


def test_source_archive_is_reproducible_and_complete(tmp_path: Path) -> None:
    root = tmp_path / "src"
    for rel in ("harness/__init__.py", "harness/sub/mod.py", "slurm-templates/slurm.conf.j2"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    (root / "pyproject.toml").write_text("[project]\n")
    (root / "harness" / "__pycache__").mkdir()
    (root / "harness" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"junk")
    first = av.source_archive(root)
    (root / "harness" / "sub" / "mod.py").touch()  # a new mtime alone changes nothing
    assert av.source_archive(root) == first
    with tarfile.open(fileobj=io.BytesIO(first)) as tar:
        names = tar.getnames()
        assert all(m.mtime == 0 and m.uid == 0 for m in tar.getmembers())
    assert "harness/sub/mod.py" in names and "slurm-templates/slurm.conf.j2" in names
    assert not any("__pycache__" in n for n in names)
    (root / "harness" / "sub" / "mod.py").write_text("changed")
    assert av.source_archive(root) != first
    with pytest.raises(av.LayoutError, match="harness checkout"):
        av.source_archive(tmp_path / "nowhere")


def test_platform_text_is_the_loaded_toml(big) -> None:
    assert 'name = "raijin-3600"' in av.platform_text(big)
    assert 'name = "kth-bb-108"' in av.platform_text(load_platform())


# -- the command ------------------------------------------------------------------------------
def test_render_ansible_command(tmp_path: Path) -> None:
    hosts = {
        "head": {"name": "head", "address": "head.example.org"},
        "workers": [{"name": f"w{i}", "address": f"w{i}.example.org"} for i in (1, 2)],
    }
    args = ["cluster", "render-ansible", "--output", str(tmp_path), "--hosts-json", json.dumps(hosts),
            "--no-source"]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert summary["changed"] is True and summary["workers"] == {"w1": 54, "w2": 54}
    assert not (tmp_path / "harness-src.tar.gz").exists()
    again = CliRunner().invoke(main, args)
    assert json.loads(again.output)["changed"] is False


def test_render_ansible_command_reports_bad_hosts(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        main, ["cluster", "render-ansible", "--output", str(tmp_path), "--hosts-json", '{"head": 1}']
    )
    assert res.exit_code != 0 and "hosts JSON" in res.output
