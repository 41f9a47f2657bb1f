"""The options of ``harness simulate`` that choose the job model and the twin of a live run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from harness.cli.options import NON_NEGATIVE_SECONDS
from harness.model.io_models import ALLOC_ONLY, MODELS
from harness.model.staging_names import STAGE_INS, STAGINGS


def twin_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--model``, ``--staging``, ``--stage-in``, ``--tick``, ``--launch-delay``."""
    for option in reversed(_OPTIONS):
        command = option(command)
    return command


_OPTIONS = (
    click.option(
        "--model",
        type=click.Choice(MODELS),
        default=ALLOC_ONLY,
        show_default=True,
        help="Job model: resources held for the trace runtime, or I/O phases sharing bandwidth.",
    ),
    click.option(
        "--staging",
        type=click.Choice(list(STAGINGS)),
        default="inside",
        show_default=True,
        help="io-aware: stage inside the allocation (the thesis), or outside it (Slurm's burst-buffer life "
        "cycle: BB from stage-in start, nodes from run start to run end); pool: outside, striped over every "
        "BB node (Slurm's burst_buffer/lua pool, as a live --model io-aware run).",
    ),
    click.option(
        "--stage-in",
        type=click.Choice(list(STAGE_INS)),
        default="policy",
        show_default=True,
        help="Off the allocation: who begins a stage-in. policy: when it starts the job; slurm: Slurm's own "
        "scheduler (burst_buffer/lua), as soon as the pool has room, nodes free or not, and staged-in jobs "
        "take nodes as sched/backfill gives them: the policy then only names the run (the twin of a live "
        "run under Slurm's own scheduler; docs/io-live.md).",
    ),
    click.option(
        "--tick",
        type=NON_NEGATIVE_SECONDS,
        default=0.0,
        show_default=True,
        help="Tick-aware twin: the policy runs only every TICK plan seconds (1: Slurm's one-second pass).",
    ),
    click.option(
        "--launch-delay",
        type=NON_NEGATIVE_SECONDS,
        default=0.0,
        show_default=True,
        help="Tick-aware twin: plan seconds from a start decision to the job's start (alloc-only).",
    ),
)
