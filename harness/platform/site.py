"""A Slurm site's own machine: node types, partitions, GRES, licenses and its scheduler settings.

What the study's platform (groups of chassis of identical nodes) cannot say: several node
types (CPUs, sockets, memory differ), node features, GRES (GPUs with counts and types),
several partitions with their nodes, limits and default, and the site's scheduler settings.
A :class:`Site` says it; a :class:`~harness.platform.machine.Machine` holding one has the
site's nodes as its compute nodes (``[machine.site]`` of a platform file, written by
``harness platform from-slurm``; docs/site-whatif.md).

The scheduler settings (``SchedulerParameters``, ``PriorityWeight*`` ...) are kept as the
site wrote them, for experiments that vary them; the emulated cluster runs the harness's own
scheduler settings, so a kept setting is recorded, not applied.

Pure data: knows nothing of Slurm's daemons or Docker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from harness.model import checks
from harness.model.checks import MAX_INT32, InputError
from harness.model.hostlist import compress_hostlist
from harness.platform.errors import PlatformError

# A word of slurm.conf: a node, partition, feature, GRES, type or license name.
SLURM_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
SLURM_WORD_RULE = "a letter or digit, then letters, digits, '.', '_' or '-' (at most 64)"
NODE_STATES = ("UNKNOWN", "IDLE", "DOWN", "DRAIN", "FAIL", "FAILING")
PARTITION_STATES = ("UP", "DOWN", "DRAIN", "INACTIVE")
OVERSUBSCRIBE = re.compile(r"(?i)(EXCLUSIVE|NO|YES(?::\d+)?|FORCE(?::\d+)?)")
MAX_TIER = 65533  # Slurm's PriorityTier is 16 bits, 65534 and 65535 are reserved
MAX_SETTING = 4096  # characters of one kept setting's value (SchedulerParameters can be long)
_GRES_COUNT = re.compile(r"(\d+)([KMGTP]?)", re.IGNORECASE)
_SUFFIX = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50}


@dataclass(frozen=True)
class Gres:
    """One generic resource of a node: ``gpu:a100:2`` is name ``gpu``, type ``a100``, count 2."""

    name: str
    count: int
    type: str | None = None
    no_consume: bool = False

    def __str__(self) -> str:
        parts = [self.name, *([self.type] if self.type else []), *(["no_consume"] if self.no_consume else [])]
        return ":".join([*parts, str(self.count)])

    @classmethod
    def parse(cls, text: str) -> Gres:
        """``name[:type][:no_consume][:count[KMGTP]]`` (count 1 when absent); a socket
        affinity suffix as scontrol shows it (``gpu:2(S:0-1)``) is dropped. ValueError if bad."""
        body = re.sub(r"\(.*\)$", "", text.strip())
        parts = body.split(":")
        name, rest = parts[0], parts[1:]
        count = 1
        if rest and _GRES_COUNT.fullmatch(rest[-1]):
            number, suffix = _GRES_COUNT.fullmatch(rest[-1]).groups()  # type: ignore[union-attr]
            count, rest = int(number) * _SUFFIX[suffix.upper()], rest[:-1]
        no_consume = "no_consume" in [r.lower() for r in rest]
        rest = [r for r in rest if r.lower() != "no_consume"]
        if not name or len(rest) > 1 or not all(SLURM_WORD.fullmatch(w) for w in [name, *rest]):
            raise ValueError(f"{text!r} is not a GRES (name[:type][:count], e.g. gpu:a100:2)")
        return cls(name=name, count=count, type=rest[0] if rest else None, no_consume=no_consume)


@dataclass(frozen=True)
class NodeType:
    """Nodes of one configuration: what one ``NodeName=`` line (after its DEFAULTs) declares."""

    name: str
    nodes: tuple[str, ...]
    cpus: int
    real_memory_mb: int
    sockets: int | None = None
    cores_per_socket: int | None = None
    threads_per_core: int | None = None
    features: tuple[str, ...] = ()
    gres: tuple[Gres, ...] = ()
    weight: int | None = None
    state: str = "UNKNOWN"

    @property
    def hostlist(self) -> str:
        return compress_hostlist(list(self.nodes))

    def gpus(self) -> int:
        return sum(g.count for g in self.gres if g.name == "gpu")

    def same_configuration(self, other: NodeType) -> bool:
        """Everything but the name and the nodes is equal (the two lines make one type)."""
        keys = ("cpus", "real_memory_mb", "sockets", "cores_per_socket", "threads_per_core", "features",
                "gres", "weight", "state")  # fmt: skip
        return all(getattr(self, k) == getattr(other, k) for k in keys)


@dataclass(frozen=True)
class Partition:
    """A partition as the site declares it; ``None`` limits are Slurm's ``UNLIMITED``."""

    name: str
    nodes: tuple[str, ...]
    default: bool = False
    max_time_min: int | None = None
    default_time_min: int | None = None
    max_nodes: int | None = None
    state: str = "UP"
    priority_tier: int | None = None
    oversubscribe: str | None = None  # EXCLUSIVE, NO, YES[:n], FORCE[:n]; None: Slurm's NO

    @property
    def hostlist(self) -> str:
        return compress_hostlist(list(self.nodes))


