"""The Ansible path of an own-node platform (``[deployment] slurmd_conf = "own-node"``): the
render writes the Docker path's per-node slurm.conf files, the slurmd role installs a worker's
own and every way a VM starts slurmd (harness-service, slurmd@.service) passes ``-f``."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import yaml

from harness.cluster.ansible_render import variables as av
from harness.cluster.containers.state_dir import ClusterState
from harness.model.paths import repo_path
from harness.platform import Platform, load_platform
from harness.slurm.config import OWN_NODE_DIR, SchedulerConfig
from tests.platforms import platform_toml, slurm_nodes

HEAD = av.HostSpec("head", "head.example.org")
WORKERS = [av.HostSpec(f"w{i:02d}", f"w{i:02d}.example.org") for i in (1, 2, 3)]


def platform(tmp: Path, conf: str = "own-node") -> Platform:
    """3 chassis of 8 compute + 1 BB: s01-s24 and sbb1-sbb3, ports 19001-19027."""
    text = platform_toml(name="own", controller_port=7391, slurmd_base_port=19001, chassis_per_group=3)
    (tmp / "own.toml").write_text(text.replace("[deployment]\n", f'[deployment]\nslurmd_conf = "{conf}"\n'))
    return load_platform(str(tmp / "own.toml"))


def tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_loopback_render_is_the_docker_render_file_for_file(tmp_path: Path) -> None:
    p = platform(tmp_path)
    sched = SchedulerConfig(reserve_depth=1)
    ClusterState.for_cluster("bbemu", tmp_path / "docker").render(p, sched)
    layout = av.plan_layout(p, av.HostSpec("head", "127.0.0.1"), av.even_workers(2))
    av.render_ansible(tmp_path / "ans", p, layout, sched, cluster_name="bbemu")
    docker, ansible = tree(tmp_path / "docker" / "etc"), tree(tmp_path / "ans" / "etc")
    assert ansible == docker
    own = sorted(name for name in ansible if name.startswith("nodes/slurm-"))
    assert len(own) == 27 and own[0] == "nodes/slurm-s01.conf" and own[-1] == "nodes/slurm-sbb3.conf"
    assert {"nodes/gres.conf", "nodes/cgroup.conf"} <= set(ansible)
    assert len(ansible) == len(docker) == 4 + 2 + 27  # slurm, gres, cgroup, job_submit.lua; 2 beside; 27


def test_each_node_file_has_its_node_at_its_worker_and_the_controller_all(tmp_path: Path) -> None:
    p = platform(tmp_path)
    layout = av.plan_layout(p, HEAD, WORKERS)
    av.render_ansible(tmp_path / "r", p, layout)
    etc = tmp_path / "r" / "etc"
    controller = (etc / "slurm.conf").read_text()
    assert len(slurm_nodes(controller)) == 27
    assert (
        "TreeWidth=65533" in controller.splitlines() and "DebugFlags=NO_CONF_HASH" in controller.splitlines()
    )
    assert "PartitionName=compute Nodes=s[01-24]" in controller
    s10 = (etc / "nodes" / "slurm-s10.conf").read_text()  # the 10th node: on w02 (9 nodes a worker)
    nodes = slurm_nodes(s10)
    assert list(nodes) == ["s10"]
    assert (nodes["s10"]["NodeAddr"], nodes["s10"]["Port"]) == ("w02.example.org", "19010")
    assert "PartitionName" not in s10 and "TreeWidth=65533" in s10.splitlines()
    assert "SlurmctldHost=localhost(head.example.org)" in s10
    data = json.loads((tmp_path / "r" / "cluster.json").read_text())
    assert data["slurmd_conf"] == "own-node"
    assert data["workers"]["w02"]["nodes"][0] == "s10"


def test_a_shared_platform_has_no_node_files_and_the_controller_forwards(tmp_path: Path) -> None:
    p = platform(tmp_path, conf="shared")
    av.render_ansible(tmp_path / "r", p, av.plan_layout(p, HEAD, WORKERS))
    assert not (tmp_path / "r" / "etc" / "nodes").exists()
    controller = (tmp_path / "r" / "etc" / "slurm.conf").read_text()
    assert "TreeWidth" not in controller and "NO_CONF_HASH" not in controller
    assert json.loads((tmp_path / "r" / "cluster.json").read_text())["slurmd_conf"] == "shared"


def test_switching_back_to_shared_removes_the_rendered_node_files(tmp_path: Path) -> None:
    own = platform(tmp_path)
    av.render_ansible(tmp_path / "r", own, av.plan_layout(own, HEAD, WORKERS))
    again = av.render_ansible(tmp_path / "r", own, av.plan_layout(own, HEAD, WORKERS))
    assert again.changed == ()
    shared = platform(tmp_path, conf="shared")
    result = av.render_ansible(tmp_path / "r", shared, av.plan_layout(shared, HEAD, WORKERS))
    removed = [name for name in result.changed if name.startswith("etc/nodes/")]
    assert len(removed) == 27 + 2 and "etc/nodes/slurm-sbb3.conf" in removed
    assert not (tmp_path / "r" / "etc" / "nodes").exists()
    assert {"etc/slurm.conf", "cluster.json", "platform.toml"} <= set(result.changed)


def test_the_head_gets_no_node_files(tmp_path: Path) -> None:
    files = av.render_cluster_files(
        platform(tmp_path), SchedulerConfig(), av.plan_layout(platform(tmp_path), HEAD, WORKERS), "x"
    )
    assert sorted(av.controller_files(files)) == ["cgroup.conf", "gres.conf", "job_submit.lua", "slurm.conf"]
    assert len(files) == 4 + 2 + 27


def worker_archive(render: Path, worker: str) -> dict[str, str]:
    with tarfile.open(render / "workers" / f"{worker}.tar") as tar:
        return {m.name: tar.extractfile(m).read().decode() for m in tar.getmembers()}  # type: ignore[union-attr]


def test_each_worker_gets_one_archive_of_its_nodes_files_beside_the_two_it_reads(tmp_path: Path) -> None:
    p = platform(tmp_path)
    av.render_ansible(tmp_path / "r", p, av.plan_layout(p, HEAD, WORKERS))
    etc = tmp_path / "r" / "etc" / "nodes"
    w02 = worker_archive(tmp_path / "r", "w02")
    # 27 nodes over 3 workers: w02 runs the 10th to the 18th (s10-s18), after gres and cgroup
    assert list(w02) == ["gres.conf", "cgroup.conf", *(f"slurm-s{i}.conf" for i in range(10, 19))]
    assert all(text == (etc / name).read_text() for name, text in w02.items())
    assert list(worker_archive(tmp_path / "r", "w03"))[-1] == "slurm-sbb3.conf"
    archives = sorted(path.name for path in (tmp_path / "r" / "workers").iterdir())
    assert archives == ["w01.tar", "w02.tar", "w03.tar"]
    with tarfile.open(tmp_path / "r" / "workers" / "w01.tar") as tar:
        assert {(m.uid, m.uname, m.mtime, m.mode) for m in tar.getmembers()} == {(0, "root", 0, 0o644)}


def test_a_worker_gone_or_a_shared_platform_leaves_no_archive(tmp_path: Path) -> None:
    p = platform(tmp_path)
    av.render_ansible(tmp_path / "r", p, av.plan_layout(p, HEAD, WORKERS))
    first = (tmp_path / "r" / "workers" / "w01.tar").read_bytes()
    two = av.render_ansible(tmp_path / "r", p, av.plan_layout(p, HEAD, WORKERS[:2]))
    assert "workers/w03.tar" in two.changed and not (tmp_path / "r" / "workers" / "w03.tar").exists()
    assert "workers/w01.tar" in two.changed  # 14 nodes now, not 9
    again = av.render_ansible(tmp_path / "r", p, av.plan_layout(p, HEAD, WORKERS))
    assert (tmp_path / "r" / "workers" / "w01.tar").read_bytes() == first  # the same bytes again
    assert {"workers/w01.tar", "workers/w03.tar"} <= set(again.changed)
    shared = platform(tmp_path, conf="shared")
    result = av.render_ansible(tmp_path / "r", shared, av.plan_layout(shared, HEAD, WORKERS))
    assert {"workers/w01.tar", "workers/w02.tar", "workers/w03.tar"} <= set(result.changed)
    assert not (tmp_path / "r" / "workers").exists()


def test_the_slurmd_role_installs_the_workers_files_where_slurmd_is_started_with_f() -> None:
    tasks = yaml.safe_load(repo_path("ansible/roles/slurmd/tasks/main.yml").read_text())
    by_name = {task["name"]: task for task in tasks}
    copy = by_name["Copy this worker's own-node files as one archive"]["ansible.builtin.copy"]
    assert copy["src"] == "{{ harness_render_dir }}/workers/{{ inventory_hostname }}.tar"
    [unpack] = [task for name, task in by_name.items() if name.startswith("Unpack the own slurm.conf")]
    assert unpack["ansible.builtin.unarchive"] == {"src": copy["dest"], "dest": f"/etc/slurm/{OWN_NODE_DIR}",
                                                   "remote_src": True}  # fmt: skip
    assert unpack["when"] == "slurmd_own_node" and unpack["notify"] == "Restart slurmd"
    # The supervisor of the Docker path reads the same folder (containers/entrypoint.sh).
    assert "--conf-dir /etc/slurm/nodes" in repo_path("containers/entrypoint.sh").read_text()
    script = repo_path("ansible/roles/common/files/harness-service").read_text()
    assert 'own=(-f "/etc/slurm/nodes/slurm-$node.conf")' in script
    assert '/usr/sbin/slurmd -N "$node" "${own[@]}"' in script
    unit = repo_path("ansible/roles/slurmd/files/slurmd@.service").read_text()
    assert 'exec /usr/sbin/slurmd -D -N %i -f "$$conf"' in unit  # $$: systemd's literal $
