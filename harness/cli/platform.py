"""``harness platform from-trace | show``: platforms sized for a trace, and what a platform file holds."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli.options import MEGABYTES, NODE_COUNT, HarnessGroup, NameType, json_option
from harness.model.jsonio import to_json
from harness.platform import Platform, PlatformError, load_platform
from harness.platform.writing import platform_to_toml


@click.group(
    "platform",
    cls=HarnessGroup,
    examples=["harness platform from-trace kth.swf -o kth.toml", "harness platform show kth.toml"],
)
def platform_group() -> None:
    """Platform files (TOML): make one for a trace, show one. Every command that takes a
    platform accepts --platform FILE."""


@platform_group.command(
    "from-trace", examples=["harness platform from-trace SDSC-SP2.swf -o sp2.toml --bb-ratio 8"]
)
@click.argument("trace")
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Platform file to write (.toml).",
)
@click.option(
    "--bb-ratio",
    type=NODE_COUNT,
    default=8,
    show_default=True,
    help="Compute nodes per chassis, each chassis with one burst-buffer node.",
)
@click.option(
    "--bb-capacity-mb",
    type=MEGABYTES,
    default=None,
    help="MB per burst-buffer node (default: bb-ratio x 5,000, the study's 40,000 for 8).",
)
@click.option(
    "--nodes",
    type=NODE_COUNT,
    default=None,
    help="Compute nodes (default: MaxNodes of the header, else the widest job).",
)
@click.option(
    "--procs-per-node",
    type=NODE_COUNT,
    default=None,
    help="Processors per node of the traced machine (default: MaxProcs / MaxNodes of the header, else 1).",
)
@click.option(
    "--name", type=NameType(label=True), default=None, help="Platform name (default: <trace>-<nodes>)."
)
@click.option("--lenient", is_flag=True, help="Skip malformed records instead of failing.")
def from_trace(trace: str, output: Path, bb_ratio: int, bb_capacity_mb: int | None, nodes: int | None,
               procs_per_node: int | None, name: str | None, lenient: bool) -> None:  # fmt: skip
    """Write a platform of the size of the machine TRACE was recorded on."""
    from harness.model.atomic import OutputError, atomic_write_text
    from harness.workload.nodes import NodeSizeError
    from harness.workload.plan import resolve_input
    from harness.workload.platforms import platform_from_trace
    from harness.workload.swf import SwfError

    try:
        made = platform_from_trace(
            resolve_input(trace),
            bb_ratio=bb_ratio,
            bb_capacity_mb=bb_capacity_mb,
            nodes=nodes,
            procs_per_node=procs_per_node,
            lenient=lenient,
            name=name,
        )
    except (SwfError, NodeSizeError, PlatformError) as exc:
        raise click.ClickException(str(exc)) from None  # fmt: skip
    info = made.info
    warning = info["node_size"].get("warning")
    if warning and nodes is None:
        click.echo(f"warning: {warning}", err=True)
    comment = (
        f"Made by `harness platform from-trace` from {Path(info['trace']).name} (sha256 {info['sha256']}).\n"
        f"Compute nodes: {info['compute_nodes_from']}; processors per node "
        f"{info['node_size']['procs_per_node']} ({info['node_size']['reason']}).\n"
        f"One burst-buffer node of {info['bb_capacity_mb']:,} MB per chassis of {bb_ratio} compute nodes."
    )
    try:
        atomic_write_text(output, platform_to_toml(made.platform, comment), inputs=[resolve_input(trace)])
    except OutputError as exc:
        raise click.ClickException(str(exc)) from None
    load_platform(output)  # what was written must load back
    click.echo(f"{output}: {_line(made.platform)}")


@platform_group.command("show", examples=["harness platform show", "harness platform show kth.toml --json"])
@click.argument("file", default="default")
@json_option
def show(file: str, as_json: bool) -> None:
    """Print what the platform FILE holds ('default': the built-in one)."""
    try:
        p = load_platform(file)
    except PlatformError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(to_json({**p.as_dict(), "deployment": _deployment(p)}))
        return
    d = p.deployment
    first, last = d.slurmd_base_port, d.slurmd_base_port + p.node_count - 1
    topo = f"{p.groups} group(s) x {p.chassis_per_group} chassis x {p.compute_per_chassis} compute nodes"
    if p.compute_total is not None:
        topo += f" (last chassis partial: {p.compute_total} in all)"
    lines = [
        f"platform     {p.name} ({p.source})",
        f"             {p.description}" if p.description else "",
        f"nodes        {_line(p)}",
        f"topology     {topo}, {p.bb_per_chassis} BB node(s) per chassis",
        f"compute      {p.compute.name(1)}..{p.compute.name(p.compute_count)}, "
        f"partition {p.compute.partition}",
        f"bb           {p.bb.name(1)}..{p.bb.name(p.bb_count)}, partition {p.bb.partition}, "
        f"{p.bb_capacity_mb:,} MB each, {p.bb_total_mb:,} MB in all",
        f"io           links {p.io.compute_link_mbps:g} MB/s, BB nodes {p.io.bb_node_mbps:g} MB/s, "
        f"PFS {p.io.pfs_capacity_mbps(p.compute_count):g} MB/s",
        f"deployment   controller {d.controller_host}:{d.controller_port}, slurmd ports {first}-{last}, "
        f"{d.node_containers} container(s), license '{d.bb_license}'",
    ]
    click.echo("\n".join(line for line in lines if line))


def _line(p: Platform) -> str:
    return f"{p.compute_count:,} compute + {p.bb_count:,} burst-buffer nodes = {p.node_count:,}"


def _deployment(p: Platform) -> dict[str, object]:
    d = p.deployment
    return {
        "controller_host": d.controller_host,
        "controller_port": d.controller_port,
        "slurmd_base_port": d.slurmd_base_port,
        "node_containers": d.node_containers,
        "bb_license": d.bb_license,
    }
