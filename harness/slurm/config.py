"""Render slurm.conf and friends from a platform description plus a scheduler mode.

The templates live in ``slurm-templates/``; this module only computes the values
they need. The same rendering feeds the Docker cluster, compose users and Ansible.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import jinja2

from harness import __version__
from harness.model.atomic import atomic_write_text
from harness.model.clock import preload_env
from harness.model.hostlist import compress_hostlist
from harness.model.paths import templates_dir
from harness.model.rundir import FAKETIME_FILE, SHARED, SHARED_IO
from harness.platform import Platform, PlatformError, platform_text
from harness.platform.site import Gres, NodeType, Partition, Site
from harness.platform.slurm_conf import format_minutes

LOOPBACK = "127.0.0.1"
# The harness's interpreter beside slurmctld (the image's and the Ansible role's venv): every
# process the harness starts there runs as `HARNESS_PYTHON -m harness...`.
HARNESS_PYTHON = "/opt/harness/bin/python"
SLURM_FILES = ("slurm.conf", "gres.conf", "cgroup.conf", "job_submit.lua")
# With burst_buffer/lua: the plugin's files, and the platform file the staging command reads.
BB_LUA_FILES = ("burst_buffer.conf", "burst_buffer.lua")
PLATFORM_FILE = "platform.toml"
STAGING_MODULE = "harness.emulation.iolive.staging"
# The PFS bandwidth as a license in MB/s (Herbein's I/O-aware scheduling done by Slurm):
# a job holds nodes x its per-node drain rate; with bf_licenses backfill reserves it too.
BANDWIDTH_LICENSE = "pfsbw"
# The partition of high-priority jobs (harness.workload.priority): same compute nodes, a higher
# PriorityTier; with preempt_suspend its jobs suspend the compute partition's jobs.
URGENT_PARTITION = "urgent"
PREEMPT_MODES = ("none", "suspend")

SchedulerMode = Literal["builtin", "backfill"]
ClockMode = Literal["wall", "virtual"]
OWN_NODE_DIR = "nodes"  # own-node confs: nodes/slurm-<node>.conf, with the extra files slurmd reads
NODE_EXTRA_FILES = ("gres.conf", "cgroup.conf")  # what slurmd reads beside its slurm.conf
CLOCK_ENV = "clock.env"  # with the virtual clock: the environment that preloads the daemons
CRED_EXPIRE_VIRTUAL_S = 100_000  # a launch credential outlives any jump of the virtual clock
BurstBufferMode = Literal["licenses", "lua"]
# GPUs without GPUs (a site's platform): gres.conf gives every GPU a stand-in device file
# here, a symbolic link to /dev/null (a character device, as slurmd's check wants) that each
# node container makes before its slurmd start (harness.cluster.node.supervisor, same path).
GPU_STANDIN_DIR = "/run/slurm/gres"


@dataclass(frozen=True)
class SchedulerConfig:
    """How slurmctld orders jobs.

    Times are chosen for time-shrunk jobs that last seconds: ``bf_resolution=1`` (the
    default 60 s would be coarser than most shrunk jobs), ``bf_interval=1`` (a job that
    only backfill can start waits up to bf_interval), ``batch_sched_delay=0`` (the
    default 3 s delays every batch launch), ``sched_min_interval=0``.
    """

    mode: SchedulerMode = "backfill"
    bf_licenses: bool = True  # reserve licenses (burst buffers) for blocked jobs
    reserve_depth: int | None = None  # bf_job_part_count_reserve; None = Slurm default (all)
    external_ordering: bool = False  # the harness agent decides the order (job_submit holds)
    # 'licenses': the BB is a license held from start to end (Alloc-Only); 'lua': Slurm's
    # burst-buffer life cycle (burst_buffer/lua: pool, stage-in before start, stage-out after)
    burst_buffer: BurstBufferMode = "licenses"
    bandwidth_license: bool = False  # declare the PFS bandwidth as the license BANDWIDTH_LICENSE
    staging_dir: str = SHARED_IO  # where the staging processes meet (burst_buffer/lua)
    python: str = HARNESS_PYTHON
    # Preemption by suspension: an 'urgent' partition over the compute nodes whose jobs
    # suspend the compute partition's jobs (PreemptMode=SUSPEND,GANG); used to check that
    # sigsleep's running time survives Slurm's own preemption, not only scontrol suspend.
    preempt_suspend: bool = False
    # The 'urgent' tier without preemption: its jobs only go first (Barberato's backfill with
    # priorities, Table 4.5). preempt_suspend implies the tier.
    priority_tiers: bool = False
    bf_interval: int = 1
    bf_resolution: int = 1
    bf_window_min: int = 2880
    max_job_count: int = 100_000
    min_job_age: int = 600
    ctld_debug: str = "info"
    # 'virtual': every Slurm daemon reads the emulation's virtual clock (harness.model.clock):
    # no node pings (a jump must not mark nodes DOWN), launch credentials that outlive a jump
    clock: ClockMode = "wall"

    def __post_init__(self) -> None:
        if self.mode not in ("builtin", "backfill"):
            raise ValueError(f"scheduler mode must be 'builtin' or 'backfill', not {self.mode!r}")
        if self.reserve_depth is not None and self.reserve_depth < 0:
            raise ValueError("reserve_depth must be >= 0")
        if self.burst_buffer not in ("licenses", "lua"):
            raise ValueError(f"burst_buffer must be 'licenses' or 'lua', not {self.burst_buffer!r}")
        if self.clock not in ("wall", "virtual"):
            raise ValueError(f"clock must be 'wall' or 'virtual', not {self.clock!r}")

    @property
    def staging_command(self) -> str:
        """What burst_buffer.lua runs for a stage-in/out (kind, job id and script appended)."""
        return (
            f"{self.python} -m {STAGING_MODULE} --platform /etc/slurm/{PLATFORM_FILE} "
            f"--dir {self.staging_dir}"
        )

    @property
    def scheduler_parameters(self) -> str:
        params = ["batch_sched_delay=0", "sched_min_interval=0", "default_queue_depth=1000"]
        if self.mode == "backfill":
            params += [
                f"bf_interval={self.bf_interval}",
                f"bf_resolution={self.bf_resolution}",
                f"bf_window={self.bf_window_min}",
                "bf_continue",
                "bf_max_job_test=1000",
            ]
            if self.bf_licenses:
                params.append("bf_licenses")
            if self.reserve_depth is not None:
                params.append(f"bf_job_part_count_reserve={self.reserve_depth}")
        return ",".join(params)


@dataclass(frozen=True)
class NodeLine:
    """One ``NodeName=`` line: a run of nodes with consecutive names and ports on one address.

    Slurm parses slurm.conf line by line at a fixed cost per line (~0.1 ms: it compiles a
    regular expression for each), and every ``sbatch``/``squeue``/``scontrol`` parses the
    whole file: 108 one-node lines cost each client call 11 ms, two ranged lines 0.2 ms.
    ``Port=[17001-17096]`` gives the nodes of ``c[001-096]`` their ports in order.
    """

    names: str  # hostlist expression, e.g. ``c[001-096]``
    ports: str  # ``17001`` or ``[17001-17096]``
    addr: str = LOOPBACK


def node_lines(names: list[str], ports: Mapping[str, int], addresses: Mapping[str, str]) -> list[NodeLine]:
    """Group ``names`` (in order) into runs sharing address, name range and consecutive ports."""
    runs: list[list[str]] = []
    for name in names:
        run = runs[-1] if runs else None
        if (
            run
            and addresses.get(name, LOOPBACK) == addresses.get(run[-1], LOOPBACK)
            and ports[name] == ports[run[-1]] + 1
            and _continues(run[-1], name)
        ):
            run.append(name)
        else:
            runs.append([name])
    lines = []
    for run in runs:
        first, last = ports[run[0]], ports[run[-1]]
        port = str(first) if len(run) == 1 else f"[{first}-{last}]"
        lines.append(NodeLine(compress_hostlist(run), port, addresses.get(run[0], LOOPBACK)))
    return lines


def _continues(previous: str, name: str) -> bool:
    """``name`` is ``previous`` + 1 with the same prefix and digit width (c009 -> c010)."""
    prefix = name.rstrip("0123456789")
    digits, before = name[len(prefix) :], previous[len(prefix) :]
    return (
        bool(digits)
        and previous.rstrip("0123456789") == prefix
        and len(before) == len(digits)
        and int(before) + 1 == int(digits)
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


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def template_environment() -> jinja2.Environment:
    """The Jinja2 environment of ``slurm-templates/`` (strict: a missing value is an error)."""
    return _environment()


def template_context(
    platform: Platform,
    sched: SchedulerConfig,
    cluster_name: str,
    node_addresses: Mapping[str, str] | None = None,
    controller_addr: str = LOOPBACK,
) -> dict:
    """``node_addresses`` places nodes on other hosts (VMs); by default all are on loopback."""
    ports = platform.ports()
    addresses = node_addresses or {}
    return {
        "harness_version": __version__,
        "platform": platform,
        "sched": sched,
        "cluster_name": cluster_name,
        "controller_addr": controller_addr,
        # a site's nodes have lines of their own types (site_nodes)
        "compute_nodes": node_lines(platform.compute_nodes(), ports, addresses)
        if platform.site is None
        else [],
        "bb_nodes": node_lines(platform.bb_nodes(), ports, addresses),
        "compute_hostlist": compress_hostlist(platform.compute_nodes()),
        "bb_hostlist": compress_hostlist(platform.bb_nodes()),
        "bandwidth_license": BANDWIDTH_LICENSE,
        "urgent_partition": URGENT_PARTITION,
        "pfs_mbps": int(platform.io.pfs_capacity_mbps(platform.compute_count)),
        "cred_expire_s": CRED_EXPIRE_VIRTUAL_S,
        "own_node": "",  # the one node of a slurmd's own slurm.conf (own-node deployments)
        **site_context(platform, sched, ports, addresses),
    }


def render_slurm_files(
    platform: Platform,
    sched: SchedulerConfig | None = None,
    cluster_name: str = "bbemu",
    node_addresses: Mapping[str, str] | None = None,
    controller_addr: str = LOOPBACK,
) -> dict[str, str]:
    """File name -> content for every Slurm file of the cluster."""
    env = _environment()
    sched = sched or SchedulerConfig()
    ctx = template_context(platform, sched, cluster_name, node_addresses, controller_addr)
    ctx["staging_command"] = sched.staging_command
    names = SLURM_FILES + (BB_LUA_FILES if sched.burst_buffer == "lua" else ())
    files = {name: env.get_template(f"{name}.j2").render(ctx) for name in names}
    if sched.burst_buffer == "lua":
        files[PLATFORM_FILE] = platform_text(platform)
    if sched.clock == "virtual":
        preload = preload_env(f"{SHARED}/{FAKETIME_FILE}")
        files[CLOCK_ENV] = "".join(f"{key}={value}\n" for key, value in preload.items())
    if platform.deployment.slurmd_conf == "own-node":
        files.update(own_node_files(env.get_template("slurm.conf.j2"), ctx, files, addresses=node_addresses))
    return files


def own_node_files(
    template: jinja2.Template, ctx: dict, files: dict[str, str], addresses: Mapping[str, str] | None
) -> dict[str, str]:
    """``nodes/slurm-<node>.conf`` for every node (its own NodeName line, no partitions) and the
    files slurmd reads beside it: what each slurmd of an ``own-node`` deployment reads."""
    platform: Platform = ctx["platform"]
    ports = platform.ports()
    out = {f"{OWN_NODE_DIR}/{name}": files[name] for name in NODE_EXTRA_FILES}
    compute = "site_nodes" if platform.site is not None else "compute_nodes"
    for kind, nodes in ((compute, platform.compute_nodes()), ("bb_nodes", platform.bb_nodes())):
        for node in nodes:
            own: dict[str, object] = {"compute_nodes": [], "bb_nodes": [], "site_nodes": [], "own_node": node}
            if kind == "site_nodes" and platform.site is not None:
                own[kind] = site_node_lines(platform.site, ports, addresses or {}, only=node)
            else:
                own[kind] = node_lines([node], ports, addresses or {})
            out[f"{OWN_NODE_DIR}/slurm-{node}.conf"] = template.render({**ctx, **own})
    return out


def write_slurm_files(directory: Path, files: dict[str, str]) -> list[Path]:
    """Write ``files`` under ``directory``; own-node confs of an earlier deployment are removed
    (a slurmd would otherwise go on reading one)."""
    directory.mkdir(parents=True, exist_ok=True)
    if (directory / OWN_NODE_DIR).is_dir():
        shutil.rmtree(directory / OWN_NODE_DIR)
    written = []
    for name, text in files.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        path = atomic_write_text(directory / name, text)
        path.chmod(0o644)
        written.append(path)
    return written
