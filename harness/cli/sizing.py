"""``--nodes N [--bb-nodes M] [--nodes-per-chassis K]``: a machine of any size in one command
(``harness cluster up``, ``harness run``), built from ``--platform``'s node kinds, bandwidths
and deployment by :mod:`harness.platform.sized` and written as a platform file, so that a
resumed or detached run reads the same machine."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from harness.cli.options import IntegerType
from harness.model.paths import state_root
from harness.platform import PlatformError, load_platform
from harness.platform.sized import bb_per_chassis_for, deployed_for_size, sized
from harness.platform.writing import save_platform

F = TypeVar("F", bound=Callable[..., Any])
DEFAULT_PER_CHASSIS = 8  # the study's chassis of 8 compute nodes
NODES = IntegerType(1, 60_000, "one slurmd port each")
PLATFORMS_DIR = "platforms"  # in the state directory: the machines made by --nodes


def size_options(func: F) -> F:
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
    """``--platform``, or with ``--nodes`` the file of the machine of that size."""
    compute, bb, per_chassis = (kw.pop(k) for k in ("compute_nodes", "bb_nodes", "nodes_per_chassis"))
    if compute is None:
        if bb is not None or per_chassis is not None:
            raise click.UsageError("--bb-nodes and --nodes-per-chassis size a machine: give --nodes too")
        return platform_file
    per_chassis = per_chassis or DEFAULT_PER_CHASSIS
    try:
        base = load_platform(platform_file)
        each = bb_per_chassis_for(compute, per_chassis, bb)
        chassis = -(-compute // per_chassis)
        name = f"{base.name}-n{compute}-bb{each * chassis}-c{per_chassis}"
        machine = sized(compute, per_chassis=per_chassis, bb_per_chassis=each, base=base, name=name)
        platform = deployed_for_size(machine)
        path = state_root() / PLATFORMS_DIR / f"{platform.name}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        save_platform(platform, path, comment=f"harness --nodes {compute} on {base.name}")
    except PlatformError as exc:
        raise click.UsageError(str(exc)) from None
    return str(path)
