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

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from harness.model import checks
from harness.model.clock import MAX_SPEEDUP

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_PLATFORM = "default"
PLATFORM_HELP = "Platform description (TOML file), or 'default' (96 + 12 nodes) or 'cts1' (4,320 nodes)."
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


class InputFailure(click.ClickException):
    """A value the user gave was refused (:class:`harness.model.checks.InputError`): one line
    ``Error: ...`` and exit status 2, the status of a usage error."""

    exit_code = 2


def as_usage_errors(invoke: Callable[[click.Context], Any], ctx: click.Context) -> Any:
    """Run ``invoke(ctx)``; a refused input, raised as it is or turned into a
    ``ClickException`` by a command, ends with exit status 2 instead of 1 or a traceback."""
    try:
        return invoke(ctx)
    except checks.InputError as exc:
        raise InputFailure(str(exc)) from None
    except click.ClickException as exc:
        if isinstance(exc.__context__, checks.InputError) and exc.exit_code == 1:
            exc.exit_code = 2
        raise


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

    def invoke(self, ctx: click.Context) -> Any:
        return as_usage_errors(super().invoke, ctx)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_epilog(ctx, formatter)
        _format_tail(formatter, self.examples, self.renamed)


class HarnessGroup(click.Group):
    """A group of :class:`HarnessCommand` whose help ends with examples too."""

    command_class = HarnessCommand

    def __init__(self, *args: Any, examples: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.examples = tuple(examples)

    def invoke(self, ctx: click.Context) -> Any:
        return as_usage_errors(super().invoke, ctx)

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
        if not 1 <= k <= checks.MAX_PARTS:
            self.fail(f"K must be in 1..{checks.MAX_PARTS}, got {value!r}", param, ctx)
        if not 1 <= i <= k:
            first_last = f"the first period is 1/{k}, the last {k}/{k}"
            self.fail(f"period I must be in 1..K, counted from 1 ({first_last}); got {value!r}", param, ctx)
        return i - 1, k


class NumberType(click.ParamType):
    """A finite float in a range (:class:`harness.model.checks.Range`); unlike
    click.FloatRange, nan and inf are refused (nan passes every comparison)."""

    def __init__(
        self,
        name: str,
        low: float | None = None,
        high: float | None = None,
        *,
        low_open: bool = False,
        high_open: bool = False,
        note: str = "",
    ) -> None:
        self.name = name
        self.range = checks.Range(low, high, low_open, high_open)
        self.note = note  # why the range is what it is, said with a refusal

    def describe(self) -> str:
        return self.range.describe()

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:  # text in ASCII only: float() also reads other scripts' digits
            parsed = value if isinstance(value, int | float) else float(str(value).encode("ascii"))
        except (TypeError, ValueError):
            parsed = value  # refused below, as written
        try:
            return checks.number(parsed, "", self.range)
        except checks.InputError:
            high = self.range.high is not None and isinstance(parsed, float) and parsed > self.range.high
            note = f" ({self.note})" if self.note and high else ""
            self.fail(f"expected {self.describe()}, got {value!r}{note}", param, ctx)


class IntegerType(click.ParamType):
    """An integer in ``minimum..maximum`` (:func:`harness.model.checks.integer`): never above
    int64, where numpy would wrap it silently."""

    name = "integer"

    def __init__(self, minimum: int | None = None, maximum: int = checks.MAX_INT64, why: str = "") -> None:
        self.minimum, self.maximum, self.why = minimum, maximum, why

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        text = str(value).strip()
        parsed = int(text) if re.fullmatch(r"[+-]?[0-9]+", text, re.ASCII) else value
        try:
            return checks.integer(parsed, "", self.minimum, self.maximum)
        except checks.InputError:
            rule = checks.integer_rule(self.minimum, self.maximum, isinstance(parsed, int))
            self.fail(f"expected {rule}{f' ({self.why})' if self.why else ''}, got {value!r}", param, ctx)


class NameType(click.ParamType):
    """A safe name (:func:`harness.model.checks.safe_name`): it becomes a file, a container
    or a word of a Slurm file, so no path separator, ``..``, space or newline."""

    name = "NAME"

    def __init__(self, label: bool = False) -> None:
        self.label = label  # a name only written into files may hold '+' (checks.LABEL)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        pattern, rule = (
            (checks.LABEL, checks.LABEL_RULE) if self.label else (checks.SAFE_NAME, checks.SAFE_NAME_RULE)
        )
        try:
            return checks.safe_name(value, "", pattern, rule)
        except checks.InputError as exc:
            self.fail(str(exc), param, ctx)


# The shared types: every option of one kind is checked the same way, naming the option.
PROBABILITY = NumberType("probability", 0.0, 1.0)
RATIO = NumberType("ratio", 1.0)  # a sampling ratio s_p = N_orig / N_work: >= 1
SHRINK = NumberType("shrink", 0.0, 1.0, high_open=True)  # [0, 1), as harness.model.timescale
SPEEDUP = NumberType(
    "speed-up",
    0.0,
    MAX_SPEEDUP,
    low_open=True,
    note=f"x{MAX_SPEEDUP:g} is the highest speed-up measured to keep Slurm healthy: docs/virtual-time.md",
)
TAU = NumberType("seconds", 0.0, low_open=True)  # bounded-slowdown threshold: > 0
TIME_LIMIT = NumberType("seconds", 0.0, low_open=True)
SAMPLE_WINDOW = NumberType("seconds", 0.0, low_open=True)
POSITIVE_SECONDS = NumberType("seconds", 0.0, low_open=True)
POSITIVE_NUMBER = NumberType("number", 0.0, low_open=True)
NON_NEGATIVE_SECONDS = NumberType("seconds", 0.0)
POSITIVE_INT = IntegerType(1)
NON_NEGATIVE_INT = IntegerType(0)
REPEAT = IntegerType(1, checks.MAX_REPETITIONS)
SEED = IntegerType(0)  # numpy's generators take any non-negative integer (int64 here)
MEGABYTES = IntegerType(0, checks.MAX_INT32, "Slurm counts MB in 32 bits")
JOB_COUNT = IntegerType(1, checks.MAX_JOBS, "a generated workload")
NODE_COUNT = IntegerType(1, checks.MAX_INT32, "Slurm counts in 32 bits")
PARTS = IntegerType(1, checks.MAX_PARTS)
SLURM_COUNT = IntegerType(0, checks.MAX_INT32, "Slurm counts in 32 bits")
WORKERS = IntegerType(1, 1024, "processes or workers at once")
MINUTES = IntegerType(1, 525_600, "a year")


