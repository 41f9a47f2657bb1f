"""What a job of a site's own history asks Slurm for besides its nodes, when a plan from
``harness workload from-sacct`` is replayed on the site's machine (``harness platform
from-slurm``, docs/site-whatif.md): its partition, CPUs, memory and GRES, as sbatch options,
and the check, before a run starts, that the site's machine can hold every job as asked.

On another platform (the bundled KTH machine) those columns mean nothing to its nodes and are
not used: jobs ask nodes only, as for an SWF trace.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from harness.model.checks import InputError
from harness.platform.site import NodeType, Site

# the plan columns (harness.workload.sacct) a job's site request is made of
SITE_COLUMNS = ("partition_name", "cpus", "mem_mb", "gres")
_GRES_ITEM = re.compile(r"^(?P<name>[A-Za-z0-9_]+)(?::(?P<type>[A-Za-z0-9_.-]+))?(?::(?P<count>\d+))?$")


def uses_site_requests(columns: Iterable[str], site: Site | None) -> bool:
    """A plan with any site column, replayed on a site's machine."""
    return site is not None and any(column in SITE_COLUMNS for column in columns)


def _present(value: Any) -> bool:
    if value is None or value is pd.NA:
        return False
    if isinstance(value, float) and math.isnan(value):
        return False
    return str(value).strip() != ""


def site_partition(job: Mapping[str, Any]) -> str | None:
    """The partition the job ran in at the site (None: not recorded)."""
    value = job.get("partition_name")
    return str(value).strip() if _present(value) else None


def site_request_words(job: Mapping[str, Any]) -> list[str]:
    """sbatch's options for the job's CPUs (``--ntasks``: one CPU each, spread over its
    nodes), memory per node (``--mem``, MB; the plan holds the whole job's) and GRES per node
    (``--gres``, as the site's submit line had it); the partition is
    :func:`site_partition`'s."""
    words = []
    nodes = max(1, int(job["nodes"]))
    if _present(job.get("cpus")) and int(job["cpus"]) > 0:
        words.append(f"--ntasks={int(job['cpus'])}")
    if _present(job.get("mem_mb")) and float(job["mem_mb"]) > 0:
        words.append(f"--mem={math.ceil(float(job['mem_mb']) / nodes - 1e-9)}M")
    if _present(job.get("gres")):
        words.append(f"--gres={str(job['gres']).strip()}")
    return words


def check_site_plan(plan: pd.DataFrame, site: Site) -> None:
    """Every job's partition is the site's and its nodes hold what it asks per node (CPUs,
    memory, GRES); else an :class:`InputError` naming the first job that cannot run."""
    partitions = {p.name: p for p in site.partitions}
    default = next((p for p in site.partitions if p.default), site.partitions[0])
    for job in plan.to_dict("records"):
        name = site_partition(job) or default.name
        if name not in partitions:
            raise InputError(
                f"plan job {int(job['job_id'])}: partition {name!r} is not one of the site's "
                f"({', '.join(partitions)})",
                where="plan",
            )
        part = partitions[name]
        types = [t for t in site.node_types if set(t.nodes) & set(part.nodes)]
        problem = _unmet(job, types, len(part.nodes))
        if problem:
            raise InputError(f"plan job {int(job['job_id'])} in partition {name!r}: {problem}", where="plan")


def _unmet(job: Mapping[str, Any], types: list[NodeType], partition_nodes: int) -> str:
    """What no node type of the partition gives the job per node ('' when one does)."""
    nodes = max(1, int(job["nodes"]))
    if nodes > partition_nodes:
        return f"{nodes} nodes, the partition has {partition_nodes}"
    cpus = math.ceil(int(job["cpus"]) / nodes) if _present(job.get("cpus")) else 0
    mem = math.ceil(float(job["mem_mb"]) / nodes - 1e-9) if _present(job.get("mem_mb")) else 0
    gres = _gres_counts(str(job["gres"])) if _present(job.get("gres")) else {}
    for node in types:
        if cpus <= node.cpus and mem <= node.real_memory_mb and _holds(node, gres):
            return ""
    asked = ", ".join([f"{cpus} CPUs", f"{mem} MB", *(f"{k}:{v}" for k, v in gres.items())])
    return f"asks per node {asked}; no node of the partition has as much"


def _gres_counts(text: str) -> dict[str, int]:
    """``gpu:a100:2,gpu:1`` -> {'gpu:a100': 2, 'gpu': 1} (a count of 1 when none is given)."""
    counts: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        match = _GRES_ITEM.match(item)
        if match is None:
            raise InputError(f"GRES {item!r} is not NAME[:TYPE][:COUNT]", where="plan")
        kind, count = match["type"], match["count"]
        if kind and kind.isdigit() and count is None:  # gpu:2 is a count, not a type
            kind, count = None, kind
        key = match["name"] + (f":{kind}" if kind else "")
        counts[key] = counts.get(key, 0) + int(count or 1)
    return counts


def _holds(node: NodeType, asked: Mapping[str, int]) -> bool:
    for key, count in asked.items():
        name, _, kind = key.partition(":")
        have = sum(g.count for g in node.gres if g.name == name and (not kind or g.type == kind))
        if have < count:
            return False
    return True
