"""Typed reading of one TOML table, every error naming the file and the key.

``Keys(data, "workload", path).integer("periods", minimum=1)`` returns the value or
raises :class:`SpecError` like ``exp.toml: [workload] periods: expected an integer >= 1,
got 'x'``; :meth:`Keys.finish` rejects the keys nobody asked for (typos).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.model import checks
from harness.model.checks import InputError

_MISSING = object()


class SpecError(InputError):
    """An experiment file is unreadable or says something impossible; the message names the key."""


class Keys:
    """The keys of one table, read one at a time."""

    def __init__(self, data: Any, table: str, path: Path | str) -> None:
        self.path = str(path)
        self.name = table
        if not isinstance(data, dict):
            raise SpecError(f"{self.path}: [{table}]: expected a table, got {checks.show(data)}")
        self.data = data
        self.used: set[str] = set()

    @property
    def title(self) -> str:
        return f"[{self.name}]" if self.name else "top level:"

    def where(self, key: str) -> str:
        return f"{self.path}: {self.title} {key}"

    def fail(self, key: str, expected: str, value: Any = _MISSING) -> SpecError:
        got = "" if value is _MISSING else f", got {checks.show(value)}"
        return SpecError(f"{self.where(key)}: expected {expected}{got}")

    def raw(self, key: str, default: Any = _MISSING) -> Any:
        self.used.add(key)
        if key in self.data:
            return self.data[key]
        if default is _MISSING:
            raise SpecError(f"{self.where(key)}: missing (required)")
        return default

    def string(self, key: str, default: Any = _MISSING, choices: tuple[str, ...] = ()) -> Any:
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, str) or not value:
            raise self.fail(key, "a non-empty string", value)
        if choices and value not in choices:
            raise self.fail(key, f"one of {', '.join(choices)}", value)
        return value

    def integer(
        self, key: str, default: Any = _MISSING, minimum: int | None = None, maximum: int = checks.MAX_INT64
    ) -> Any:
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        return self._int(key, value, minimum, maximum)

    def _int(self, key: str, value: Any, minimum: int | None, maximum: int = checks.MAX_INT64) -> int:
        return int(self._checked(checks.integer, value, key, minimum, maximum))

    def _checked(self, check: Any, value: Any, key: str, *args: Any) -> Any:
        """``check(value, where, *args)`` of :mod:`harness.model.checks`, its error a SpecError."""
        try:
            return check(value, self.where(key), *args)
        except InputError as exc:
            raise SpecError(str(exc)) from None

    def number(self, key: str, default: Any = _MISSING, allowed: checks.Range = checks.ANY_NUMBER) -> Any:
        """A finite number in ``allowed``."""
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        return float(self._checked(checks.number, value, key, allowed))

    def safe_name(self, key: str, default: str) -> str:
        """A safe name (:func:`harness.model.checks.safe_name`): it becomes a directory name.
        The default (a file's stem) is one already."""
        value = self.raw(key, default)
        return default if key not in self.data else str(self._checked(checks.safe_name, value, key))

    def boolean(self, key: str, default: Any = _MISSING) -> Any:
        value = self.raw(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, "true or false", value)
        return value

    def integers(
        self, key: str, default: Any = _MISSING, minimum: int | None = None, maximum: int = checks.MAX_INT64
    ) -> Any:
        """An integer or a non-empty list of distinct integers (an axis of the grid)."""
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        items = value if isinstance(value, list) else [value]
        return tuple(self._int(key, v, minimum, maximum) for v in self._distinct(key, items, "integers"))

    def numbers(self, key: str, default: Any = _MISSING, allowed: checks.Range = checks.ANY_NUMBER) -> Any:
        """A finite number or a non-empty list of distinct finite numbers, each in ``allowed``."""
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        items = value if isinstance(value, list) else [value]
        for v in items:
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise self.fail(key, "a number or a list of numbers", value)
        return tuple(self._checked(checks.numbers, self._distinct(key, items, "numbers"), key, allowed))

    def strings(self, key: str, default: Any = _MISSING) -> Any:
        """A non-empty list of distinct non-empty strings."""
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.fail(key, "a list of non-empty strings", value)
        return tuple(self._distinct(key, value, "strings"))

    def names(self, key: str, default: tuple[str, ...], known: tuple[str, ...]) -> tuple[str, ...]:
        """A list of names, each one of ``known``."""
        chosen = self.strings(key, default)
        unknown = [m for m in chosen if m not in known]
        if unknown:
            raise self.fail(key, f"names among {', '.join(known)}", unknown)
        return tuple(chosen)

    def one_or_names(self, key: str, default: str, known: tuple[str, ...]) -> tuple[str, ...]:
        """One name of ``known`` or a list of them (an axis of a grid when longer than one)."""
        if not isinstance(self.raw(key, default), list):
            return (self.string(key, default, known),)
        return tuple(dict.fromkeys(self.names(key, (default,), known)))

    def _distinct(self, key: str, items: list[Any], what: str) -> list[Any]:
        if not items:
            raise self.fail(key, f"a non-empty list of {what}", items)
        if len(set(items)) != len(items):
            raise self.fail(key, f"distinct {what}", items)
        return items

    def table(self, key: str) -> Keys:
        """A sub-table (absent: an empty one)."""
        return Keys(self.raw(key, {}), f"{self.name}.{key}" if self.name else key, self.path)

    def expect(self, *known: str) -> None:
        """Reject unknown keys now, before reading any (a misspelt table name explains more
        than the missing table it causes)."""
        self.used.update(known)
        self.finish()

    def finish(self) -> None:
        unknown = sorted(set(self.data) - self.used)
        if unknown:
            known = ", ".join(sorted(self.used)) or "none"
            hint = checks.did_you_mean(unknown[0], self.used)
            raise SpecError(
                f"{self.path}: {self.title} unknown key {', '.join(unknown)}{hint} (known: {known})"
            )
