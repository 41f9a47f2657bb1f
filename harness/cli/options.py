"""Option types shared by every command: one spelling, one default and one check each.

``--period I/K`` counts from 1 everywhere, as the thesis numbers its periods (period 1 of
16 is the first 20.8 days of KTH); ``0/K`` is a usage error that says so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_PLATFORM = "default"
PLATFORM_HELP = "Platform description (TOML); 'default' is the built-in 96 + 12 machine."


class PeriodType(click.ParamType):
    """``I/K`` on the command line, I counted from 1 (the thesis's numbering) -> (i, k), i 0-based."""

    name = "I/K"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[int, int]:
        if isinstance(value, tuple):
            return value
        try:
            i, k = (int(x) for x in str(value).split("/"))
        except ValueError:
            self.fail(f"expected I/K such as 3/16, got {value!r}", param, ctx)
        if k < 1:
            self.fail(f"K must be >= 1, got {value!r}", param, ctx)
        if not 1 <= i <= k:
            first_last = f"the first period is 1/{k}, the last {k}/{k}"
            self.fail(f"period I must be in 1..K, counted from 1 ({first_last}); got {value!r}", param, ctx)
        return i - 1, k


def platform_option(func: F) -> F:
    return click.option(
        "--platform", "platform_file", default=DEFAULT_PLATFORM, show_default=True, help=PLATFORM_HELP
    )(func)


def shrink_option(default: float | None, help_extra: str = "") -> Callable[[F], F]:
    text = "Time-shrink factor s in [0, 1): every time is multiplied by 1 - s." + help_extra
    # the range is checked where the shrink is used (harness.model.timescale): one check
    return click.option("--shrink", type=float, default=default, show_default=default is not None,
                        help=text)  # fmt: skip


def seed_option(default: int | None, help_text: str = "Seed of the burst-buffer model.") -> Callable[[F], F]:
    return click.option("--seed", type=int, default=default, show_default=default is not None, help=help_text)


def first_n_option(func: F) -> F:
    return click.option("--first-n", type=click.IntRange(min=1), default=None,
                        help="Only the first N jobs of the trace.")(func)  # fmt: skip


def period_option(func: F) -> F:
    return click.option(
        "--period", type=PeriodType(), default=None,
        help="I/K: only the I-th of K equal periods of the trace (I from 1, as in the thesis).",
    )(func)  # fmt: skip


def policy_option(default: str | None, help_text: str) -> Callable[[F], F]:
    return click.option("--policy", "-p", "policy", default=default, show_default=default is not None,
                        help=help_text)  # fmt: skip
