"""``harness platform from-trace | show``: platforms sized for a trace, and what a platform file holds."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from harness.cli.options import MEGABYTES, NODE_COUNT, HarnessGroup, NameType, json_option
from harness.cli.output_options import force_option
from harness.model.jsonio import to_json
from harness.platform import Platform, PlatformError, load_platform
from harness.platform.writing import platform_to_toml


@click.group(
    "platform",
    cls=HarnessGroup,
    examples=[
        "harness platform from-trace kth.swf -o kth.toml",
        "harness platform from-slurm /etc/slurm/slurm.conf -o site.toml",
        "harness platform show kth.toml",
    ],
)
def platform_group() -> None:
    """Platform files (TOML): make one for a trace or from a site's slurm.conf, show one.
    Every command that takes a platform accepts --platform FILE."""


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
@force_option
def from_trace(trace: str, output: Path, bb_ratio: int, bb_capacity_mb: int | None, nodes: int | None,
               procs_per_node: int | None, name: str | None, lenient: bool, force: bool) -> None:  # fmt: skip
    """Write a platform of the size of the machine TRACE was recorded on."""
    from harness.model.atomic import OutputError, atomic_write_text
    from harness.model.outputs import PLATFORM_FILE, check_output
    from harness.workload.nodes import NodeSizeError
    from harness.workload.plan import resolve_input
    from harness.workload.platforms import platform_from_trace
    from harness.workload.swf import SwfError

    check_output(output, PLATFORM_FILE, force=force)
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


@platform_group.command(
    "from-slurm",
    examples=[
        "harness platform from-slurm /etc/slurm/slurm.conf -o site.toml",
        "harness platform from-slurm slurm.conf --drop AllowGroups --drop QOS -o site.toml",
        "harness platform from-slurm --scontrol nodes.json --scontrol partitions.json -o site.toml",
    ],
)
@click.argument("file", required=False)
@click.option(
    "--scontrol",
    "scontrol_files",
    multiple=True,
    help="`scontrol show node --json` and `scontrol show partition --json` output, in one file or "
    "two (give --scontrol twice); instead of FILE.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Platform file to write (.toml); without it the TOML goes to stdout and the summary to stderr.",
)
@click.option(
    "--name",
    type=NameType(label=True),
    default=None,
    help="Platform name (default: ClusterName, else the file's).",
)
@click.option(
    "--drop",
    multiple=True,
    metavar="KEY",
    help="A key that changes scheduling and is not emulated (AllowGroups, TopologyPlugin ...): "
    "leave it out knowingly instead of stopping. Repeatable.",
)
@click.option(
    "--default-partition",
    default=None,
    help="With --scontrol: the default partition (Slurm's JSON does not say; default: the first).",
)
@force_option
def from_slurm(file: str | None, scontrol_files: tuple[str, ...], output: Path | None, name: str | None,
               drop: tuple[str, ...], default_partition: str | None, force: bool) -> None:  # fmt: skip
    """Write the platform of a Slurm site's own machine, read from its slurm.conf FILE (or from
    scontrol's JSON): node types, features, GRES (GPUs emulated without GPUs), partitions with
    their limits and default, and its scheduler settings (kept, not applied). Keys it does not
    model are listed; a key that changes scheduling and is not emulated is an error unless
    dropped (--drop)."""
    from harness.model.atomic import OutputError, atomic_write_text
    from harness.model.outputs import PLATFORM_FILE, check_output
    from harness.platform.from_slurm import read_site, site_from_conf, site_platform
    from harness.platform.scontrol import read_scontrol
    from harness.slurm.own_conf import is_own_render, site_lines

    if output is not None:
        check_output(output, PLATFORM_FILE, force=force)
    if (file is None) == (not scontrol_files):
        raise click.UsageError("give a slurm.conf FILE or --scontrol JSON (one of the two)")
    if default_partition is not None and not scontrol_files:
        raise click.UsageError("--default-partition is for --scontrol (slurm.conf says Default=YES)")
    if file is not None and is_own_render(file):  # an emulated cluster's own: the site it was made from
        lines, notes, platform_name = site_lines(file)
        read = site_from_conf(lines, drop=drop, origin=Path(file).name)
        read = replace(read, notes=(*notes, *read.notes), cluster_name=platform_name or read.cluster_name)
        inputs = [Path(file)]
    elif file is not None:
        read = read_site(file, drop=drop)
        inputs = [Path(file)]
    else:
        read = read_scontrol(scontrol_files, drop=drop, default_partition=default_partition)
        inputs = [Path(f) for f in scontrol_files]
    label = name or _site_label(read.cluster_name, inputs[0])
    platform = site_platform(read.site, label)
    comment = (
        f"Made by `harness platform from-slurm` from {read.site.origin}: a Slurm site's own machine.\n"
        "GPUs are emulated without GPUs (stand-in device files); the site's scheduler settings are\n"
        "kept in [machine.site.settings], not applied (docs/site-whatif.md)."
    )
    text = platform_to_toml(platform, comment)
    summary = _site_summary(platform, read)
    if output is None:
        click.echo(text, nl=False)
        click.echo(summary, err=True)
        return
    try:
        atomic_write_text(output, text, inputs=inputs)
    except OutputError as exc:
        raise click.ClickException(str(exc)) from None
    if load_platform(output).machine != platform.machine:  # what was written must load back the same
        raise click.ClickException(f"{output}: the platform written does not load back the same")
    click.echo(f"{output}: platform '{platform.name}'\n{summary}")


def _site_label(cluster_name: str | None, first: Path) -> str:
    """The platform's name: the site's ClusterName when it is a safe name, else the file's stem."""
    from harness.model import checks

    for candidate in (cluster_name, first.stem, "site"):
        try:
            return checks.safe_name(candidate, "name", checks.LABEL, checks.LABEL_RULE)
        except checks.InputError:
            continue
    return "site"


