"""A site's machine from ``scontrol show node --json`` and ``scontrol show partition --json``.

The layout read is Slurm 24.11's (data_parser v0.0.42): ``{"nodes": [...]}`` with, per node,
``name``, ``cpus``, ``sockets``, ``cores``, ``threads``, ``real_memory``, ``gres``
(``gpu:a100:2(S:0-1)``), ``features`` (a list, or a comma-separated string in older
versions), ``weight``, ``partitions``; and ``{"partitions": [...]}`` with ``name``,
``nodes.configured``, ``maximums.time`` / ``defaults.time`` / ``maximums.nodes`` (Slurm's
``{"set", "infinite", "number"}`` form, or a plain number), ``priority.tier``,
``partition.state`` and ``maximums.oversubscribe`` (``jobs``, ``flags``).

One file may hold both arrays, or two files one each (``--scontrol`` twice). Without the
partitions, each partition a node lists becomes one (no limits). Slurm 24.11 does not dump a
partition's ``Default=YES`` flag in JSON: the default is the one ``default_partition`` names,
else the first (a note says which). GresTypes are the GRES names the nodes hold; licenses and
scheduler settings are not in these files (``slurm.conf`` has them).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.model import checks
from harness.model.checks import InputError
from harness.model.hostlist import HostlistError, expand_hostlist
from harness.platform.from_slurm import FromSlurm, type_name
from harness.platform.site import SLURM_WORD, Gres, NodeType, Partition, Site
from harness.platform.slurm_conf import SlurmConfError, canonical

MAX_JSON_BYTES = 256 * 2**20
# JSON fields that change scheduling and are not emulated, by the slurm.conf key that sets them
# (what --drop names): a value other than these harmless ones refuses the file.
PARTITION_SCHEDULING = {
    ("accounts", "allowed"): "AllowAccounts",
    ("groups", "allowed"): "AllowGroups",
    ("qos", "allowed"): "AllowQos",
    ("accounts", "deny"): "DenyAccounts",
    ("qos", "deny"): "DenyQos",
    ("qos", "assigned"): "QOS",
}
NODE_SCHEDULING = {"specialized_cores": "CoreSpecCount", "specialized_memory": "MemSpecLimit"}
_HARMLESS = (None, "", "ALL", 0)


def read_scontrol(
    paths: Iterable[str | Path], drop: Iterable[str] = (), default_partition: str | None = None
) -> FromSlurm:
    """The site of one or two scontrol JSON files (nodes, and partitions when given)."""
    nodes: list[tuple[str, int, dict[str, Any]]] = []
    partitions: list[tuple[str, int, dict[str, Any]]] = []
    shown = []
    for path in paths:
        document = _document(Path(path))
        shown.append(Path(path).name)
        nodes += [(str(path), i, entry) for i, entry in enumerate(_array(document, "nodes", path))]
        partitions += [(str(path), i, entry) for i, entry in enumerate(_array(document, "partitions", path))]
    if not nodes:
        raise SlurmConfError(f"{', '.join(shown)}: no nodes (give `scontrol show node --json`)")
    dropping = {canonical(key) for key in drop}
    dropped: list[str] = []
    types = _node_types(nodes, dropping, dropped)
    notes: list[str] = []
    if partitions:
        parts = [_partition(path, i, entry, types, dropping, dropped) for path, i, entry in partitions]
    else:
        parts = _partitions_of_nodes(nodes)
        notes.append("no partition JSON: partitions from the nodes' lists, without limits")
    parts = _with_default(parts, default_partition, notes)
    site = Site(
        node_types=tuple(types),
        partitions=tuple(parts),
        gres_types=tuple(dict.fromkeys(g.name for t in types for g in t.gres)),
        origin=" + ".join(shown),
    )
    return FromSlurm(site, dropped=tuple(dropped), notes=tuple(notes))


def _document(path: Path) -> dict[str, Any]:
    try:
        data = checks.read_input(path, str(path), MAX_JSON_BYTES)
    except InputError as exc:
        raise SlurmConfError(str(exc)) from None
    try:
        document = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SlurmConfError(f"{path}: not JSON ({exc})") from None
    if not isinstance(document, dict) or not ({"nodes", "partitions"} & set(document)):
        raise SlurmConfError(f"{path}: not scontrol's JSON: no 'nodes' or 'partitions' array")
    return document


def _array(document: dict[str, Any], key: str, path: str | Path) -> list[dict[str, Any]]:
    value = document.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise SlurmConfError(f"{path}: {key}: expected an array of objects")
    return value


# -- nodes -------------------------------------------------------------------------------------
def _node_types(nodes: list[tuple[str, int, dict[str, Any]]], dropping: set[str],
                dropped: list[str]) -> list[NodeType]:  # fmt: skip
    types: list[NodeType] = []
    seen: set[str] = set()
    for path, i, entry in nodes:
        where = f"{path}: nodes[{i}]"
        kind = _node(where, entry, dropping, dropped)
        if kind.nodes[0] in seen:
            raise SlurmConfError(f"{where}.name: node {kind.nodes[0]} is listed twice")
        seen.add(kind.nodes[0])
        same = next((t for t in types if t.same_configuration(kind)), None)
        if same is not None:
            types[types.index(same)] = replace(same, nodes=same.nodes + kind.nodes)
        else:
            types.append(replace(kind, name=type_name(kind.nodes[0], [t.name for t in types])))
    return types


def _node(where: str, entry: dict[str, Any], dropping: set[str], dropped: list[str]) -> NodeType:
    name = entry.get("name")
    if not isinstance(name, str) or not SLURM_WORD.fullmatch(name):
        raise SlurmConfError(f"{where}.name: expected a node name, got {checks.show(name)}")
    for key, slurm_key in NODE_SCHEDULING.items():
        if entry.get(key) not in _HARMLESS:
            _scheduling(f"{where}.{key}", slurm_key, dropping, dropped)
    gres = []
    for item in (g for g in str(entry.get("gres") or "").split(",") if g and g != "(null)"):
        try:
            gres.append(Gres.parse(item))
        except ValueError as exc:
            raise SlurmConfError(f"{where}.gres: {exc}") from None
    return NodeType(
        name="pending",
        nodes=(name,),
        cpus=_int(entry, "cpus", where),
        real_memory_mb=_int(entry, "real_memory", where),
        sockets=_int(entry, "sockets", where, required=False),
        cores_per_socket=_int(entry, "cores", where, required=False),
        threads_per_core=_int(entry, "threads", where, required=False),
        features=tuple(_list(entry.get("features"), f"{where}.features")),
        gres=tuple(gres),
        weight=_int(entry, "weight", where, required=False, minimum=0),
    )


def _partitions_of_nodes(nodes: list[tuple[str, int, dict[str, Any]]]) -> list[Partition]:
    members: dict[str, list[str]] = {}
    for path, i, entry in nodes:
        for part in _list(entry.get("partitions"), f"{path}: nodes[{i}].partitions"):
            members.setdefault(part, []).append(entry["name"])
    return [Partition(name=name, nodes=tuple(names)) for name, names in members.items()]


# -- partitions --------------------------------------------------------------------------------
def _partition(path: str, i: int, entry: dict[str, Any], types: list[NodeType], dropping: set[str],
               dropped: list[str]) -> Partition:  # fmt: skip
    where = f"{path}: partitions[{i}]"
    name = entry.get("name")
    if not isinstance(name, str) or not SLURM_WORD.fullmatch(name):
        raise SlurmConfError(f"{where}.name: expected a partition name, got {checks.show(name)}")
    for (group, key), slurm_key in PARTITION_SCHEDULING.items():
        value = _field(entry, group, key)
        if value not in _HARMLESS:
            _scheduling(f"{where}.{group}.{key}", slurm_key, dropping, dropped)
    known = {n for t in types for n in t.nodes}
    text = _field(entry, "nodes", "configured")
    try:
        names = expand_hostlist(text) if isinstance(text, str) else []
    except HostlistError as exc:
        raise SlurmConfError(f"{where}.nodes.configured: bad range: {exc}") from None
    if not names:
        raise SlurmConfError(f"{where}.nodes.configured: no nodes")
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SlurmConfError(f"{where}.nodes.configured: unknown node {unknown[0]} (not in the node JSON)")
    states = _field(entry, "partition", "state") or ["UP"]
    state = (states[0] if isinstance(states, list) and states else str(states)).upper()
    return Partition(
        name=name,
        nodes=tuple(names),
        max_time_min=_no_val(_field(entry, "maximums", "time"), f"{where}.maximums.time"),
        default_time_min=_no_val(_field(entry, "defaults", "time"), f"{where}.defaults.time", unset=True),
        max_nodes=_no_val(_field(entry, "maximums", "nodes"), f"{where}.maximums.nodes"),
        state=state,
        priority_tier=_tier(_field(entry, "priority", "tier"), f"{where}.priority.tier"),
        oversubscribe=_oversubscribe(_field(entry, "maximums", "oversubscribe")),
    )


def _with_default(parts: list[Partition], named: str | None, notes: list[str]) -> list[Partition]:
    if named is not None:
        if named not in [p.name for p in parts]:
            raise SlurmConfError(
                f"--default-partition {named}: no such partition ({', '.join(p.name for p in parts)})"
            )
        chosen = named
    else:
        chosen = parts[0].name
        notes.append(f"scontrol's JSON does not say which partition is the default: {chosen}, the first")
    return [replace(p, default=p.name == chosen) for p in parts]


def _no_val(value: Any, where: str, unset: bool = False) -> int | None:
    """Slurm's ``{"set", "infinite", "number"}``: None when infinite (or unset, for a default)."""
    if value is None:
        return None
    if isinstance(value, dict):
        if value.get("infinite") or (unset and not value.get("set", True)) or not value.get("set", True):
            return None
        value = value.get("number")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SlurmConfError(
            f"{where}: expected a number or Slurm's {{set, infinite, number}}, got {checks.show(value)}"
        )
    return value


