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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.model.hostlist import HostlistError, expand_hostlist
from harness.platform.loading import bundled_platform_file, platform_from_dict
from harness.platform.platform import Platform
from harness.platform.site import SLURM_WORD, Gres, NodeType, Partition, Site, site_to_dict
from harness.platform.sized import deployed_for_size
from harness.platform.slurm_conf import (
    ConfLine,
    SlurmConfError,
    Where,
    canonical,
    read_slurm_conf,
    slurm_bool,
    slurm_count,
    slurm_minutes,
)

# The site's scheduler settings, kept as written (Slurm's spelling of each key).
KEPT_SETTINGS = {
    canonical(key): key
    for key in [
        "SchedulerType",
        "SchedulerParameters",
        "SchedulerTimeSlice",
        "SelectType",
        "SelectTypeParameters",
        "PriorityType",
        "PriorityDecayHalfLife",
        "PriorityMaxAge",
        "PriorityFavorSmall",
        "PriorityFlags",
        "PriorityCalcPeriod",
        "PriorityUsageResetPeriod",
        "PriorityWeightAge",
        "PriorityWeightAssoc",
        "PriorityWeightFairshare",
        "PriorityWeightJobSize",
        "PriorityWeightPartition",
        "PriorityWeightQOS",
        "PriorityWeightTRES",
        "FairShareDampeningFactor",
        "PreemptType",
        "PreemptMode",
        "PreemptExemptTime",
        "EnforcePartLimits",
        "DefMemPerCPU",
        "DefMemPerNode",
        "MaxMemPerCPU",
        "MaxMemPerNode",
        "OverTimeLimit",
        "AccountingStorageEnforce",
    ]
}
# Global keys that change scheduling and are not emulated: why, for the error.
SCHEDULING_GLOBAL = {
    "topologyplugin": "places jobs by the network topology (topology.conf), which the emulation lacks",
    "topologyparam": "tunes topology-aware placement, which the emulation lacks",
    "nodeset": "defines node sets, which this reader does not resolve",
    "downnodes": "marks nodes down",
    "frontendname": "declares front-end nodes, which are not emulated",
    "jobsubmitplugins": "changes jobs at submission (the emulation runs its own job_submit.lua)",
    "burstbuffertype": "stages jobs through a burst buffer (the emulation has its own)",
    "suspendprogram": "powers nodes down (power saving is not emulated)",
    "resumeprogram": "powers nodes up (power saving is not emulated)",
    "nodefeaturesplugins": "changes node features at boot, which is not emulated",
}
# Values of those keys that change nothing (the default topology).
HARMLESS_VALUES = {"topologyplugin": ("topology/flat", "topology/default", "topology/none", "")}
NODE_MODELLED = [
    "nodename",
    "cpus",
    "procs",
    "boards",
    "socketsperboard",
    "sockets",
    "corespersocket",
    "threadspercore",
    "realmemory",
    "gres",
    "features",
    "feature",
    "weight",
    "state",
]
NODE_IGNORED = [
    "nodehostname",
    "nodeaddr",
    "port",
    "tmpdisk",
    "reason",
    "comment",
    "bcastaddr",
    "cpubind",
    "activefeatures",
    "extra",
]
NODE_SCHEDULING = {
    "corespeccount": "reserves cores for the system",
    "cpuspeclist": "reserves CPUs for the system",
    "memspeclimit": "reserves memory for the system",
    "restrictedcorespergpu": "restricts cores to GPU jobs",
}
PARTITION_MODELLED = [
    "partitionname",
    "nodes",
    "default",
    "maxtime",
    "defaulttime",
    "maxnodes",
    "state",
    "prioritytier",
    "oversubscribe",
    "shared",
]
PARTITION_IGNORED = [
    "hidden",
    "allocnodes",
    "disablerootjobs",
    "powerdownonidle",
    "tresbillingweights",
    "suspendtime",
    "suspendtimeout",
    "resumetimeout",
    "cpubind",
]
PARTITION_SCHEDULING = {
    key: "limits who may run there or how jobs share it, which the emulation does not reproduce"
    for key in [
        "allowaccounts",
        "allowgroups",
        "allowqos",
        "denyaccounts",
        "denyqos",
        "qos",
        "preemptmode",
        "priorityjobfactor",
        "maxcpuspernode",
        "maxcpuspersocket",
        "maxmempernode",
        "maxmempercpu",
        "defmempercpu",
        "defmempernode",
        "defcpupergpu",
        "defmempergpu",
        "exclusiveuser",
        "exclusivetopo",
        "lln",
        "gracetime",
        "alternate",
        "reqresv",
        "rootonly",
        "selecttypeparameters",
        "overtimelimit",
        "minnodes",
        "jobdefaults",
    ]
}
# A partition's access list of ALL (or none) is Slurm's default: it changes nothing.
HARMLESS_PARTITION_VALUES = ("all", "")
NODE_STATES_READ = {"unknown": "UNKNOWN", "idle": "UNKNOWN", "down": "DOWN", "drain": "DRAIN",
                    "fail": "FAIL", "failing": "FAILING"}  # fmt: skip
