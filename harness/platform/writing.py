"""A platform back to TOML (the format :mod:`harness.platform.loading` reads): what
``harness platform from-trace`` writes. ``load_platform`` of the text gives the same platform."""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from pathlib import Path
from typing import Any

from harness.platform.loading import load_platform
from harness.platform.machine import NodeKind
from harness.platform.platform import Platform
from harness.platform.site import Site
from harness.platform.site_toml import site_to_dict


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)  # a TOML basic string


def _key(key: str) -> str:
    """A bare TOML key when it can be one, else a quoted one (a license named ``a.b``)."""
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key, ensure_ascii=False)


def _table(name: str, values: dict[str, Any], header: str = "") -> list[str]:
    lines = (f"{_key(key)} = {_value(v)}" for key, v in values.items() if v is not None)
    return [header or f"[{name}]", *lines, ""]


def _site_tables(site: Site) -> list[str]:
    """``[machine.site]`` with its licenses, settings, node types and partitions."""
    table = site_to_dict(site)
    lines = _table("machine.site", {"origin": table["origin"], "gres_types": table["gres_types"]})
    lines += _table("machine.site.licenses", table["licenses"])
    lines += _table("machine.site.settings", table["settings"])
    for kind in table["node_types"]:
        lines += _table("", kind, header="[[machine.site.node_types]]")
    for part in table["partitions"]:
        lines += _table("", part, header="[[machine.site.partitions]]")
    return lines


def _kind(kind: NodeKind) -> dict[str, Any]:
    return asdict(kind)


def platform_to_toml(platform: Platform, comment: str = "") -> str:
    """The TOML text of a platform, with ``comment`` lines first."""
    p = platform
    topology = {
        "groups": p.groups,
        "chassis_per_group": p.chassis_per_group,
        "compute_per_chassis": p.compute_per_chassis,
        "compute_total": p.compute_total,
    }
    bb = {**_kind(p.bb), "per_chassis": p.bb_per_chassis, "capacity_mb": p.bb_capacity_mb}
    io = p.io
    io_plain = {
        "compute_link_mbps": io.compute_link_mbps,
        "bb_node_mbps": io.bb_node_mbps,
        "pfs_mbps": io.pfs_mbps,
    }
    lines = [f"# {line}" if line else "#" for line in comment.splitlines()]
    lines += [""] if lines else []
    lines += _table("platform", {"name": p.name, "description": p.description})
    if p.site is not None:
        lines += _site_tables(p.site)
    else:
        lines += _table("machine.topology", topology)
        lines += _table("machine.compute", _kind(p.compute))
    lines += _table("machine.burst_buffer", bb)
    lines += _table("machine.io", io_plain)
    if io.hierarchy is not None:
        lines += _table("machine.io.hierarchy", asdict(io.hierarchy))
    lines += _table("machine.io.tiers", asdict(io.tiers))
    deployment = asdict(p.deployment)
    accounting = deployment.pop("accounting", None)
    lines += _table("deployment", deployment)
    if accounting is not None:
        lines += _table("deployment.accounting", accounting)
    return "\n".join(lines)


def save_platform(platform: Platform, path: Path, comment: str = "") -> Platform:
    """Write ``platform`` to ``path`` and load it back: the platform a cluster or a command
    (``--platform path``) reads, e.g. the bundled one ``redeployed`` on other ports."""
    path.write_text(platform_to_toml(platform, comment), encoding="utf-8")
    return load_platform(str(path))
