"""Processors per node: how a trace's processor counts become node counts.

SWF fields 5 and 8 count *processors*; a platform counts *nodes*. A job asking for ``p``
processors (field 8, else the allocated field 5 when the request is unknown) takes
``ceil(p / procs_per_node)`` nodes. ``procs_per_node`` is, in this order:

1. ``--procs-per-node N`` when given (source ``option``);
2. ``MaxProcs / MaxNodes`` from the trace's header when both are known (source
   ``header``). When that ratio is not an integer, or a header note speaks of several
   node types, the machine is *heterogeneous*: the rule takes the ratio rounded down
   (at least 1), i.e. the size of the smaller, usually most common, nodes, so no job
   is made narrower than it was, and warns (CEA Curie: 93,312 / 5,544 = 16.8 -> 16,
   its 5,040 thin nodes);
3. otherwise 1 (source ``assumed``), with a warning: the header cannot tell.

The machine's node count (:func:`machine_nodes`) is ``MaxNodes`` when known, else the
widest job of the trace in nodes (with a warning).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

_HETEROGENEOUS_NOTE = re.compile(r"heterogen|types? of nodes|node types|kinds of nodes", re.IGNORECASE)


class NodeSizeError(ValueError):
    """An impossible processors-per-node value."""


@dataclass(frozen=True)
class NodeSize:
    """The processors per node a trace is read with, and why."""

    procs_per_node: int
    source: str  # "option", "header" or "assumed"
    reason: str
    heterogeneous: bool = False
    warning: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _header_int(metadata: dict[str, str], key: str) -> int | None:
    value = metadata.get(key)
    try:
        number = int(str(value).split()[0]) if value is not None else None
    except (ValueError, IndexError):
        return None
    return number if number is not None and number > 0 else None


def resolve_node_size(metadata: dict[str, str], override: int | None = None) -> NodeSize:
    """The processors per node of a trace with this header (see the module docstring)."""
    notes = metadata.get("Note", "")
    hetero_note = bool(_HETEROGENEOUS_NOTE.search(notes))
    if override is not None:
        if isinstance(override, bool) or not isinstance(override, int) or override < 1:
            raise NodeSizeError(f"--procs-per-node must be an integer >= 1, got {override!r}")
        return NodeSize(override, "option", f"--procs-per-node {override}", hetero_note)
    procs, nodes = _header_int(metadata, "MaxProcs"), _header_int(metadata, "MaxNodes")
    if procs is None or nodes is None:
        missing = " and ".join(k for k, v in (("MaxProcs", procs), ("MaxNodes", nodes)) if v is None)
        warning = (
            f"the header gives no {missing}: assuming 1 processor per node "
            "(pass --procs-per-node N for a machine of N-processor nodes)"
        )
        return NodeSize(1, "assumed", f"no {missing} in the header", hetero_note, warning)
    ratio = procs / nodes
    reason = f"MaxProcs {procs} / MaxNodes {nodes}"
    if ratio == int(ratio) and not hetero_note:
        return NodeSize(int(ratio), "header", reason)
    chosen = max(1, math.floor(ratio))
    why = "a header note names several node types" if hetero_note else f"{ratio:.4g} is not an integer"
    warning = (
        f"heterogeneous machine ({reason} = {ratio:.4g}; {why}): using {chosen} processors per node, "
        "the ratio rounded down; pass --procs-per-node N to choose"
    )
    return NodeSize(chosen, "header", f"{reason} = {ratio:.4g}, rounded down", True, warning)


def procs_to_nodes(procs: np.ndarray, procs_per_node: int) -> np.ndarray:
    """Processor counts (> 0) to node counts: ceil(p / procs_per_node); unknown (<= 0) stays 0."""
    p = np.asarray(procs, dtype=np.float64)
    return np.where(p > 0, np.ceil(p / procs_per_node), 0).astype(np.int64)


def machine_nodes(metadata: dict[str, str], widest_job_nodes: int, size: NodeSize) -> tuple[int, str]:
    """The traced machine's compute nodes and where the number comes from."""
    header = _header_int(metadata, "MaxNodes")
    if header is not None:
        return header, f"MaxNodes {header} in the header"
    if widest_job_nodes < 1:
        raise NodeSizeError("no MaxNodes in the header and no job of known size: give --nodes N")
    return widest_job_nodes, (
        f"no MaxNodes in the header: the widest job, {widest_job_nodes} nodes at "
        f"{size.procs_per_node} processor(s) per node (give --nodes N to choose)"
    )
