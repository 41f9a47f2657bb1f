"""Platform files (TOML): the machine and its deployment, from which every Slurm file, the
compose file and the Ansible variables are rendered.

The format (``harness/platform/default.toml`` is the study's machine)::

    [platform]              name, description
    [machine.topology]      groups, chassis_per_group, compute_per_chassis, compute_total
                            (optional: fewer nodes than the chassis hold, the last one partial)
    [machine.compute]       prefix, digits, cpus, real_memory_mb, partition
    [machine.burst_buffer]  the same, capacity_mb, per_chassis (BB nodes in a chassis, default 1)
    [machine.io]            bandwidths and storage tiers (optional; see platform/bandwidths.py)
    [machine.site]          a Slurm site's own machine instead of [machine.topology] and
                            [machine.compute]: node types, partitions, GRES, licenses and
                            its scheduler settings (platform/site.py; `platform from-slurm`)
    [deployment]            controller_host, controller_port, slurmd_base_port,
                            node_containers, bb_license, slurmd_timeout (s, default
                            300), message_timeout (s, default 30), slurmd_conf
                            ("shared" or "own-node": each slurmd reads only its node)
    [deployment.accounting] enabled (default true), dbd_port (free one locally, else 6819), account:
                            slurmdbd + MariaDB and sacct (docs/accounting.md)

Files of the first format (tables ``[topology] [compute] [burst_buffer] [network]
[deploy]``, the license in ``[burst_buffer]``) still load: they are migrated on reading.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path
from typing import Any

from harness.model import checks
from harness.model.checks import InputError
from harness.platform.bandwidths import BandwidthError, bandwidths_from_dict
from harness.platform.deployment import MAX_PORT, Accounting, Deployment
from harness.platform.machine import Machine, NodeKind, PlatformError
from harness.platform.platform import Platform
from harness.platform.site_toml import site_from_dict

DEFAULT_PLATFORM = "default"
# The compute kind of a site's machine names no node (the site's nodes have their own names):
# a prefix only for the rule that the compute and BB prefixes differ.
SITE_PREFIX = "site"
# Names written into slurm.conf / gres / licenses: no spaces, '=', ',', '#', quotes or newlines.
SLURM_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")
HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}")
_SLURM_NAMES = {
    "prefix": SLURM_NAME,
    "partition": SLURM_NAME,
    "bb_license": SLURM_NAME,
    "controller_host": HOST_NAME,
}
MAX_LICENSES = 2**32 - 2  # a Slurm license count is a 32-bit field
MAX_SIZE = 2**31 - 1  # Slurm keeps counts, CPUs and memory (MB) in 32-bit fields
_MAX_INT = {"controller_port": MAX_PORT, "slurmd_base_port": MAX_PORT, "dbd_port": MAX_PORT, "digits": 9}
# The platforms shipped with the package, by the name that stands for them wherever a platform
# file is taken: Kopański's machine (the default) and Herbein's CTS-1 (4,320 nodes).
NAMED_PLATFORMS = {DEFAULT_PLATFORM: "default.toml", "cts1": "cts1.toml"}
BUILT_IN_SOURCE = "<built-in default>"


def built_in_source(name: str) -> str:
    return BUILT_IN_SOURCE if name == DEFAULT_PLATFORM else f"<built-in {name}>"


def built_in_name(source: str) -> str | None:
    """The name of the shipped platform a platform's ``source`` says it is (None: a file's)."""
    return next((name for name in NAMED_PLATFORMS if built_in_source(name) == source), None)


def bundled_platform_file(name: str = DEFAULT_PLATFORM) -> Traversable:
    """A platform file shipped with the package (the study's by default)."""
    return resources.files("harness.platform").joinpath(NAMED_PLATFORMS[name])


def load_platform(path: str | Path | None = None) -> Platform:
    """Load a platform TOML file; ``None`` or ``"default"`` gives the built-in 96 + 12 machine,
    another name of :data:`NAMED_PLATFORMS` (not a file here) that shipped platform."""
    name = DEFAULT_PLATFORM if path is None else str(path)
    if name in NAMED_PLATFORMS and (name == DEFAULT_PLATFORM or not Path(name).exists()):
        text = bundled_platform_file(name).read_text()
        return platform_from_dict(tomllib.loads(text), source=built_in_source(name))
    p = Path(name)
    if not p.exists():
        raise PlatformError(f"{p}: no such platform file")
    if p.is_dir():
        raise PlatformError(f"{p}: is a directory, not a platform file")
    try:
        data = tomllib.loads(checks.read_config(p).decode("utf-8"))
    except checks.InputError as exc:  # a FIFO, a device, unreadable, too large
        raise PlatformError(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise PlatformError(f"{p}: not UTF-8 text (TOML must be UTF-8): byte {exc.start}") from None
    except tomllib.TOMLDecodeError as exc:
        raise PlatformError(f"{p}: not valid TOML: {exc}") from None
    return platform_from_dict(data, source=str(p))


def platform_text(platform: Platform) -> str:
    """The TOML text ``platform`` was loaded from (for processes that must read the same machine).

    A platform built in code has no text: an error. The deployment may have been changed
    since loading (``redeployed``); the machine may not.
    """
    name = built_in_name(platform.source)
    if name is not None:
        text = bundled_platform_file(name).read_text()
    else:
        try:
            text = Path(platform.source).read_text()
        except OSError:
            where = f"platform '{platform.name}' ({platform.source})"
            raise PlatformError(f"{where} was not loaded from a file") from None
    if platform_from_dict(tomllib.loads(text), platform.source).machine != platform.machine:
        raise PlatformError(f"{platform.source}: the file changed since the platform was loaded")
    return text


def platform_from_dict(data: dict[str, Any], source: str = "<dict>") -> Platform:
    """A platform from parsed TOML of either format; errors name the table and key."""
    if "machine" not in data and "topology" in data:
        data = migrate_first_format(data, source)
    machine_data, deployment = _table(data, "machine", source), _table(data, "deployment", source)
    meta = _table(data, "platform", source)
    site = "site" in machine_data
    topo = {} if site else _table(machine_data, "topology", source, "machine.")
    bb = _table(machine_data, "burst_buffer", source, "machine.")
    try:
        _known_keys(data, machine_data)
        name = _checked(_label, _require(meta, "name", str, "platform"), "platform.name")
        description = _checked(checks.one_line, meta.get("description", ""), "platform.description")
        layout = _site_layout(machine_data) if site else _study_layout(machine_data, topo, source)
        machine = Machine(
            name=name,
            description=description,
            bb=_node_kind(bb, "machine.burst_buffer"),
            bb_capacity_mb=_require(bb, "capacity_mb", int, "machine.burst_buffer"),
            bb_per_chassis=_require({"per_chassis": 1, **bb}, "per_chassis", int, "machine.burst_buffer"),
            io=bandwidths_from_dict(machine_data.get("io", {}), source),
            **layout,
        )
        total = machine.bb_count * machine.bb_capacity_mb
        if total > MAX_LICENSES:
            raise PlatformError(
                f"machine.burst_buffer.capacity_mb: {machine.bb_count} BB nodes x {machine.bb_capacity_mb} MB"
                f" = {total} exceeds Slurm's license count limit {MAX_LICENSES}"
            )
        return Platform.of(machine, _deployment(deployment), source=source)
    except PlatformError as exc:
        raise PlatformError(f"{source}: {exc}") from None
    except BandwidthError as exc:  # names the source already
        raise PlatformError(str(exc)) from None


def _study_layout(machine: dict[str, Any], topo: dict[str, Any], source: str) -> dict[str, Any]:
    """The study's compute nodes: groups x chassis x nodes of one kind (``[machine.topology]``)."""
    return {
        "groups": _require(topo, "groups", int, "machine.topology"),
        "chassis_per_group": _require(topo, "chassis_per_group", int, "machine.topology"),
        "compute_per_chassis": _require(topo, "compute_per_chassis", int, "machine.topology"),
        "compute": _node_kind(_table(machine, "compute", source, "machine."), "machine.compute"),
        "compute_total": _optional_int(topo, "compute_total", "machine.topology"),
    }


def _site_layout(machine: dict[str, Any]) -> dict[str, Any]:
    """A site's nodes (``[machine.site]``) in one chassis; ``compute`` stands for the smallest
    CPU count and memory of its node types (the simulator's homogeneous view)."""
    for name in ("topology", "compute"):
        if name in machine:
            raise PlatformError(
                f"[machine.{name}] cannot be given with [machine.site]: the site's nodes replace it"
            )
    site = site_from_dict(machine["site"])
    count = len(site.node_names())
    compute = NodeKind(
        prefix=SITE_PREFIX,
        digits=len(str(count)),
        cpus=min(kind.cpus for kind in site.node_types),
        real_memory_mb=min(kind.real_memory_mb for kind in site.node_types),
        partition=site.default_partition.name,
    )
    return {
        "groups": 1,
        "chassis_per_group": 1,
        "compute_per_chassis": count,
        "compute": compute,
        "site": site,
    }


# The keys of every table of the current format (the first format is migrated before the check).
_NODE_KIND = "prefix digits cpus real_memory_mb partition"
_KEYS: dict[str, str] = {
    "": "platform machine deployment",
    "platform": "name description",
    "machine": "topology compute burst_buffer io site",
    "machine.topology": "groups chassis_per_group compute_per_chassis compute_total",
    "machine.compute": _NODE_KIND,
    "machine.burst_buffer": f"{_NODE_KIND} capacity_mb per_chassis",
    "deployment": "controller_host controller_port slurmd_base_port node_containers bb_license "
    "slurmd_timeout message_timeout accounting slurmd_conf",
}


def _known_keys(data: dict[str, Any], machine: dict[str, Any]) -> None:
    """Refuse a key no table knows (``per_chasis``), with the closest known one."""
    tables = {"": data, "platform": data["platform"], "machine": machine, "deployment": data["deployment"]}
    tables |= {
        f"machine.{name}": machine[name]
        for name in ("topology", "compute", "burst_buffer")
        if name in machine
    }
    for where, table in tables.items():
        try:
            checks.known_keys(table, _KEYS[where].split(), where or "top level")
        except InputError as exc:
            raise PlatformError(str(exc)) from None


def _label(value: Any, where: str) -> str:
    """A platform's name: a safe name, '+' allowed (``small-8+1``)."""
    return checks.safe_name(value, where, checks.LABEL, checks.LABEL_RULE)


def _checked(check: Callable[[Any, str], Any], value: Any, where: str) -> Any:
    """``check(value, where)`` with its :class:`InputError` as a :class:`PlatformError`."""
    try:
        return check(value, where)
    except InputError as exc:
        raise PlatformError(str(exc)) from None


def migrate_first_format(data: dict[str, Any], source: str) -> dict[str, Any]:
    """A platform of the first format in the current one (same values, new tables)."""
    for name in ("platform", "topology", "compute", "burst_buffer", "network", "deploy"):
        _table(data, name, source)
    bb = dict(data["burst_buffer"])
    license_name = bb.pop("license", None)
    deployment = {**data["network"], **data["deploy"]}
    if license_name is not None:
        deployment["bb_license"] = license_name
    machine = {"topology": data["topology"], "compute": data["compute"], "burst_buffer": bb}
    if "io" in data:
        machine["io"] = data["io"]
    return {"platform": data["platform"], "machine": machine, "deployment": deployment}


def _deployment(table: dict[str, Any]) -> Deployment:
    return Deployment(
        controller_host=_require(table, "controller_host", str, "deployment"),
        controller_port=_require(table, "controller_port", int, "deployment"),
        slurmd_base_port=_require(table, "slurmd_base_port", int, "deployment"),
        node_containers=_require(table, "node_containers", int, "deployment"),
        bb_license=_require(table, "bb_license", str, "deployment"),
        slurmd_timeout=_require({"slurmd_timeout": 300} | table, "slurmd_timeout", int, "deployment"),
        message_timeout=_require({"message_timeout": 30} | table, "message_timeout", int, "deployment"),
        accounting=_accounting(table.get("accounting", {})),
        slurmd_conf=_require({"slurmd_conf": "shared"} | table, "slurmd_conf", str, "deployment"),
    )


def _accounting(table: Any) -> Accounting:
    where = "deployment.accounting"
    if not isinstance(table, dict):
        raise PlatformError(f"[{where}] must be a table")
    unknown = sorted(set(table) - {"enabled", "dbd_port", "account"})
    if unknown:
        raise PlatformError(f"{where}: unknown key(s) {', '.join(unknown)}")
    defaults = {"enabled": True, "account": "harness"}
    values = {**defaults, **table}
    return Accounting(
        enabled=_require(values, "enabled", bool, where),
        dbd_port=_require(values, "dbd_port", int, where) if "dbd_port" in values else None,
        account=_require(values, "account", str, where),
    )


def _node_kind(table: dict[str, Any], where: str) -> NodeKind:
    return NodeKind(
        prefix=_require(table, "prefix", str, where),
        digits=_require(table, "digits", int, where),
        cpus=_require(table, "cpus", int, where),
        real_memory_mb=_require(table, "real_memory_mb", int, where),
        partition=_require(table, "partition", str, where),
    )


def _table(data: dict[str, Any], name: str, source: str, parent: str = "") -> dict[str, Any]:
    table = data.get(name)
    if not isinstance(table, dict):
        raise PlatformError(f"{source}: missing table [{parent}{name}]")
    return table


def _optional_int(table: dict[str, Any], key: str, where: str) -> int | None:
    return _require(table, key, int, where) if key in table else None


def _require(table: dict[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in table:
        raise PlatformError(f"{where}: missing '{key}'")
    value = table[key]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise PlatformError(f"{where}.{key}: expected an integer, got {value!r}")
    if kind is bool and not isinstance(value, bool):
        raise PlatformError(f"{where}.{key}: expected true or false, got {value!r}")
    if kind is str and not isinstance(value, str):
        raise PlatformError(f"{where}.{key}: expected a string, got {value!r}")
    if kind is int and value <= 0:
        raise PlatformError(f"{where}.{key}: must be positive, got {value}")
    if kind is int and value > _MAX_INT.get(key, MAX_SIZE):
        raise PlatformError(f"{where}.{key}: must be at most {_MAX_INT.get(key, MAX_SIZE)}, got {value}")
    if kind is str and key in _SLURM_NAMES and not _SLURM_NAMES[key].fullmatch(value):
        rule = (
            "letters, digits, '.' or '-'"
            if key == "controller_host"
            else "a letter, then letters, digits, '_' or '-'"
        )
        raise PlatformError(f"{where}.{key}: {value!r} is not a name Slurm's config can hold ({rule})")
    return value