PARTITION_STATES_READ = ("UP", "DOWN", "DRAIN", "INACTIVE")
NAMING_BB_PREFIXES = ("bb", "hbb", "harness-bb")  # the BB node prefix: the first the site does not use


@dataclass(frozen=True)
class FromSlurm:
    """What was read: the site, and what of the file it does not hold (listed, never silent)."""

    site: Site
    ignored: tuple[str, ...] = ()  # keys not modelled, each once: ``SlurmctldHost``, ``NodeName:NodeAddr``
    dropped: tuple[str, ...] = ()  # scheduling keys left out on request (--drop)
    notes: tuple[str, ...] = ()  # choices made where the file left one open
    cluster_name: str | None = None  # the file's ClusterName: the platform's name by default


@dataclass
class _Reading:
    """The state of one pass over a file's lines."""

    drop: set[str]
    node_defaults: dict[str, tuple[Where, str]] = field(default_factory=dict)
    partition_defaults: dict[str, tuple[Where, str]] = field(default_factory=dict)
    nodes: list[tuple[ConfLine, dict[str, tuple[Where, str]]]] = field(default_factory=list)
    partitions: list[tuple[ConfLine, dict[str, tuple[Where, str]]]] = field(default_factory=list)
    globals: dict[str, tuple[Where, str, str]] = field(default_factory=dict)  # key -> where, spelling, value
    ignored: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    refused: list[tuple[Where, str, str]] = field(default_factory=list)  # where, key, why

    def ignore(self, name: str) -> None:
        if name not in self.ignored:
            self.ignored.append(name)

    def scheduling(self, where: Where, key: str, why: str) -> None:
        """A key that changes scheduling: dropped when asked, else refused (all named at the end)."""
        if canonical(key) in self.drop:
            if key not in self.dropped:
                self.dropped.append(key)
        else:
            self.refused.append((where, key, why))


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
    partitions, notes = _partitions(reading, node_types)
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
        names = _names(line.where, "NodeName", line.first_value)
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
            raise place.error(_spelling(key), str(exc)) from None
        if number is None or number < (0 if key == "weight" else 1):
            raise place.error(_spelling(key), f"expected a whole number >= 1, got {text!r}")
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


def _names(where: Where, key: str, text: str) -> list[str]:
    try:
        names = expand_hostlist(text)
    except HostlistError as exc:
        raise where.error(key, f"bad range: {exc}") from None
    if not names:
        raise where.error(key, "no node names")
    bad = [n for n in names if not SLURM_WORD.fullmatch(n)]
    if bad:
        raise where.error(key, f"{bad[0]!r} is not a node name (letters, digits, '.', '_', '-')")
    return names


