"""Platform descriptions (TOML text) that several tests build: one generator, many shapes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from harness.platform import Machine, NodeKind, Platform, load_platform
from harness.platform.writing import save_platform

if TYPE_CHECKING:
    from harness.cluster.containers.backend import DockerCluster
    from harness.slurm.config import SchedulerConfig


def platform_toml(
    *,
    name: str,
    controller_port: int,
    slurmd_base_port: int,
    groups: int = 1,
    chassis_per_group: int = 1,
    compute_per_chassis: int = 8,
    compute_prefix: str = "s",
    compute_digits: int = 2,
    cpus: int = 1,
    bb_prefix: str = "sbb",
    bb_digits: int = 1,
    node_containers: int = 2,
    accounting_off: bool = True,
) -> str:
    """A platform with BB nodes of 40,000 MB and license ``bb`` (the study's BB node); without
    slurmdbd unless ``accounting_off`` is false (then the platform's default, or a table the
    caller appends)."""
    off = "[deployment.accounting]\nenabled = false\n" if accounting_off else ""
    return f"""
[platform]
name = "{name}"
[machine.topology]
groups = {groups}
chassis_per_group = {chassis_per_group}
compute_per_chassis = {compute_per_chassis}
[machine.compute]
prefix = "{compute_prefix}"
digits = {compute_digits}
cpus = {cpus}
real_memory_mb = 1000
partition = "compute"
[machine.burst_buffer]
prefix = "{bb_prefix}"
digits = {bb_digits}
capacity_mb = 40000
cpus = 1
real_memory_mb = 1000
partition = "bb"
[deployment]
controller_host = "localhost"
controller_port = {controller_port}
slurmd_base_port = {slurmd_base_port}
node_containers = {node_containers}
bb_license = "bb"
{off}"""


def tiny_machine(bb_capacity_mb: int = 100, bb_per_chassis: int = 1) -> Machine:
    """2 groups x 1 chassis x 2 compute nodes (c001-c004), ``bb_per_chassis`` BB nodes in each."""
    return Machine(
        name="tiny", description="", groups=2, chassis_per_group=1, compute_per_chassis=2,
        compute=NodeKind("c", 3, 1, 100, "compute"), bb=NodeKind("bb", 2, 1, 100, "bb"),
        bb_capacity_mb=bb_capacity_mb, bb_per_chassis=bb_per_chassis,
    )  # fmt: skip


def slurm_nodes(conf: str) -> dict[str, dict[str, str]]:
    """Every node of a rendered slurm.conf with its own attributes: ``NodeName=c[001-002]
    ... Port=[17001-17002]`` gives c001 Port 17001 and c002 Port 17002 (ranged lines are
    expanded as Slurm does; a single NodeAddr/NodeHostname/Port applies to every node)."""
    from harness.model.hostlist import expand_hostlist

    nodes: dict[str, dict[str, str]] = {}
    for line in conf.splitlines():
        if not line.startswith("NodeName="):
            continue
        attrs = dict(item.split("=", 1) for item in line.split())
        names = expand_hostlist(attrs.pop("NodeName"))
        lists = {key: expand_hostlist(value) for key, value in attrs.items()}
        for key, values in lists.items():
            assert len(values) in (1, len(names)), f"{key} count != NodeName count in {line!r}"
        for i, name in enumerate(names):
            assert name not in nodes, f"node {name} defined twice"
            nodes[name] = {key: values[i if len(values) > 1 else 0] for key, values in lists.items()}
    return nodes


def bundled_on_ports(path: Path, *, controller_port: int, slurmd_base_port: int) -> Platform:
    """The bundled platform on other ports, written to ``path`` (its source, for ``--platform``)."""
    moved = load_platform().redeployed(controller_port=controller_port, slurmd_base_port=slurmd_base_port)
    return save_platform(moved, path)


@contextmanager
def bundled_cluster(
    directory: Path, name: str, sched: SchedulerConfig, *, controller_port: int, slurmd_base_port: int
) -> Iterator[DockerCluster]:
    """The bundled platform on these ports (``directory/platform-NAME.toml``) as Docker
    cluster ``name`` with ``sched``: removed, brought up for the block, removed after."""
    from harness.cluster.containers.backend import DockerCluster

    path = directory / f"platform-{name}.toml"
    platform = bundled_on_ports(path, controller_port=controller_port, slurmd_base_port=slurmd_base_port)
    cluster = DockerCluster(name, platform, sched)
    cluster.down()
    try:
        cluster.up(progress=print)
        yield cluster
    finally:
        cluster.down()


def invoke_on_small_cluster(
    tmp_path: Path,
    command: Sequence[str],
    swf: str,
    *,
    cluster: str,
    platform_name: str,
    controller_port: int,
    slurmd_base_port: int,
) -> None:
    """``harness COMMAND TRACE OPTIONS`` (``command``: the sub-command, then its options) on a
    fresh 8 + 1-node platform in one node container, named ``cluster``: the SWF text ``swf``
    as TRACE, one processor per node, a constant 100 MB BB request per node, a 60 s
    timeout. The cluster is removed before and after; a non-zero exit fails the test."""
    from click.testing import CliRunner

    from harness.cli import main
    from harness.cluster.containers.backend import DockerCluster

    toml = tmp_path / f"{cluster}.toml"
    toml.write_text(platform_toml(name=platform_name, controller_port=controller_port,
                                  slurmd_base_port=slurmd_base_port, node_containers=1))  # fmt: skip
    trace = tmp_path / "four.swf"
    trace.write_text(swf)
    backend = DockerCluster(name=cluster, platform=load_platform(toml))
    backend.down()
    try:
        common = ["--platform", str(toml), "--name", cluster, "--procs-per-node", "1", "--timeout", "60"]
        bb = ["--bb-model", "constant", "--bb-constant", "100"]
        args = [command[0], str(trace), *command[1:], *common, *bb]
        ran = CliRunner().invoke(main, args, catch_exceptions=False)
        assert ran.exit_code == 0, ran.output
    finally:
        backend.down()


def platform_from_slurm_conf(folder: Path, conf: str, deployment: dict[str, int]) -> Path:
    """``harness platform from-slurm`` of ``conf`` (a site's slurm.conf, written in ``folder``),
    with the deployment keys of ``deployment`` (ports, node containers) set in the file."""
    from click.testing import CliRunner

    from harness.cli import main

    conf_file, platform = folder / "slurm.conf", folder / "site.toml"
    conf_file.write_text(conf)
    made = CliRunner().invoke(main, ["platform", "from-slurm", str(conf_file), "-o", str(platform)])
    assert made.exit_code == 0, made.output
    lines = platform.read_text().splitlines()
    for key, value in deployment.items():
        lines = [f"{key} = {value}" if line.startswith(f"{key} =") else line for line in lines]
    platform.write_text("\n".join(lines) + "\n")
    return platform
