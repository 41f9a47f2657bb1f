"""A site's machine in the platform file (``[machine.site]``, :class:`~harness.platform.site.Site`):
to and from its TOML table, every key checked."""

from __future__ import annotations

from typing import Any

from harness.model import checks
from harness.model.checks import MAX_INT32, InputError
from harness.model.hostlist import HostlistError, expand_hostlist
from harness.platform.errors import PlatformError
from harness.platform.site import MAX_TIER, Gres, NodeType, Partition, Site, check_int, check_word

NODE_TYPE_KEYS = [
    "name", "nodes", "cpus", "real_memory_mb", "sockets", "cores_per_socket", "threads_per_core", "features",
    "gres", "weight", "state",
]  # fmt: skip
PARTITION_KEYS = [
    "name", "nodes", "default", "max_time_min", "default_time_min", "max_nodes", "state", "priority_tier",
    "oversubscribe",
]  # fmt: skip
SITE_KEYS = ["origin", "gres_types", "licenses", "settings", "node_types", "partitions"]


def site_to_dict(site: Site) -> dict[str, Any]:
    """The ``[machine.site]`` table (absent optional values left out)."""
    types = [
        _without_none(
            {
                "name": t.name,
                "nodes": t.hostlist,
                "cpus": t.cpus,
                "real_memory_mb": t.real_memory_mb,
                "sockets": t.sockets,
                "cores_per_socket": t.cores_per_socket,
                "threads_per_core": t.threads_per_core,
                "features": list(t.features),
                "gres": [str(g) for g in t.gres],
                "weight": t.weight,
                "state": t.state,
            }
        )
        for t in site.node_types
    ]
    partitions = [
        _without_none(
            {
                "name": p.name,
                "nodes": p.hostlist,
                "default": p.default,
                "max_time_min": p.max_time_min,
                "default_time_min": p.default_time_min,
                "max_nodes": p.max_nodes,
                "state": p.state,
                "priority_tier": p.priority_tier,
                "oversubscribe": p.oversubscribe,
            }
        )
        for p in site.partitions
    ]
    return {
        "origin": site.origin,
        "gres_types": list(site.gres_types),
        "licenses": dict(site.licenses),
        "settings": dict(site.settings),
        "node_types": types,
        "partitions": partitions,
    }


def _without_none(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


def site_from_dict(table: Any) -> Site:
    """A :class:`Site` from ``[machine.site]``; errors name the table, entry and key."""
    where = "machine.site"
    if not isinstance(table, dict):
        raise PlatformError(f"[{where}] must be a table")
    _known(table, SITE_KEYS, where)
    types = [
        _node_type(entry, f"{where}.node_types[{i}]") for i, entry in enumerate(_list(table, "node_types"))
    ]
    parts = [
        _partition(entry, f"{where}.partitions[{i}]") for i, entry in enumerate(_list(table, "partitions"))
    ]
    licenses = _mapping(table.get("licenses", {}), f"{where}.licenses")
    settings = _mapping(table.get("settings", {}), f"{where}.settings")
    for key, value in settings.items():
        if not isinstance(value, str):
            raise PlatformError(f"{where}.settings.{key}: expected a string, got {checks.show(value)}")
    return Site(
        node_types=tuple(types),
        partitions=tuple(parts),
        gres_types=tuple(_words(table.get("gres_types", []), f"{where}.gres_types")),
        licenses=tuple((k, check_int(v, f"{where}.licenses.{k}", 1)) for k, v in licenses.items()),
        settings=tuple(settings.items()),
        origin=_string(table.get("origin", ""), f"{where}.origin"),
    )


def _node_type(entry: Any, where: str) -> NodeType:
    table = _entry(entry, NODE_TYPE_KEYS, where)
    gres = []
    for text in _words(table.get("gres", []), f"{where}.gres", check=False):
        try:
            gres.append(Gres.parse(text))
        except ValueError as exc:
            raise PlatformError(f"{where}.gres: {exc}") from None
    return NodeType(
        name=_word(table, "name", where),
        nodes=_hostlist(table, where),
        cpus=check_int(_required(table, "cpus", where), f"{where}.cpus", 1),
        real_memory_mb=check_int(_required(table, "real_memory_mb", where), f"{where}.real_memory_mb", 1),
        sockets=_optional(table, "sockets", where, 1),
        cores_per_socket=_optional(table, "cores_per_socket", where, 1),
        threads_per_core=_optional(table, "threads_per_core", where, 1),
        features=tuple(_words(table.get("features", []), f"{where}.features")),
        gres=tuple(gres),
        weight=_optional(table, "weight", where, 0),
        state=_string(table.get("state", "UNKNOWN"), f"{where}.state"),
    )


def _partition(entry: Any, where: str) -> Partition:
    table = _entry(entry, PARTITION_KEYS, where)
    default = table.get("default", False)
    if not isinstance(default, bool):
        raise PlatformError(f"{where}.default: expected true or false, got {checks.show(default)}")
    return Partition(
        name=_word(table, "name", where),
        nodes=_hostlist(table, where),
        default=default,
        max_time_min=_optional(table, "max_time_min", where, 0),
        default_time_min=_optional(table, "default_time_min", where, 0),
        max_nodes=_optional(table, "max_nodes", where, 1),
        state=_string(table.get("state", "UP"), f"{where}.state"),
        priority_tier=_optional(table, "priority_tier", where, 0, MAX_TIER),
        oversubscribe=_string(table["oversubscribe"], f"{where}.oversubscribe")
        if "oversubscribe" in table
        else None,
    )


def _known(table: dict[str, Any], keys: list[str], where: str) -> None:
    try:
        checks.known_keys(table, keys, where)
    except InputError as exc:
        raise PlatformError(str(exc)) from None


def _entry(entry: Any, keys: list[str], where: str) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise PlatformError(f"{where}: expected a table, got {checks.show(entry)}")
    _known(entry, keys, where)
    return entry


def _list(table: dict[str, Any], key: str) -> list[Any]:
    value = table.get(key, [])
    if not isinstance(value, list):
        raise PlatformError(f"machine.site.{key}: expected an array of tables ([[machine.site.{key}]])")
    return value


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PlatformError(f"{where}: expected a table, got {checks.show(value)}")
    return value


def _required(table: dict[str, Any], key: str, where: str) -> Any:
    if key not in table:
        raise PlatformError(f"{where}: missing '{key}'")
    return table[key]


def _optional(
    table: dict[str, Any], key: str, where: str, minimum: int, maximum: int = MAX_INT32
) -> int | None:
    return check_int(table[key], f"{where}.{key}", minimum, maximum) if key in table else None


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise PlatformError(f"{where}: expected a string, got {checks.show(value)}")
    return checks.one_line(value, where) if value else value


def _word(table: dict[str, Any], key: str, where: str) -> str:
    return check_word(_required(table, key, where), f"{where}.{key}")


def _words(value: Any, where: str, check: bool = True) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PlatformError(f"{where}: expected an array of strings, got {checks.show(value)}")
    return [check_word(v, where) if check else v for v in value]


def _hostlist(table: dict[str, Any], where: str) -> tuple[str, ...]:
    text = _string(_required(table, "nodes", where), f"{where}.nodes")
    try:
        return tuple(expand_hostlist(text))
    except HostlistError as exc:
        raise PlatformError(f"{where}.nodes: {exc}") from None
