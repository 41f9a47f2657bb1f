"""Synthetic workloads as job plans: the models of the source documents, generated.

``feitelson96`` is Lackner's workload (the Feitelson 1996 model with Table I's
parameters); ``herbein`` is Herbein's model fitted from a trace. Both give a plan
with a manifest like ``prepare``'s, whose ``input`` names the model, its
parameters and the seed instead of a trace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness import __version__
from harness.workload.feitelson96 import Feitelson96
from harness.workload.herbein_model import HerbeinModel, fit
from harness.workload.nodes import resolve_node_size
from harness.workload.plan import MANIFEST_FORMAT, MANIFEST_VERSION, to_plan
from harness.workload.swf import read_swf
from harness.workload.table import trace_to_table

GENERATORS: tuple[str, ...] = ("feitelson96", "herbein")
# Lackner Section IV-A: 16 GB of memory per node, the size of a node's checkpoint.
NODE_MEMORY_MB = 16_000


def feitelson96_plan(
    model: Feitelson96, seed: int, bb_per_node_mb: int = NODE_MEMORY_MB, walltime_factor: float = 1.0
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Lackner's workload: walltime = runtime x factor (Lackner: accurate estimates, 1)."""
    if walltime_factor < 1.0 or bb_per_node_mb < 0:
        raise ValueError("walltime factor must be >= 1 and the BB request >= 0")
    jobs = model.generate(seed)
    jobs["walltime"] = jobs["runtime"] * walltime_factor
    jobs["bb_per_node_mb"] = np.int64(bb_per_node_mb)
    params = {**model.as_dict(), "bb_per_node_mb": bb_per_node_mb, "walltime_factor": walltime_factor}
    return _finish(jobs, params, seed)


def herbein_plan(
    trace: str | Path,
    jobs: int,
    seed: int,
    machine_nodes: int,
    size_scale: float = 1.0,
    procs_per_node: int | None = None,
) -> tuple[pd.DataFrame, dict[str, Any], HerbeinModel]:
    """Herbein's model fitted from ``trace``, then ``jobs`` jobs drawn from it; processors
    per node as everywhere (``harness.workload.nodes``: option, else the header, else 1)."""
    swf = read_swf(trace)
    size = resolve_node_size(swf.metadata, procs_per_node)
    model = fit(trace_to_table(swf), swf.metadata, size.procs_per_node)
    table = model.generate(jobs, seed, machine_nodes, size_scale)
    table["bb_per_node_mb"] = np.int64(0)  # Herbein's burst buffers sit on the nodes: no shared capacity
    params = {
        **model.summary(),
        "fitted_from": str(trace),
        "trace_sha256": swf.sha256,
        "machine_nodes": machine_nodes,
        "size_scale": size_scale,
    }
    plan, manifest = _finish(table, params, seed)
    return plan, manifest, model


def _finish(jobs: pd.DataFrame, params: dict[str, Any], seed: int) -> tuple[pd.DataFrame, dict[str, Any]]:
    jobs = jobs.copy()
    jobs["timeout"] = jobs["runtime"] > jobs["walltime"]
    jobs["bb_total_mb"] = jobs["nodes"] * jobs["bb_per_node_mb"]
    jobs["trace_submit"] = jobs["submit"]
    jobs["record"] = np.arange(len(jobs), dtype=np.int64)
    plan = to_plan(jobs)
    manifest = {
        "format": MANIFEST_FORMAT,
        "version": MANIFEST_VERSION,
        "harness_version": __version__,
        "input": {"generator": params.get("model"), **params},
        "seed": seed,
        "shrink": 0.0,
        "speedup": 1.0,
        "jobs": len(plan),
        "span_s": float(plan["submit"].max() - plan["submit"].min()),
        "columns": list(plan.columns),
    }
    return plan, manifest