def _site_summary(p: Platform, read: object) -> str:
    """Node types, partitions, GRES, licenses; the settings kept; the keys dropped and ignored."""
    from harness.platform.from_slurm import FromSlurm, gres_summary
    from harness.platform.slurm_conf import format_minutes

    assert isinstance(read, FromSlurm) and p.site is not None
    site = p.site
    lines = [f"nodes        {len(site.node_names()):,} site nodes + {p.bb_count} burst-buffer node(s)"]
    for i, kind in enumerate(site.node_types):
        extra = [f"features {','.join(kind.features)}"] if kind.features else []
        extra += [f"gres {','.join(str(g) for g in kind.gres)}"] if kind.gres else []
        extra += [f"weight {kind.weight}"] if kind.weight is not None else []
        head = "node types   " if i == 0 else " " * 13
        lines.append(f"{head}{kind.name}: {len(kind.nodes)} x {kind.cpus} CPUs, {kind.real_memory_mb:,} MB"
                     + "".join(f", {e}" for e in extra) + f" ({kind.hostlist})")  # fmt: skip
    for i, part in enumerate(site.partitions):
        head = "partitions   " if i == 0 else " " * 13
        limits = f"MaxTime {format_minutes(part.max_time_min)}"
        limits += f", MaxNodes {part.max_nodes}" if part.max_nodes is not None else ""
        limits += f", PriorityTier {part.priority_tier}" if part.priority_tier is not None else ""
        lines.append(
            f"{head}{part.name}{' (default)' if part.default else ''}: {part.hostlist}, {limits}, "
            f"{part.state}"
        )
    lines.append(f"GRES         {gres_summary(site)}")
    if site.licenses:
        lines.append(f"licenses     {', '.join(f'{n}:{c}' for n, c in site.licenses)}")
    kept = "; ".join(f"{k}={v}" for k, v in site.settings) or "none"
    lines.append(f"kept         {kept} (recorded, not applied)")
    if read.dropped:
        lines.append(f"dropped      {', '.join(read.dropped)} (change scheduling; left out as asked)")
    if read.ignored:
        lines.append(f"ignored      {', '.join(read.ignored)} (not modelled)")
    lines += [f"note         {note}" for note in read.notes]
    return "\n".join(lines)


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
    if p.site is not None:
        from harness.platform.from_slurm import FromSlurm

        head = [
            f"platform     {p.name} ({p.source})",
            f"             {p.description}" if p.description else "",
        ]
        tail = (
            f"deployment   controller {d.controller_host}:{d.controller_port}, slurmd ports {first}-{last}, "
            f"{d.node_containers} container(s), license '{d.bb_license}'"
        )
        lines = [*head, _site_summary(p, FromSlurm(p.site)), tail]
        click.echo("\n".join(line for line in lines if line))
        return
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
