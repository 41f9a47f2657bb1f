"""``--nodes N [--bb-nodes M] [--nodes-per-chassis K]``: a machine of any size in one command
(``harness cluster up``, ``harness run``), built from ``--platform``'s node kinds, bandwidths
and deployment by :mod:`harness.platform.sized` and written as a platform file, so that a
resumed or detached run reads the same machine. ``--no-accounting`` likewise: the platform
without slurmdbd."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

import click

from harness.cli.options import IntegerType
from harness.model.paths import state_root
from harness.platform import Platform, PlatformError, load_platform
from harness.platform.sized import bb_per_chassis_for, deployed_for_size, sized
from harness.platform.writing import save_platform

F = TypeVar("F", bound=Callable[..., Any])
DEFAULT_PER_CHASSIS = 8  # the study's chassis of 8 compute nodes
NODES = IntegerType(1, 60_000, "one slurmd port each")
PLATFORMS_DIR = "platforms"  # in the state directory: the machines made by --nodes


def size_options(func: F) -> F:
    func = click.option(
        "--no-accounting", "no_accounting", is_flag=True,
        help="No slurmdbd/MariaDB (sacct) in the cluster: Slurm's record of a run from its jobcomp log.",
    )(func)  # fmt: skip
    func = click.option(
        "--nodes-per-chassis", "nodes_per_chassis", type=IntegerType(1, 60_000), default=None,
        help=f"With --nodes: compute nodes per chassis [default: {DEFAULT_PER_CHASSIS}].",
    )(func)  # fmt: skip
    func = click.option(
        "--bb-nodes", "bb_nodes", type=NODES, default=None,
        help="With --nodes: burst-buffer nodes in all, the same number in every chassis "
        "[default: one per chassis].",
    )(func)  # fmt: skip
    return click.option(
        "--nodes", "compute_nodes", type=NODES, default=None,
        help="A machine of this many compute nodes instead of --platform's size (its node kinds, "
        "bandwidths and deployment); above 500 nodes each slurmd reads its own node's slurm.conf.",
    )(func)  # fmt: skip


def sized_platform_file(platform_file: str, kw: dict[str, Any]) -> str:
    """``--platform``, or with ``--nodes`` or ``--no-accounting`` the file of that machine."""
    compute, bb, per_chassis = (kw.pop(k) for k in ("compute_nodes", "bb_nodes", "nodes_per_chassis"))
    no_accounting = kw.pop("no_accounting", False)
    if compute is None and (bb is not None or per_chassis is not None):
        raise click.UsageError("--bb-nodes and --nodes-per-chassis size a machine: give --nodes too")
    if compute is None and not no_accounting:
        return platform_file
    try:
        platform = load_platform(platform_file)
        how = [
            "harness",
            *(["--nodes", str(compute)] if compute else []),
            *(["--no-accounting"] * no_accounting),
        ]
        if compute is not None:
            platform = _sized(platform, compute, per_chassis or DEFAULT_PER_CHASSIS, bb)
        if no_accounting:
            platform = _without_accounting(platform)
        path = state_root() / PLATFORMS_DIR / f"{platform.name}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        save_platform(platform, path, comment=f"{' '.join(how)} on {platform_file}")
    except PlatformError as exc:
        raise click.UsageError(str(exc)) from None
    return str(path)


def _sized(base: Platform, compute: int, per_chassis: int, bb: int | None) -> Platform:
    each = bb_per_chassis_for(compute, per_chassis, bb)
    chassis = -(-compute // per_chassis)
    name = f"{base.name}-n{compute}-bb{each * chassis}-c{per_chassis}"
    return deployed_for_size(
        sized(compute, per_chassis=per_chassis, bb_per_chassis=each, base=base, name=name)
    )


def _without_accounting(platform: Platform) -> Platform:
    accounting = dataclasses.replace(platform.deployment.accounting, enabled=False)
    return dataclasses.replace(platform.redeployed(accounting=accounting), name=f"{platform.name}-noacct")
