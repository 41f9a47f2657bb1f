"""Option types shared by every command: one spelling, one default and one check each.

``--period I/K`` counts from 1 everywhere, as the thesis numbers its periods (period 1 of
16 is the first 20.8 days of KTH); ``0/K`` is a usage error that says so.

Every command is a :class:`HarnessCommand`: its help ends with examples, and old option
spellings (``--seed`` where it now says ``--bb-seed`` or ``--policy-seed``, ``--runs-dir``,
``--out`` ...) are still accepted with a deprecation warning but no longer shown.
The vocabulary, and the few names that deliberately differ between commands, are in
``docs/cli.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_PLATFORM = "default"
PLATFORM_HELP = "Platform description (TOML file); 'default' is the built-in 96 + 12 node machine."
SHRINK_HELP = "Time-shrink factor s in [0, 1): every instant and duration is multiplied by 1 - s."
BB_SEED_HELP = "Seed of the burst-buffer request model (and of --shuffle)."
POLICY_SEED_HELP = "Seed of randomised policies."


def rename_deprecated(args: list[str], renamed: Mapping[str, str]) -> list[str]:
    """``args`` with old option spellings replaced by the new ones (a warning for each)."""
    out: list[str] = []
    for index, arg in enumerate(args):
        if arg == "--":
            return out + args[index:]
        old, eq, value = arg.partition("=")
        new = renamed.get(old)
        if new is None:
            out.append(arg)
            continue
        click.echo(f"warning: {old} is deprecated; use {new}", err=True)
        out.append(new + eq + value)
    return out


def _format_tail(formatter: click.HelpFormatter, examples: Sequence[str], renamed: Mapping[str, str]) -> None:
    if examples:
        with formatter.section("Examples"):
            for line in examples:
                formatter.write(" " * formatter.current_indent + line + "\n")
    if renamed:
        with formatter.section("Deprecated spellings (still accepted, with a warning)"):
            formatter.write_dl([(old, f"now {new}") for old, new in renamed.items()])


class HarnessCommand(click.Command):
    """A command whose help ends with ``examples`` and that accepts ``renamed`` old spellings."""

    def __init__(
        self,
        *args: Any,
        examples: Sequence[str] = (),
        renamed: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.examples = tuple(examples)
        self.renamed = dict(renamed or {})

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, rename_deprecated(args, self.renamed))

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_epilog(ctx, formatter)
        _format_tail(formatter, self.examples, self.renamed)


class HarnessGroup(click.Group):
    """A group of :class:`HarnessCommand` whose help ends with examples too."""

    command_class = HarnessCommand

    def __init__(self, *args: Any, examples: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.examples = tuple(examples)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_epilog(ctx, formatter)
        _format_tail(formatter, self.examples, {})


HarnessGroup.group_class = HarnessGroup


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
    text = SHRINK_HELP + (" " + help_extra if help_extra else "")
    # the range is checked where the shrink is used (harness.model.timescale): one check
    return click.option("--shrink", type=float, default=default, show_default=default is not None,
                        help=text)  # fmt: skip


def bb_seed_option(default: int | None, help_extra: str = "") -> Callable[[F], F]:
    """``--bb-seed``: the burst-buffer model's seed (old spelling ``--seed``, see ``renamed``)."""
    text = BB_SEED_HELP + (" " + help_extra if help_extra else "")
    return click.option("--bb-seed", "bb_seed", type=int, default=default, show_default=default is not None,
                        help=text)  # fmt: skip


def policy_seed_option(func: F) -> F:
    return click.option("--policy-seed", "policy_seed", type=int, default=0, show_default=True,
                        help=POLICY_SEED_HELP)(func)  # fmt: skip


def time_limit_option(default: float | None, help_extra: str) -> Callable[[F], F]:
    text = "Wall-clock limit of one plan search, in seconds; " + help_extra
    return click.option("--time-limit", type=float, default=default, show_default=default is not None,
                        help=text)  # fmt: skip


def first_n_option(func: F) -> F:
    return click.option("--first-n", type=click.IntRange(min=1), default=None,
                        help="Only the first N jobs of the trace (default: all).")(func)  # fmt: skip


def period_option(func: F) -> F:
    return click.option(
        "--period", type=PeriodType(), default=None,
        help="I/K: only the I-th of K equal periods of the trace, I from 1 as in the thesis (default: all).",
    )(func)  # fmt: skip


def policy_option(default: str | None, help_text: str) -> Callable[[F], F]:
    return click.option("--policy", "-p", "policy", default=default, show_default=default is not None,
                        help=help_text)  # fmt: skip


def output_option(
    help_text: str,
    required: bool = False,
    default: Path | None = None,
    dir_okay: bool = True,
    file_okay: bool = True,
) -> Callable[[F], F]:
    """``-o/--output``: the file or directory a command writes."""
    kind = click.Path(path_type=Path, dir_okay=dir_okay, file_okay=file_okay)
    return click.option("-o", "--output", "output", type=kind, required=required, default=default,
                        show_default=default is not None, help=help_text)  # fmt: skip


def json_option(func: F) -> F:
    text = "Print the result as one JSON object on stdout (messages go to stderr)."
    return click.option("--json", "as_json", is_flag=True, help=text)(func)


def quiet_option(help_text: str = "Fewer progress messages.") -> Callable[[F], F]:
    return click.option("-q", "--quiet", is_flag=True, help=help_text)


def verbose_option(help_text: str = "More progress messages.") -> Callable[[F], F]:
    return click.option("-v", "--verbose", is_flag=True, help=help_text)
