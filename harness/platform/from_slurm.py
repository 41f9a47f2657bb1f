"""A site's slurm.conf as a :class:`~harness.platform.site.Site`, and the platform that runs it.

Every key of the file falls in one of four sets, so that nothing is dropped silently:

* **modelled**: ``NodeName`` (CPUs, sockets, cores, threads, memory, GRES, features, weight,
  state), ``PartitionName`` (nodes, default, time limits, MaxNodes, state, PriorityTier,
  OverSubscribe), ``GresTypes``, ``Licenses``, with ``NodeName=DEFAULT`` and
  ``PartitionName=DEFAULT`` lines setting the defaults of the lines after them;
* **kept**: the site's scheduler settings (``SchedulerType``, ``SchedulerParameters``,
  ``PriorityType``, ``PriorityWeight*`` ...), recorded in the platform for experiments that
  vary them, not applied (the emulation runs the harness's scheduler settings);
* **scheduling**: keys that change which job runs where or when and that the emulation cannot
  reproduce (``TopologyPlugin``, a partition's ``AllowGroups`` or ``QOS``, a node's
  ``CoreSpecCount`` ...): an error naming file, line and key, unless the user drops them
  knowingly (``--drop KEY``), and then listed as dropped;
* **ignored**: everything else (paths, daemons, logging, timeouts, a node's address and port,
  which the emulation replaces): listed once in the summary.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from harness.platform.loading import bundled_platform_file, platform_from_dict
from harness.platform.platform import Platform
from harness.platform.site import SLURM_WORD, Gres, NodeType, Site
from harness.platform.site_partitions import partitions_of
from harness.platform.site_toml import site_to_dict
from harness.platform.sized import deployed_for_size
from harness.platform.slurm_conf import (
    ConfLine,
    SlurmConfError,
    Where,
    canonical,
    read_slurm_conf,
    slurm_count,
)
from harness.platform.slurm_conf_keys import (
    HARMLESS_PARTITION_VALUES,
    HARMLESS_VALUES,
    KEPT_SETTINGS,
    NAMING_BB_PREFIXES,
    NODE_IGNORED,
    NODE_MODELLED,
    NODE_SCHEDULING,
    NODE_STATES_READ,
    PARTITION_IGNORED,
    PARTITION_MODELLED,
    PARTITION_SCHEDULING,
    SCHEDULING_GLOBAL,
    Reading,
    key_spelling,
    node_names,
)


@dataclass(frozen=True)
class FromSlurm:
    """What was read: the site, and what of the file it does not hold (listed, never silent)."""

    site: Site
    ignored: tuple[str, ...] = ()  # keys not modelled, each once: ``SlurmctldHost``, ``NodeName:NodeAddr``
    dropped: tuple[str, ...] = ()  # scheduling keys left out on request (--drop)
    notes: tuple[str, ...] = ()  # choices made where the file left one open
    cluster_name: str | None = None  # the file's ClusterName: the platform's name by default


_Reading = Reading


def read_site(path: str | Path, drop: Iterable[str] = ()) -> FromSlurm:
    """The site of a slurm.conf file (and what it includes)."""
    return site_from_conf(read_slurm_conf(path), drop=drop, origin=Path(path).name)


def site_from_conf(lines: list[ConfLine], drop: Iterable[str] = (), origin: str = "") -> FromSlurm:
    """The site of slurm.conf lines; a key that changes scheduling refuses it unless in ``drop``."""
    reading = _Reading(drop={canonical(key) for key in drop})
    for line in lines:
        _sort_line(line, reading)
    if reading.refused:
        where, key, why = reading.refused[0]
        more = reading.refused[1:]
        also = f"; also {', '.join(f'{k} ({w})' for w, k, _ in more[:4])}" if more else ""
        also += " ..." if len(more) > 4 else ""
        raise where.error(
            key, f"changes scheduling and is not emulated: {why}; drop it knowingly with --drop {key}{also}"
        )
    gres_types = _gres_types(reading)
    node_types = _node_types(reading, gres_types)
    partitions, notes = partitions_of(reading, node_types)
    site = Site(
        node_types=tuple(node_types),
        partitions=tuple(partitions),
        gres_types=tuple(gres_types),
        licenses=tuple(_licenses(reading)),
        settings=tuple((spelling, value) for _, spelling, value in _kept(reading)),
        origin=origin,
    )
    cluster = next((value for (_, key, value) in _named(lines, "clustername")), None)
    return FromSlurm(site, tuple(reading.ignored), tuple(reading.dropped), tuple(notes), cluster)


def _named(lines: list[ConfLine], name: str) -> list[tuple[Where, str, str]]:
    """Every ``name=value`` pair of the global lines."""
    records = ("nodename", "partitionname")
    return [(line.where, key, value) for line in lines for key, value in line.pairs
            if canonical(key) == name and canonical(line.first_key) not in records]  # fmt: skip


# -- one line ----------------------------------------------------------------------------------
def _sort_line(line: ConfLine, reading: _Reading) -> None:
    first = canonical(line.first_key)
    if first == "nodename":
        _record(line, reading, reading.node_defaults, reading.nodes, NODE_MODELLED, NODE_IGNORED,
                NODE_SCHEDULING, "NodeName")  # fmt: skip
    elif first == "partitionname":
        _record(line, reading, reading.partition_defaults, reading.partitions, PARTITION_MODELLED,
                PARTITION_IGNORED, PARTITION_SCHEDULING, "PartitionName")  # fmt: skip
    else:
        for key, value in line.pairs:
            _global(line.where, key, value, reading)


def _global(where: Where, key: str, value: str, reading: _Reading) -> None:
    name = canonical(key)
    if name in SCHEDULING_GLOBAL and value.strip().lower() not in HARMLESS_VALUES.get(name, ()):
        reading.scheduling(where, key, SCHEDULING_GLOBAL[name])
    elif name in KEPT_SETTINGS or name in ("grestypes", "licenses"):
        reading.globals[name] = (where, KEPT_SETTINGS.get(name, key), value)
    else:
        reading.ignore(key)


def _record(
    line: ConfLine,
    reading: _Reading,
    defaults: dict[str, tuple[Where, str]],
    records: list[tuple[ConfLine, dict[str, tuple[Where, str]]]],
    modelled: list[str],
    ignored: list[str],
    scheduling: dict[str, str],
    kind: str,
) -> None:
    """A NodeName or PartitionName line: its modelled keys over the defaults so far."""
    values: dict[str, tuple[Where, str]] = {}
    for key, value in line.pairs[1:]:
        name = canonical(key)
        if name in modelled:
            values[name] = (line.where, value)
        elif name in ignored:
            reading.ignore(f"{kind}:{key}")
        elif (
            name in scheduling
            and kind == "PartitionName"
            and value.strip().lower() in HARMLESS_PARTITION_VALUES
        ):
            reading.ignore(f"{kind}:{key}")  # AllowGroups=ALL: Slurm's default, changes nothing
        elif name in scheduling:
            reading.scheduling(line.where, key, f"{scheduling[name]} ({kind}={line.first_value})")
        else:
            raise line.where.error(
                key, f"not a {kind} key this reader knows (Slurm's slurm.conf(5) lists them)"
            )
    if line.first_value.upper() == "DEFAULT":
        defaults.update(values)
        return
    records.append((line, {**defaults, **values}))


# -- nodes -------------------------------------------------------------------------------------
def _node_types(reading: _Reading, gres_types: list[str]) -> list[NodeType]:
    types: list[NodeType] = []
    seen: dict[str, Where] = {}
    for line, values in reading.nodes:
        names = node_names(line.where, "NodeName", line.first_value)
        for name in names:
            if name in seen:
                raise line.where.error("NodeName", f"node {name} is already declared at {seen[name]}")
            seen[name] = line.where
        kind = _node_type(line.where, names, values, gres_types)
        same = next((t for t in types if t.same_configuration(kind)), None)
        if same is not None:  # two lines of one configuration make one type
            types[types.index(same)] = replace(same, nodes=same.nodes + kind.nodes)
        else:
            types.append(replace(kind, name=type_name(names[0], [t.name for t in types])))
    if not types:
        raise SlurmConfError("no NodeName lines: the file declares no nodes")
    return types


def _node_type(where: Where, names: list[str], values: dict[str, tuple[Where, str]],
               gres_types: list[str]) -> NodeType:  # fmt: skip
    def count(key: str, default: int | None = None) -> int | None:
        if key not in values:
            return default
        place, text = values[key]
        try:
            number = slurm_count(text)
        except ValueError as exc:
            raise place.error(key_spelling(key), str(exc)) from None
        if number is None or number < (0 if key == "weight" else 1):
            raise place.error(key_spelling(key), f"expected a whole number >= 1, got {text!r}")
        return number

    boards = count("boards", 1) or 1
    sockets = count("sockets")
    if sockets is None and "socketsperboard" in values:
        sockets = boards * (count("socketsperboard") or 1)
    cores, threads = count("corespersocket"), count("threadspercore")
    cpus = count("cpus") or count("procs")
    if cpus is None:  # Slurm's rule: CPUs default to boards x sockets x cores x threads
        cpus = (sockets or boards) * (cores or 1) * (threads or 1)
    features = _features(values)
    return NodeType(
        name="pending",
        nodes=tuple(names),
        cpus=cpus,
        real_memory_mb=count("realmemory", 1) or 1,
        sockets=sockets,
        cores_per_socket=cores,
        threads_per_core=threads,
        features=features,
        gres=_node_gres(values, gres_types),
        weight=count("weight"),
        state=_node_state(values),
    )


def _features(values: dict[str, tuple[Where, str]]) -> tuple[str, ...]:
    key = "features" if "features" in values else "feature"
    if key not in values:
        return ()
    place, text = values[key]
    features = tuple(f for f in text.split(",") if f)
    bad = [f for f in features if not SLURM_WORD.fullmatch(f)]
    if bad:
        raise place.error("Features", f"{bad[0]!r} is not a feature name (letters, digits, '.', '_', '-')")
    return features


def _node_gres(values: dict[str, tuple[Where, str]], gres_types: list[str]) -> tuple[Gres, ...]:
    if "gres" not in values:
        return ()
    place, text = values["gres"]
    out = []
    for item in (g for g in text.split(",") if g and g.lower() != "(null)"):
        try:
            gres = Gres.parse(item)
        except ValueError as exc:
            raise place.error("Gres", str(exc)) from None
        if gres.name not in gres_types:
            raise place.error("Gres", f"{gres.name} is not in GresTypes ({','.join(gres_types) or 'none'})")
        out.append(gres)
    return tuple(out)


def _node_state(values: dict[str, tuple[Where, str]]) -> str:
    if "state" not in values:
        return "UNKNOWN"
    place, text = values["state"]
    state = NODE_STATES_READ.get(text.strip().lower())
    if state is None:
        raise place.error(
            "State",
            f"{text!r}: FUTURE and CLOUD nodes are not emulated; states read: UNKNOWN, IDLE, DOWN, "
            "DRAIN, FAIL, FAILING",
        )
    return state


def type_name(first_node: str, taken: list[str]) -> str:
    """``gpu`` for ``gpu01``; ``gpu-2`` when a type of that name exists already."""
    base = re.sub(r"[^A-Za-z0-9._-]", "", first_node.rstrip("0123456789").rstrip("-_.")) or "nodes"
    base = base if SLURM_WORD.fullmatch(base) else "nodes"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    return name


def _gres_types(reading: _Reading) -> list[str]:
    if "grestypes" not in reading.globals:
        return []
    where, _, text = reading.globals["grestypes"]
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if not SLURM_WORD.fullmatch(n)]
    if bad:
        raise where.error("GresTypes", f"{bad[0]!r} is not a GRES name")
    return names


def _licenses(reading: _Reading) -> list[tuple[str, int]]:
    if "licenses" not in reading.globals:
        return []
    where, _, text = reading.globals["licenses"]
    out = []
    for item in (i.strip() for i in text.split(",") if i.strip()):
        match = re.fullmatch(r"([^:*]+)(?:[:*](\d+))?", item)
        if match is None or not SLURM_WORD.fullmatch(match[1]) or int(match[2] or 1) < 1:
            raise where.error("Licenses", f"{item!r} is not NAME[:COUNT]")
        out.append((match[1], int(match[2] or 1)))
    return out


def _kept(reading: _Reading) -> list[tuple[Where, str, str]]:
    return [entry for key, entry in reading.globals.items() if key in KEPT_SETTINGS]


# -- the platform ------------------------------------------------------------------------------
def site_platform(site: Site, name: str, description: str = "") -> Platform:
    """A platform running ``site``: the bundled platform's burst buffer, bandwidths and
    deployment (one BB node, in its own partition, for the harness's burst-buffer model),
    node containers and own-node configurations as the size needs (``deployed_for_size``)."""
    base = tomllib.loads(bundled_platform_file().read_text())
    nodes = set(site.node_names())
    partitions = {p.name for p in site.partitions}
    bb = dict(base["machine"]["burst_buffer"])
    bb["prefix"] = next(p for p in NAMING_BB_PREFIXES if not any(_named_like(n, p) for n in nodes))
    bb["partition"] = next(p for p in NAMING_BB_PREFIXES if p not in partitions)
    bb["per_chassis"] = 1
    data = {
        "platform": {"name": name, "description": description or _describe(site)},
        "machine": {"site": site_to_dict(site), "burst_buffer": bb, "io": base["machine"]["io"]},
        "deployment": base["deployment"],
    }
    return deployed_for_size(platform_from_dict(data, source="<from-slurm>"))


def _named_like(node: str, prefix: str) -> bool:
    return node.startswith(prefix) and node[len(prefix) :].isdigit()


def _describe(site: Site) -> str:
    kinds = ", ".join(f"{len(t.nodes)} x {t.name}" for t in site.node_types)
    return (
        f"{len(site.node_names())} nodes ({kinds}) in {len(site.partitions)} partition(s), from {site.origin}"
    )


def gres_summary(site: Site) -> str:
    """``gpu: 4 (2 nodes x gpu:a100:2)``, or ``none``."""
    parts = []
    for gres_name in site.gres_names():
        holders = [(t, g) for t in site.node_types for g in t.gres if g.name == gres_name]
        total = sum(len(t.nodes) * g.count for t, g in holders)
        detail = ", ".join(f"{len(t.nodes)} nodes x {g}" for t, g in holders)
        parts.append(f"{gres_name}: {total} ({detail})")
    return "; ".join(parts) or "none"
