"""Policy name templates of an experiment file: ``"backfill-{depth}"`` with ``[sweep] depth =
[0, 1, 2]`` names ``backfill-0``, ``backfill-1`` and ``backfill-2``."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

_VAR = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


def template_vars(name: str) -> list[str]:
    """``"backfill-{depth}"`` -> ``["depth"]``."""
    return _VAR.findall(name)


def policy_instances(template: str, sweep: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every assignment of the swept variables a policy template uses."""
    combos: list[dict[str, Any]] = [{}]
    for var in template_vars(template):
        combos = [{**c, var: v} for c in combos for v in sweep[var]]
    return combos


def concrete_policies(templates: Sequence[str], sweep: Mapping[str, Sequence[Any]]) -> list[str]:
    """Every policy the templates name, every sweep value filled in."""
    return [t.format(**v) for t in templates for v in policy_instances(t, sweep)]