def policy_param_option(func: F) -> F:
    text = "A policy's tunable (repeatable), e.g. cooling_rate=0.8; `harness policies --params` lists them."
    return click.option("--policy-param", "policy_param", multiple=True, metavar="KEY=VALUE", help=text)(func)


def platform_option(func: F) -> F:
    return click.option(
        "--platform", "platform_file", default=DEFAULT_PLATFORM, show_default=True, help=PLATFORM_HELP
    )(func)


def shrink_option(default: float | None, help_extra: str = "") -> Callable[[F], F]:
    text = SHRINK_HELP + (" " + help_extra if help_extra else "")
    return click.option("--shrink", type=SHRINK, default=default, show_default=default is not None, help=text)


def bb_seed_option(default: int | None, help_extra: str = "") -> Callable[[F], F]:
    """``--bb-seed``: the burst-buffer model's seed (old spelling ``--seed``, see ``renamed``)."""
    text = BB_SEED_HELP + (" " + help_extra if help_extra else "")
    return click.option(
        "--bb-seed", "bb_seed", type=SEED, default=default, show_default=default is not None, help=text
    )


class PriorityType(click.ParamType):
    """A priority model (harness.workload.priority), checked when the option is read."""

    name = "MODEL"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from harness.workload.priority import PriorityModelError, parse_priority

        try:
            return str(parse_priority(str(value)))
        except PriorityModelError as exc:
            self.fail(str(exc), param, ctx)


def priority_options(func: F) -> F:
    """``--priority MODEL`` and ``--preempt none|suspend`` (Barberato Section 4.3, Chapter 5)."""
    func = click.option(
        "--preempt",
        type=click.Choice(["none", "suspend"]),
        default="none",
        show_default=True,
        help="suspend: a high-priority job that cannot start suspends low-priority running jobs "
        "(Slurm PreemptMode=SUSPEND,GANG); they resume when it ends.",
    )(func)
    return click.option(
        "--priority",
        type=PriorityType(),
        default="none",
        show_default=True,
        help="High-priority jobs: none, random:F[:SEED] (a seeded random fraction F) or size:N "
        "(jobs wider than N nodes); they go to Slurm's urgent partition (a higher tier).",
    )(func)


def policy_seed_option(func: F) -> F:
    return click.option(
        "--policy-seed", "policy_seed", type=SEED, default=0, show_default=True, help=POLICY_SEED_HELP
    )(func)


def time_limit_option(default: float | None, help_extra: str) -> Callable[[F], F]:
    text = "Wall-clock limit of one plan search, in seconds; " + help_extra
    return click.option(
        "--time-limit", type=TIME_LIMIT, default=default, show_default=default is not None, help=text
    )


def first_n_option(func: F) -> F:
    return click.option(
        "--first-n",
        type=POSITIVE_INT,
        default=None,
        help="Only the first N jobs of the trace (default: all).",
    )(func)


def period_option(func: F) -> F:
    return click.option(
        "--period",
        type=PeriodType(),
        default=None,
        help="I/K: only the I-th of K equal periods of the trace, I from 1 as in the thesis (default: all).",
    )(func)


def policy_option(default: str | None, help_text: str) -> Callable[[F], F]:
    return click.option(
        "--policy", "-p", "policy", default=default, show_default=default is not None, help=help_text
    )


def output_option(
    help_text: str,
    required: bool = False,
    default: Path | None = None,
    dir_okay: bool = True,
    file_okay: bool = True,
) -> Callable[[F], F]:
    """``-o/--output``: the file or directory a command writes."""
    kind = click.Path(path_type=Path, dir_okay=dir_okay, file_okay=file_okay)
    return click.option(
        "-o",
        "--output",
        "output",
        type=kind,
        required=required,
        default=default,
        show_default=default is not None,
        help=help_text,
    )


def json_option(func: F) -> F:
    text = "Print the result as one JSON object on stdout (messages go to stderr)."
    return click.option("--json", "as_json", is_flag=True, help=text)(func)


def quiet_option(help_text: str = "Fewer progress messages.") -> Callable[[F], F]:
    return click.option("-q", "--quiet", is_flag=True, help=help_text)


def verbose_option(help_text: str = "More progress messages.") -> Callable[[F], F]:
    return click.option("-v", "--verbose", is_flag=True, help=help_text)


def user_errors(*errors: type[BaseException]) -> Callable[[F], F]:
    """Bad input is the user's to fix: a ValueError (every named error of the harness is one:
    PlatformError, PlanError, SchemaError, OutputError, ...) or one of ``errors`` becomes one
    clear line and exit status 1, not a traceback (2 for a refused input, see
    :func:`as_usage_errors`)."""
    caught: tuple[type[BaseException], ...] = (ValueError, *errors)

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return func(*args, **kwargs)
            except caught as exc:
                raise click.ClickException(str(exc)) from None

        return wrapper  # type: ignore[return-value]

    return decorate