@dataclass(frozen=True)
class Site:
    """The site's machine and settings; checked whole (a partition names known nodes, ...)."""

    node_types: tuple[NodeType, ...]
    partitions: tuple[Partition, ...]
    gres_types: tuple[str, ...] = ()
    licenses: tuple[tuple[str, int], ...] = ()
    # the site's scheduler settings, kept as written (key as Slurm spells it, value)
    settings: tuple[tuple[str, str], ...] = ()
    origin: str = ""  # the file(s) it was read from, for the summary and the rendered comment

    def __post_init__(self) -> None:
        if not self.node_types:
            raise PlatformError("machine.site: no node types (a site needs nodes)")
        if not self.partitions:
            raise PlatformError("machine.site: no partitions (a site needs one to run jobs)")
        names = self.node_names()
        seen: set[str] = set()
        for name in names:
            if name in seen:
                raise PlatformError(f"machine.site: node {name} is declared twice")
            seen.add(name)
        for kind in self.node_types:
            _check_node_type(kind, self.gres_types)
        defaults = [p.name for p in self.partitions if p.default]
        if len(defaults) != 1:
            raise PlatformError(
                f"machine.site.partitions: exactly one must be the default, got {defaults or 'none'}"
            )
        known: set[str] = set()
        for part in self.partitions:
            _check_partition(part, seen)
            if part.name in known:
                raise PlatformError(f"machine.site: partition {part.name} is declared twice")
            known.add(part.name)
        for name, count in self.licenses:
            check_word(name, "machine.site.licenses")
            check_int(count, f"machine.site.licenses.{name}", 1)
        for key, value in self.settings:
            checks.one_line(value, f"machine.site.settings.{key}", MAX_SETTING)

    def node_names(self) -> list[str]:
        """Every node, type by type in the site's order: the order that fixes each node's port."""
        return list(self._names)

    @cached_property
    def _names(self) -> tuple[str, ...]:
        return tuple(node for kind in self.node_types for node in kind.nodes)

    @property
    def default_partition(self) -> Partition:
        return next(p for p in self.partitions if p.default)

    def node_type_of(self, node: str) -> NodeType:
        return next(kind for kind in self.node_types if node in kind.nodes)

    def gres_names(self) -> list[str]:
        """GRES names the nodes hold, in first-seen order."""
        names: list[str] = []
        for kind in self.node_types:
            names += [g.name for g in kind.gres if g.name not in names]
        return names


def _check_node_type(kind: NodeType, gres_types: tuple[str, ...]) -> None:
    where = f"machine.site.node_types.{kind.name}"
    check_word(kind.name, f"{where}.name")
    for node in kind.nodes:
        check_word(node, f"{where}.nodes")
    check_int(kind.cpus, f"{where}.cpus", 1)
    check_int(kind.real_memory_mb, f"{where}.real_memory_mb", 1)
    for key in ("sockets", "cores_per_socket", "threads_per_core"):
        if getattr(kind, key) is not None:
            check_int(getattr(kind, key), f"{where}.{key}", 1)
    if kind.weight is not None:
        check_int(kind.weight, f"{where}.weight", 0)
    for feature in kind.features:
        check_word(feature, f"{where}.features")
    for gres in kind.gres:
        if gres.name not in gres_types:
            raise PlatformError(f"{where}.gres: {gres.name} is not in gres_types {list(gres_types)}")
        check_int(gres.count, f"{where}.gres", 1, 2**63 - 1)
    if kind.state not in NODE_STATES:
        raise PlatformError(f"{where}.state: expected one of {', '.join(NODE_STATES)}, got {kind.state!r}")


def _check_partition(part: Partition, nodes: set[str]) -> None:
    where = f"machine.site.partitions.{part.name}"
    check_word(part.name, f"{where}.name")
    if not part.nodes:
        raise PlatformError(f"{where}.nodes: no nodes")
    unknown = [n for n in part.nodes if n not in nodes]
    if unknown:
        raise PlatformError(f"{where}.nodes: unknown node(s) {compress_hostlist(unknown)}")
    for key in ("max_time_min", "default_time_min", "max_nodes"):
        if getattr(part, key) is not None:
            check_int(getattr(part, key), f"{where}.{key}", 0 if key != "max_nodes" else 1)
    if part.priority_tier is not None:
        check_int(part.priority_tier, f"{where}.priority_tier", 0, MAX_TIER)
    if part.state not in PARTITION_STATES:
        raise PlatformError(
            f"{where}.state: expected one of {', '.join(PARTITION_STATES)}, got {part.state!r}"
        )
    if part.oversubscribe is not None and not OVERSUBSCRIBE.fullmatch(part.oversubscribe):
        raise PlatformError(f"{where}.oversubscribe: expected EXCLUSIVE, NO, YES[:n] or FORCE[:n], "
                            f"got {part.oversubscribe!r}")  # fmt: skip


def check_word(value: Any, where: str) -> str:
    if not isinstance(value, str) or not SLURM_WORD.fullmatch(value):
        raise PlatformError(f"{where}: expected {SLURM_WORD_RULE}, got {checks.show(value)}")
    return value


def check_int(value: Any, where: str, minimum: int, maximum: int = MAX_INT32) -> int:
    try:
        return checks.integer(value, where, minimum, maximum)
    except InputError as exc:
        raise PlatformError(str(exc)) from None
