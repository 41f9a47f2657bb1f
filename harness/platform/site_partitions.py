"""A site's partitions from its slurm.conf ``PartitionName`` lines (:mod:`harness.platform.from_slurm`)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from harness.platform.site import SLURM_WORD, NodeType, Partition
from harness.platform.slurm_conf import SlurmConfError, Where, slurm_bool, slurm_count, slurm_minutes
from harness.platform.slurm_conf_keys import (
    PARTITION_STATES_READ,
    Reading,
    key_spelling,
    node_names,
)


def partitions_of(reading: Reading, types: list[NodeType]) -> tuple[list[Partition], list[str]]:
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
            raise place.error(key_spelling(key), str(exc)) from None

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
    names = node_names(place, "Nodes", text)
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
