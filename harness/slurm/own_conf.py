"""A slurm.conf the harness rendered, read back as the machine it was rendered from.

``harness platform from-slurm`` on an emulated cluster's own slurm.conf (its state's
``etc/slurm.conf``, or ``/etc/slurm/slurm.conf`` in its containers) is the round trip of a
site (docs/site-whatif.md): the emulated cluster stands in for the site. The file holds what
the harness added to the site's machine, which a platform must not hold twice (the harness
adds them again when it renders):

- the burst-buffer node(s) (``Gres=bb:...`` only), their partition, the ``bb`` license and
  the ``bb`` GRES type (the first of ``GresTypes``), the bandwidth license, the ``urgent``
  tier, ``JobSubmitPlugins=lua`` and ``BurstBufferType=burst_buffer/lua``;
- the harness's own scheduler settings (``SchedulerType``, ``SchedulerParameters``,
  ``PriorityType`` ...): left out; the site's kept settings come back from the comment
  block the render writes them in (``#   PriorityWeightAge=1000``).

What cannot be told back is said in the notes: a default partition made
``OverSubscribe=FORCE:1`` by preemption runs, and the BB node's size (the platform gets the
default BB node, as for any site).
"""

from __future__ import annotations

import re
from pathlib import Path

from harness.model.hostlist import HostlistError, expand_hostlist
from harness.platform.slurm_conf import ConfLine, Where, canonical, read_slurm_conf
from harness.platform.slurm_conf_keys import KEPT_SETTINGS
from harness.slurm.settings import BANDWIDTH_LICENSE, URGENT_PARTITION

RENDER_MARK = "# slurm.conf rendered by harness "  # the template's first line
SITE_SETTINGS_MARK = "# The site's own scheduler settings"
_PLATFORM = re.compile(r" from platform '([^']*)'")
_SETTING = re.compile(r"^#   ([A-Za-z][A-Za-z0-9]*)=(.*)$")
_HARNESS_GLOBALS = ("jobsubmitplugins", "burstbuffertype")


def is_own_render(path: str | Path) -> bool:
    """The file starts with the render's mark (a site's own file does not). Only a regular
    file is opened: a FIFO would block here, before the reader's own refusal."""
    if not Path(path).is_file():
        return False
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.readline().startswith(RENDER_MARK)
    except OSError:
        return False


def site_lines(path: str | Path) -> tuple[list[ConfLine], list[str], str | None]:
    """(the lines of the site's machine, notes on what was left out, the platform's name from
    the render's mark) of a slurm.conf the harness rendered."""
    text = Path(path).read_text(encoding="utf-8")
    lines = read_slurm_conf(path)
    gres_types = [v for line in lines for k, v in line.pairs if canonical(k) == "grestypes"]
    bb = gres_types[0].split(",")[0].strip() if gres_types else "bb"
    bb_nodes = _bb_nodes(lines, bb)
    kept: list[ConfLine] = []
    left: list[str] = []
    for line in lines:
        first = canonical(line.first_key)
        if first == "nodename" and line.first_value in bb_nodes.get("lines", set()):
            continue
        if first == "partitionname" and _harness_partition(line, bb_nodes["nodes"]):
            left.append(line.first_value)
            continue
        if first in ("nodename", "partitionname"):
            kept.append(line)
            continue
        pairs = tuple(p for p in (_global(key, value, bb) for key, value in line.pairs) if p is not None)
        if pairs:
            kept.append(ConfLine(line.where, pairs))
    settings = _site_settings(text, str(path))
    kept += settings
    match = _PLATFORM.search(text.splitlines()[0]) if text else None
    bb_names = ", ".join(sorted(bb_nodes["nodes"])) or "none"
    notes = [
        f"a slurm.conf rendered by the harness: its burst-buffer node(s) {bb_names}, partition(s) "
        f"{', '.join(left) or 'none'}, license and GRES '{bb}' left out (the platform has its own)",
        f"the harness's scheduler settings left out; the site's kept ones read from its comment block "
        f"({len(settings)})",
    ]
    if any(canonical(k) == "preemptmode" and "suspend" in v.lower() for line in lines for k, v in line.pairs):
        notes.append("rendered for preemption by suspension: the default partition's OverSubscribe=FORCE:1 "
                     "is the harness's, not the site's")  # fmt: skip
    return kept, notes, match[1] if match else None


def _bb_nodes(lines: list[ConfLine], bb: str) -> dict[str, set[str]]:
    """The NodeName values (``lines``) and node names (``nodes``) whose only GRES is ``bb``."""
    found: dict[str, set[str]] = {"lines": set(), "nodes": set()}
    for line in lines:
        if canonical(line.first_key) != "nodename":
            continue
        gres = next((v for k, v in line.pairs if canonical(k) == "gres"), "")
        names = {item.split(":")[0] for item in gres.split(",") if item}
        if names == {bb}:
            found["lines"].add(line.first_value)
            found["nodes"].update(_expand(line.first_value))
    return found


def _expand(hostlist: str) -> list[str]:
    try:
        return expand_hostlist(hostlist)
    except HostlistError:
        return [hostlist]


def _harness_partition(line: ConfLine, bb_nodes: set[str]) -> bool:
    """The urgent tier, or a partition of burst-buffer nodes only."""
    if line.first_value == URGENT_PARTITION:
        return True
    nodes = next((v for k, v in line.pairs if canonical(k) == "nodes"), "")
    return bool(nodes) and set(_expand(nodes)) <= bb_nodes


def _global(key: str, value: str, bb: str) -> tuple[str, str] | None:
    """A global pair as the site wrote it, or None when it is the harness's."""
    name = canonical(key)
    if name in KEPT_SETTINGS or name in _HARNESS_GLOBALS:
        return None
    if name in ("licenses", "grestypes"):
        drop = {bb, BANDWIDTH_LICENSE} if name == "licenses" else {bb}
        items = [item for item in value.split(",") if item.split(":")[0].strip() not in drop]
        return (key, ",".join(items)) if items else None
    return (key, value)


def _site_settings(text: str, path: str) -> list[ConfLine]:
    """The site's kept settings, from the lines under the render's comment that lists them."""
    settings: list[ConfLine] = []
    inside = False
    for number, raw in enumerate(text.splitlines(), start=1):
        if raw.startswith(SITE_SETTINGS_MARK):
            inside = True
            continue
        match = _SETTING.match(raw) if inside else None
        if match is None:
            inside = False
            continue
        settings.append(ConfLine(Where(path, number), ((match[1], match[2]),)))
    return settings
