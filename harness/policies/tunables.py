"""A policy's settings beyond its name (Cerberus's starvation threshold, the annealing's
cooling, window's M, ...): what each family accepts, with its type and range, so that a user
can set them (``--policy-param key=value``) and sweep them, and a wrong key or value is named.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class PolicyParamError(ValueError):
    """A policy parameter that the policy does not have, or a value out of its range."""


@dataclass(frozen=True)
class Tunable:
    kind: type  # int, float or str
    low: float | None = None  # inclusive
    high: float | None = None  # inclusive
    choices: tuple[str, ...] = ()
    help: str = ""

    def convert(self, key: str, raw: Any) -> Any:
        """``raw`` (a string from the command line, or a TOML value) as this kind, checked."""
        try:
            value = self.kind(raw) if not isinstance(raw, bool) else None
        except (TypeError, ValueError):
            value = None
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            raise PolicyParamError(f"policy parameter {key}: expected {self._expected()}, got {raw!r}")
        if self.kind is int and isinstance(raw, float) and raw != int(raw):
            raise PolicyParamError(f"policy parameter {key}: expected an integer, got {raw!r}")
        out_of_range = (self.low is not None and value < self.low) or (
            self.high is not None and value > self.high
        )
        if out_of_range or (self.choices and value not in self.choices):
            raise PolicyParamError(f"policy parameter {key}: expected {self._expected()}, got {raw!r}")
        return value

    def _expected(self) -> str:
        if self.choices:
            return "one of " + ", ".join(self.choices)
        kind = "an integer" if self.kind is int else "a number" if self.kind is float else "text"
        bounds = [
            f">= {self.low:g}" if self.low is not None else "",
            f"<= {self.high:g}" if self.high is not None else "",
        ]
        return " ".join([kind, " and ".join(b for b in bounds if b)]).strip()

    def describe(self) -> str:
        return f"{self._expected()}: {self.help}" if self.help else self._expected()


def checked_params(family: str, tunables: Mapping[str, Tunable], raw: Mapping[str, Any]) -> dict[str, Any]:
    """``raw`` checked against what ``family`` accepts: the converted values, or an error naming
    the unknown key (with the nearest known one) or the bad value."""
    out = {}
    for key, value in raw.items():
        if key not in tunables:
            known = ", ".join(sorted(tunables)) or "none"
            near = difflib.get_close_matches(key, list(tunables), n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise PolicyParamError(f"policy {family} has no parameter {key!r}{hint}; its parameters: {known}")
        out[key] = tunables[key].convert(key, value)
    return out


def parse_assignments(pairs: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``("a=1", "b=x")`` -> ``{"a": "1", "b": "x"}`` (``--policy-param`` given several times)."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise PolicyParamError(f"--policy-param: expected KEY=VALUE, got {pair!r}")
        if key.strip() in out:
            raise PolicyParamError(f"--policy-param: {key.strip()} given twice")
        out[key.strip()] = value.strip()
    return out
