"""The error of every platform description: a missing field or an impossible value."""

from __future__ import annotations

from harness.model.checks import InputError


class PlatformError(InputError):
    """A platform description is missing a field or holds an impossible value."""
