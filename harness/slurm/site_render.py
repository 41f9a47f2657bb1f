"""The slurm.conf lines and gres.conf of a site's machine (``[machine.site]``): node types,
partitions, GRES with stand-in GPU files (docs/site-whatif.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from harness.platform import Platform, PlatformError
from harness.platform.site import Gres, NodeType, Partition, Site
from harness.platform.slurm_conf import format_minutes
from harness.slurm.settings import (
    BANDWIDTH_LICENSE,
    GPU_STANDIN_DIR,
    URGENT_PARTITION,
    SchedulerConfig,
    node_lines,
)


@dataclass(frozen=True)
class SiteNodeLine:
    """A ``NodeName=`` line of a site's node type: a run of :class:`NodeLine` with the type's
    CPUs, memory, features and GRES (``attributes``, as slurm.conf spells them)."""

    names: str
    ports: str
    addr: str
    attributes: str


def site_node_lines(
    site: Site, ports: Mapping[str, int], addresses: Mapping[str, str], only: str | None = None
) -> list[SiteNodeLine]:
    """The lines of every node type (or of node ``only``), type by type in the site's order."""
    lines = []
    for kind in site.node_types:
        nodes = [n for n in kind.nodes if only is None or n == only]
        for run in node_lines(nodes, ports, addresses) if nodes else []:
            lines.append(SiteNodeLine(run.names, run.ports, run.addr, node_attributes(kind)))
    return lines


def node_attributes(kind: NodeType) -> str:
    """``CPUs=32 Sockets=2 ... RealMemory=256000 Features=a100 Gres=gpu:a100:2 Weight=100``."""
    words = [f"CPUs={kind.cpus}"]
    for key, value in (("Sockets", kind.sockets), ("CoresPerSocket", kind.cores_per_socket),
                       ("ThreadsPerCore", kind.threads_per_core)):  # fmt: skip
        words += [f"{key}={value}"] if value is not None else []
    words.append(f"RealMemory={kind.real_memory_mb}")
    words += [f"Features={','.join(kind.features)}"] if kind.features else []
    words += [f"Gres={','.join(str(g) for g in kind.gres)}"] if kind.gres else []
    words += [f"Weight={kind.weight}"] if kind.weight is not None else []
    return " ".join(words)


def site_partition_lines(site: Site, sched: SchedulerConfig) -> list[str]:
    """The site's partitions as it declares them, and the harness's urgent tier when the run
    needs it (over the default partition's nodes, one tier above every site partition; with
    ``preempt_suspend`` the default partition is oversubscribed FORCE:1, so a suspended job and
    the urgent one can share a node, as the study's compute partition is)."""
    urgent = sched.priority_tiers or sched.preempt_suspend
    names = {p.name for p in site.partitions}
    if urgent and URGENT_PARTITION in names:
        raise PlatformError(f"site partition {URGENT_PARTITION!r} is the harness's urgent tier: rename it")
    default = site.default_partition
    lines = []
    for part in site.partitions:
        forced = sched.preempt_suspend and part.name == default.name
        lines.append(partition_line(part, oversubscribe="FORCE:1" if forced else part.oversubscribe))
    if urgent:
        tier = max([p.priority_tier or 1 for p in site.partitions]) + 1
        over = "FORCE:1" if sched.preempt_suspend else default.oversubscribe
        lines.append(
            partition_line(
                Partition(name=URGENT_PARTITION, nodes=default.nodes, priority_tier=tier, oversubscribe=over),
                over,
            )
        )
    return lines


def partition_line(part: Partition, oversubscribe: str | None) -> str:
    default = "YES" if part.default else "NO"
    words = [f"PartitionName={part.name}", f"Nodes={part.hostlist}", f"Default={default}"]
    words.append(f"MaxTime={format_minutes(part.max_time_min)}")
    if part.default_time_min is not None:
        words.append(f"DefaultTime={format_minutes(part.default_time_min)}")
    if part.max_nodes is not None:
        words.append(f"MaxNodes={part.max_nodes}")
    if oversubscribe is not None:
        words.append(f"OverSubscribe={oversubscribe}")
    if part.priority_tier is not None:
        words.append(f"PriorityTier={part.priority_tier}")
    words.append(f"State={part.state}")
    return " ".join(words)


def site_gres_lines(site: Site) -> list[str]:
    """gres.conf lines of the site's nodes: a GPU gets a stand-in device file under
    :data:`GPU_STANDIN_DIR` (``gpu0``, ``gpu1`` ... per node), any other GRES a count."""
    lines = []
    for kind in site.node_types:
        index = 0
        for gres in kind.gres:
            words = [f"NodeName={kind.hostlist}", f"Name={gres.name}"]
            words += [f"Type={gres.type}"] if gres.type else []
            if gres.name == "gpu":
                words.append(f"File={_standin_files(index, gres)}")
                index += gres.count
            words.append(f"Count={gres.count}")
            lines.append(" ".join(words))
    return lines


def _standin_files(first: int, gres: Gres) -> str:
    last = first + gres.count - 1
    return f"{GPU_STANDIN_DIR}/gpu{first}" if last == first else f"{GPU_STANDIN_DIR}/gpu[{first}-{last}]"


def accounting_tres(platform: Platform) -> str:
    """slurm.conf's ``AccountingStorageTRES``: the BB license, and on a site's machine every
    GRES of its nodes by name and by name and type (``gres/gpu,gres/gpu:a100``). Slurm's
    database tracks CPUs, memory and nodes by default but no GRES: without these a job's
    ``sacct`` record has no ``gres/gpu`` and a history taken from the emulated cluster
    loses its GPUs (the site's own ``AccountingStorageTRES`` is ignored with the paths)."""
    tres = [f"license/{platform.deployment.bb_license}"]
    for kind in platform.site.node_types if platform.site is not None else ():
        for gres in kind.gres:
            for item in (f"gres/{gres.name}", *([f"gres/{gres.name}:{gres.type}"] if gres.type else [])):
                tres += [item] if item not in tres else []
    return ",".join(tres)


def site_context(platform: Platform, sched: SchedulerConfig, ports: Mapping[str, int],
                 addresses: Mapping[str, str]) -> dict[str, object]:  # fmt: skip
    """What the templates need for a site's platform (empty for the study's)."""
    site = platform.site
    if site is None:
        return {"site_nodes": []}
    bb_license = platform.deployment.bb_license
    harness_licenses = [bb_license] + ([BANDWIDTH_LICENSE] if sched.bandwidth_license else [])
    clash = [name for name, _ in site.licenses if name in harness_licenses]
    if clash or bb_license in site.gres_types:
        raise PlatformError(
            f"site license or GRES {(clash or [bb_license])[0]!r} is the harness's own: rename it"
        )
    licenses = [f"{bb_license}:{platform.bb_total_mb}"]
    licenses += [f"{BANDWIDTH_LICENSE}:{int(platform.io.pfs_capacity_mbps(platform.compute_count))}"] if (
        sched.bandwidth_license) else []  # fmt: skip
    licenses += [f"{name}:{count}" for name, count in site.licenses]
    return {
        "site_nodes": site_node_lines(site, ports, addresses),
        "site_partitions": site_partition_lines(site, sched),
        "site_licenses": ",".join(licenses),
        "site_gres_types": ",".join([bb_license, *site.gres_types]),
        "site_settings": [f"{key}={value}" for key, value in site.settings],
        "site_gres": site_gres_lines(site),
        "gpu_standin_dir": GPU_STANDIN_DIR,
    }