# -- partitions --------------------------------------------------------------------------------
def _partitions(reading: _Reading, types: list[NodeType]) -> tuple[list[Partition], list[str]]:
    every = [node for kind in types for node in kind.nodes]
    known = set(every)
    parts: list[Partition] = []
    notes: list[str] = []
    for line, values in reading.partitions:
        name = line.first_value
        if not SLURM_WORD.fullmatch(name):
            raise line.where.error("PartitionName", f"{name!r} is not a partition name")
        if any(p.name == name for p in parts):
            raise line.where.error("PartitionName", f"partition {name} is declared twice")
        parts.append(_partition(line.where, name, values, every, known))
    if not parts:
        raise SlurmConfError("no PartitionName lines: jobs need a partition to run in")
    defaults = [p for p in parts if p.default]
    if not defaults:
        notes.append(f"no partition is Default=YES: {parts[0].name}, the first, is the emulation's default")
        chosen = parts[0].name
    else:
        chosen = defaults[-1].name
        if len(defaults) > 1:
            notes.append(
                f"several partitions are Default=YES: {chosen}, the last, is the default (as in Slurm)"
            )
    return [replace(p, default=p.name == chosen) for p in parts], notes


def _partition(where: Where, name: str, values: dict[str, tuple[Where, str]], every: list[str],
               known: set[str]) -> Partition:  # fmt: skip
    def value(key: str, parse: Any, default: Any = None) -> Any:
        if key not in values:
            return default
        place, text = values[key]
        try:
            return parse(text)
        except ValueError as exc:
            raise place.error(_spelling(key), str(exc)) from None

    nodes = _partition_nodes(where, values, every, known)
    oversubscribe = value("oversubscribe", _oversubscribe) or value("shared", _oversubscribe)
    return Partition(
        name=name,
        nodes=nodes,
        default=value("default", slurm_bool, False),
        max_time_min=value("maxtime", slurm_minutes),
        default_time_min=value("defaulttime", slurm_minutes),
        max_nodes=value("maxnodes", _positive_or_unlimited),
        state=value("state", _partition_state, "UP"),
        priority_tier=value("prioritytier", _tier),
        oversubscribe=oversubscribe,
    )


def _partition_nodes(where: Where, values: dict[str, tuple[Where, str]], every: list[str],
                     known: set[str]) -> tuple[str, ...]:  # fmt: skip
    if "nodes" not in values:
        raise where.error("Nodes", "missing: a partition without nodes runs no job")
    place, text = values["nodes"]
    if text.strip().upper() == "ALL":
        return tuple(every)
    names = _names(place, "Nodes", text)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise place.error("Nodes", f"unknown node {unknown[0]} (no NodeName line declares it)")
    return tuple(dict.fromkeys(names))


def _oversubscribe(text: str) -> str:
    value = text.strip().upper()
    if not re.fullmatch(r"EXCLUSIVE|NO|YES(:\d+)?|FORCE(:\d+)?", value):
        raise ValueError(f"{text!r}: expected EXCLUSIVE, NO, YES[:n] or FORCE[:n]")
    return value


def _positive_or_unlimited(text: str) -> int | None:
    number = slurm_count(text)
    if number is not None and number < 1:
        raise ValueError(f"{text!r}: expected a whole number >= 1 or UNLIMITED")
    return number


def _partition_state(text: str) -> str:
    value = text.strip().upper()
    if value not in PARTITION_STATES_READ:
        raise ValueError(f"{text!r}: expected one of {', '.join(PARTITION_STATES_READ)}")
    return value


def _tier(text: str) -> int:
    number = slurm_count(text)
    if number is None or number > 65533:
        raise ValueError(f"{text!r}: expected a whole number in 0..65533")
    return number


# -- the globals -------------------------------------------------------------------------------
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


def _spelling(key: str) -> str:
    """Slurm's spelling of a lower-cased key, for messages."""
    spellings = {"cpus": "CPUs", "realmemory": "RealMemory", "corespersocket": "CoresPerSocket",
                 "threadspercore": "ThreadsPerCore", "maxtime": "MaxTime", "defaulttime": "DefaultTime",
                 "maxnodes": "MaxNodes", "prioritytier": "PriorityTier", "oversubscribe": "OverSubscribe",
                 "socketsperboard": "SocketsPerBoard"}  # fmt: skip
    return spellings.get(key, key.capitalize())


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
