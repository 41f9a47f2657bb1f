"""The workload options, in one place: how a trace is read, cleaned, given burst-buffer
requests and cut down. ``workload inspect | prepare | split``, ``simulate`` and ``run``
take them from here, so a trace is prepared the same way whichever command reads it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import click

from harness.cli.options import (
    MEGABYTES,
    NODE_COUNT,
    NON_NEGATIVE_INT,
    POSITIVE_INT,
    POSITIVE_NUMBER,
    RATIO,
    SAMPLE_WINDOW,
    bb_seed_option,
    first_n_option,
    period_option,
    platform_option,
)
from harness.workload import bbmodel, plan
from harness.workload.cleaning import ACTIONS, DEFAULT_ACTIONS, DEFAULT_WALLTIME_FACTOR

F = TypeVar("F", bound=Callable[..., Any])

# the cleaning rules with a choice of action, as options (the others only drop)
CLEANING_OPTIONS: tuple[str, ...] = ("zero_runtime", "unknown_walltime", "runtime_above_walltime")
_CLEANING_HELP = {
    "zero_runtime": "Jobs with runtime 0.",
    "unknown_walltime": "Jobs without requested time: factor (runtime x --walltime-factor), runtime, "
    "partition_max (largest known of the partition), or drop.",
    "runtime_above_walltime": "Jobs that ran past their walltime.",
}


def _apply(func: F, options: list[Any]) -> F:
    for option in reversed(options):
        func = option(func)
    return func


class WindowType(click.ParamType):
    """``START:END`` seconds after the first submission (either may be empty) -> (start, end|None)."""

    name = "START:END"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[float, float | None]:
        if isinstance(value, tuple):
            return value
        start, sep, end = str(value).partition(":")
        try:
            if not sep:
                raise ValueError
            window = float(start) if start else 0.0, float(end) if end else None
            if not math.isfinite(window[0]) or window[0] < 0 or not math.isfinite(window[1] or 0.0):
                raise ValueError
            return window
        except ValueError:
            self.fail(f"expected START:END in seconds such as 0:86400 or 3600:, got {value!r}", param, ctx)


def trace_options(func: F) -> F:
    """Reading, node size, cleaning and the BB model."""
    options = [
        platform_option,
        click.option("--lenient", is_flag=True, help="Skip malformed records instead of failing."),
        click.option("--procs-per-node", type=NODE_COUNT, default=None,
                     help="Processors per node of the traced machine (default: MaxProcs / MaxNodes "
                          "of the header, else 1)."),
        bb_seed_option(plan.DEFAULT_SEED),
        click.option(
            "--bb-model", type=click.Choice(bbmodel.MODELS), default="lognormal", show_default=True,
            help="Burst-buffer request source: Kopański's log-normal, a constant, or a trace column.",
        ),
        click.option("--bb-constant", type=MEGABYTES, default=None,
                     help="MB per node for --bb-model constant (required with it)."),
        click.option("--bb-column", default=None,
                     help="Job-table column for --bb-model column (e.g. mem_req_kb; required with it)."),
        *(
            click.option(f"--{name.replace('_', '-')}", type=click.Choice(ACTIONS[name]),
                         default=DEFAULT_ACTIONS[name], show_default=True, help=_CLEANING_HELP[name])
            for name in CLEANING_OPTIONS
        ),
        click.option("--walltime-factor", type=POSITIVE_NUMBER, default=DEFAULT_WALLTIME_FACTOR,
                     show_default=True, help="--unknown-walltime factor: walltime = runtime x this."),
    ]  # fmt: skip
    return _apply(func, options)


def selection_options(func: F) -> F:
    """Which jobs: period, window, first N, sampling (the shrink and shuffle are per command)."""
    options = [
        first_n_option,
        period_option,
        click.option("--window", type=WindowType(), default=None,
                     help="START:END, seconds after the first submission (half-open; END may be empty; "
                          "default: all)."),
        click.option("--sample", type=click.Choice(plan.SAMPLING_METHODS), default=None,
                     help="Barberato sampling: 'ordered' (ratio, offset) or 'su' (service-unit balanced); "
                          "default: none."),
        click.option("--sample-n", type=POSITIVE_INT, default=None,
                     help="Jobs to keep when sampling (or --sample-ratio)."),
        click.option("--sample-ratio", type=RATIO, default=None,
                     help="Sampling ratio s_p >= 1: keep one job in s_p (instead of --sample-n)."),
        click.option("--sample-offset", type=NON_NEGATIVE_INT, default=0, show_default=True,
                     help="Offset o_f (ordered)."),
        click.option("--sample-window", type=SAMPLE_WINDOW, default=60.0, show_default=True,
                     help="Requested-time window, in seconds (su)."),
    ]  # fmt: skip
    return _apply(func, options)


def trace_kwargs(opts: dict[str, Any]) -> dict[str, Any]:
    """The trace options -> keyword arguments of ``plan.prepare`` (platform not loaded)."""
    return {
        "seed": opts["bb_seed"],
        "bb_model": opts["bb_model"],
        "bb_constant_mb": opts["bb_constant"],
        "bb_column": opts["bb_column"],
        "lenient": opts["lenient"],
        "procs_per_node": opts["procs_per_node"],
        "walltime_factor": opts["walltime_factor"],
        "cleaning": {name: opts[name] for name in CLEANING_OPTIONS},
    }


def selection_kwargs(opts: dict[str, Any]) -> dict[str, Any]:
    """The selection options -> keyword arguments of ``plan.prepare``."""
    return {
        "first_n": opts["first_n"],
        "period": opts["period"],
        "window": opts["window"],
        "sampling": sampling(opts),
    }


def sampling(opts: dict[str, Any]) -> plan.Sampling | None:
    if opts["sample"] is None:
        if opts["sample_n"] is not None or opts["sample_ratio"] is not None:
            raise click.UsageError("--sample-n/--sample-ratio need --sample ordered|su")
        return None
    return plan.Sampling(
        method=opts["sample"],
        n=opts["sample_n"],
        ratio=opts["sample_ratio"],
        offset=opts["sample_offset"],
        window=opts["sample_window"],
    )


def given(names: list[str] | tuple[str, ...]) -> set[str]:
    """Which of these parameters the user set on the command line (not left at their default)."""
    ctx = click.get_current_context()
    return {n for n in names if ctx.get_parameter_source(n) not in (None, click.core.ParameterSource.DEFAULT)}