def _tier(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65533:
        raise SlurmConfError(f"{where}: expected a whole number in 0..65533, got {checks.show(value)}")
    return value


def _oversubscribe(value: Any) -> str | None:
    """``{"jobs": 1, "flags": []}`` -> NO; jobs 0 -> EXCLUSIVE; n > 1 -> YES:n; force -> FORCE:n."""
    if not isinstance(value, dict) or not isinstance(value.get("jobs"), int):
        return None
    jobs = value["jobs"]
    if "force" in [str(f).lower() for f in value.get("flags") or []]:
        return f"FORCE:{jobs}"
    return "EXCLUSIVE" if jobs == 0 else "NO" if jobs == 1 else f"YES:{jobs}"


# -- small readers -----------------------------------------------------------------------------
def _scheduling(where: str, key: str, dropping: set[str], dropped: list[str]) -> None:
    if canonical(key) in dropping:
        if key not in dropped:
            dropped.append(key)
        return
    raise SlurmConfError(
        f"{where} ({key}): changes scheduling and is not emulated; drop it knowingly with --drop {key}"
    )


def _field(entry: dict[str, Any], group: str, key: str) -> Any:
    inner = entry.get(group)
    return inner.get(key) if isinstance(inner, dict) else None


def _int(entry: dict[str, Any], key: str, where: str, required: bool = True, minimum: int = 1) -> Any:
    if key not in entry or entry[key] is None:
        if required:
            raise SlurmConfError(f"{where}: missing '{key}'")
        return None
    value = entry[key]
    if isinstance(value, dict):  # a {set, infinite, number} where a plain number was expected
        value = value.get("number")
    try:
        return checks.integer(value, f"{where}.{key}", minimum, checks.MAX_INT32)
    except InputError as exc:
        raise SlurmConfError(str(exc)) from None


def _list(value: Any, where: str) -> list[str]:
    """A list of words, or a comma-separated string of them (older data_parser versions)."""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise SlurmConfError(f"{where}: expected a list of names, got {checks.show(value)}")
    bad = [v for v in items if v and not SLURM_WORD.fullmatch(v)]
    if bad:
        raise SlurmConfError(f"{where}: {bad[0]!r} is not a name")
    return [v for v in items if v]
