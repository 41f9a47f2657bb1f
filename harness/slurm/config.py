"""Render slurm.conf and friends from a platform description plus a scheduler mode.

The templates live in ``slurm-templates/``; this module only computes the values
they need. The same rendering feeds the Docker cluster, compose users and Ansible.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import jinja2

from harness import __version__
from harness.model.atomic import atomic_write_text
from harness.model.clock import HELD_WAIT_MS, NODES_WAIT_MS, preload_env
from harness.model.hostlist import compress_hostlist
from harness.model.paths import templates_dir
from harness.model.rundir import FAKETIME_FILE, SHARED
from harness.platform import Platform, platform_text
from harness.slurm.conf_settings import apply_settings, conf_diff, site_settings
from harness.slurm.settings import (
    BANDWIDTH_LICENSE,
    BB_LUA_FILES,
    CLOCK_ENV,
    CRED_EXPIRE_VIRTUAL_S,
    GPU_STANDIN_DIR,
    HARNESS_PYTHON,
    LOOPBACK,
    NODE_EXTRA_FILES,
    NODES_CLOCK_ENV,
    OWN_NODE_DIR,
    PLATFORM_FILE,
    PREEMPT_MODES,
    SLURM_FILES,
    STAGING_MODULE,
    URGENT_PARTITION,
    VIRTUAL_TIMEOUTS_S,
    BurstBufferMode,
    ClockMode,
    NodeLine,
    SchedulerConfig,
    SchedulerMode,
    node_lines,
)
from harness.slurm.site_render import accounting_tres, site_context, site_node_lines

# what the rendering's users import from here (defined in harness.slurm.settings)
__all__ = [
    "BANDWIDTH_LICENSE",
    "BB_LUA_FILES",
    "CLOCK_ENV",
    "CRED_EXPIRE_VIRTUAL_S",
    "GPU_STANDIN_DIR",
    "HARNESS_PYTHON",
    "LOOPBACK",
    "NODES_CLOCK_ENV",
    "NODE_EXTRA_FILES",
    "OWN_NODE_DIR",
    "PLATFORM_FILE",
    "PREEMPT_MODES",
    "SLURM_FILES",
    "STAGING_MODULE",
    "URGENT_PARTITION",
    "BurstBufferMode",
    "ClockMode",
    "NodeLine",
    "SchedulerConfig",
    "SchedulerMode",
    "baseline_scheduler",
    "node_lines",
    "render_slurm_files",
    "settings_diff",
    "template_environment",
    "write_slurm_files",
]


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


def _timeouts(platform: Platform, sched: SchedulerConfig) -> dict[str, int]:
    """slurm.conf's timeouts of a real answer: the platform's, raised on the virtual clock."""
    own = {"MessageTimeout": platform.deployment.message_timeout}
    if sched.clock != "virtual":
        return own
    return {key: max(own.get(key, 0), value) for key, value in VIRTUAL_TIMEOUTS_S.items()}


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
        "timeouts": _timeouts(platform, sched),
        "accounting_tres": accounting_tres(platform),
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
    if sched.settings:  # an experiment cell's own settings (SchedulerParameters are already in)
        partition = jobs_partition(platform)
        files["slurm.conf"] = apply_settings(files["slurm.conf"], dict(sched.settings), partition)
    if sched.burst_buffer == "lua":
        files[PLATFORM_FILE] = platform_text(platform)
    if sched.clock == "virtual":
        for name, wait_ms in ((CLOCK_ENV, HELD_WAIT_MS), (NODES_CLOCK_ENV, NODES_WAIT_MS)):
            preload = preload_env(f"{SHARED}/{FAKETIME_FILE}", wait_ms)
            files[name] = "".join(f"{key}={value}\n" for key, value in preload.items())
    if platform.deployment.slurmd_conf == "own-node":
        files.update(own_node_files(env.get_template("slurm.conf.j2"), ctx, files, addresses=node_addresses))
    return files


def baseline_scheduler(platform: Platform, sched: SchedulerConfig) -> tuple[str, SchedulerConfig]:
    """What a cell's settings are compared with: the site's own settings (those the settings
    table knows) on a site's platform, else the policy's rendering without settings."""
    if platform.site is not None:
        return "site", replace(sched, settings=tuple(site_settings(platform.site.settings).items()))
    return "policy", replace(sched, settings=())


def settings_diff(platform: Platform, sched: SchedulerConfig) -> tuple[str, list[str]]:
    """(the baseline's name, the slurm.conf lines ``sched``'s settings change against it)."""
    name, base = baseline_scheduler(platform, sched)
    before = render_slurm_files(platform, base)["slurm.conf"]
    return name, conf_diff(before, render_slurm_files(platform, sched)["slurm.conf"])


def jobs_partition(platform: Platform) -> str:
    """The partition the replayed jobs go to: a site's default one, else the compute partition."""
    return platform.site.default_partition.name if platform.site is not None else platform.compute.partition


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
