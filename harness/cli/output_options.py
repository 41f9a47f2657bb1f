"""``--force``: the one option that lets a command replace a file (or write into a folder) of
another kind than it writes; the check itself is :mod:`harness.model.outputs`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

F = TypeVar("F", bound=Callable[..., object])

FORCE_HELP = (
    "Replace an existing output of another kind (a trace, a platform file, a run directory...); "
    "without it such an output is refused and nothing is written."
)


def force_option(func: F) -> F:
    return click.option("--force", is_flag=True, help=FORCE_HELP)(func)
