"""A platform sized for a trace: ``harness platform from-trace``.

The compute size is the traced machine's (``MaxNodes`` of the header, else the widest
job in nodes; ``nodes`` overrides), sizes counted in nodes as everywhere
(:mod:`harness.workload.nodes`). Burst-buffer nodes follow the study's layout: one BB
node in every chassis of ``bb_ratio`` compute nodes (the last chassis may be partial),
chassis grouped by up to 4 as the study's dragonfly (3 groups x 4 chassis x 8 nodes).
A BB node holds ``bb_capacity_mb``, by default ``bb_ratio`` x 5,000 MB: the study's
40,000 MB for 8 compute nodes, i.e. about one mean log-normal request (4.58 GiB) per
compute node (Kopański 2020, Section 2.2). The burst-buffer model caps a per-node request
at the BB node's capacity (:mod:`harness.workload.bbmodel`), so the cap follows the platform.
Everything else (node kinds, bandwidths, deployment: ports from the same bases, 4 node
containers, which hold 1,134 slurmd on one host, see docs/cluster.md) is the built-in
platform's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.platform import Platform, PlatformError
from harness.platform.sized import sized
from harness.workload.nodes import machine_nodes, resolve_node_size
from harness.workload.swf import read_swf
from harness.workload.table import trace_to_table


@dataclass(frozen=True)
class TracePlatform:
    platform: Platform
    info: dict[str, Any]  # where the sizes come from (for the file's comment and the CLI)


def sized_platform(
    compute: int, *, bb_ratio: int = 8, bb_capacity_mb: int | None = None, name: str | None = None,
    base: Platform | None = None, description: str = "",
) -> Platform:  # fmt: skip
    """``compute`` nodes in chassis of ``bb_ratio`` with one BB node each (see the module docstring)."""
    if compute < 1 or bb_ratio < 1:
        raise PlatformError(f"need compute nodes >= 1 and --bb-ratio >= 1, got {compute} and {bb_ratio}")
    if bb_capacity_mb is not None and bb_capacity_mb < 1:
        raise PlatformError(f"--bb-capacity-mb must be >= 1, got {bb_capacity_mb}")
    chassis = math.ceil(compute / bb_ratio)
    made = sized(compute, per_chassis=bb_ratio, bb_capacity_mb=bb_capacity_mb,
                 name=name or f"trace-{compute}-{chassis}", description=description, base=base)  # fmt: skip
    return replace(made, source="<from trace>")


def platform_from_trace(
    trace_path: str | Path, *, bb_ratio: int = 8, bb_capacity_mb: int | None = None, nodes: int | None = None,
    procs_per_node: int | None = None, lenient: bool = False, name: str | None = None,
) -> TracePlatform:  # fmt: skip
    """The platform of the machine a trace was recorded on."""
    trace = read_swf(trace_path, lenient=lenient)
    size = resolve_node_size(trace.metadata, procs_per_node)
    widest = trace_to_table(trace, size.procs_per_node)["nodes"].max()
    widest_nodes = 0 if widest is None or widest != widest else int(widest)  # NA: no job of known size
    if nodes is not None:
        compute, why = nodes, f"--nodes {nodes}"
    else:
        compute, why = machine_nodes(trace.metadata, widest_nodes, size)
    stem = Path(trace.path).name.split(".")[0]
    platform = sized_platform(compute, bb_ratio=bb_ratio, bb_capacity_mb=bb_capacity_mb,
                              name=name or f"{stem}-{compute}")  # fmt: skip
    info = {
        "trace": trace.path,
        "sha256": trace.sha256,
        "compute_nodes": compute,
        "compute_nodes_from": why,
        "widest_job_nodes": widest_nodes,
        "node_size": size.as_dict(),
        "bb_nodes": platform.bb_count,
        "bb_ratio": bb_ratio,
        "bb_capacity_mb": platform.bb_capacity_mb,
    }
    return TracePlatform(platform, info)
