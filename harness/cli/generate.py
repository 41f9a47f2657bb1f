"""``harness workload generate feitelson96 | herbein``: synthetic plans from the sources' models."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pandas as pd

from harness.cli.options import (
    JOB_COUNT,
    MEGABYTES,
    NODE_COUNT,
    POSITIVE_NUMBER,
    POSITIVE_SECONDS,
    REPEAT,
    SEED,
    HarnessGroup,
)
from harness.cli.output_options import force_option
from harness.model.atomic import OutputError, atomic_write_text
from harness.model.outputs import JSON_FILE, PLAN, check_output
from harness.workload import plan
from harness.workload.feitelson96 import Feitelson96
from harness.workload.herbein_model import HerbeinModelError
from harness.workload.swf import SwfError
from harness.workload.synthetic import NODE_MEMORY_MB, feitelson96_plan, herbein_plan


@click.group(
    cls=HarnessGroup,
    examples=["harness workload generate feitelson96 -o lackner.parquet --seed 1",
              "harness workload generate herbein kth.swf -o herbein.parquet"],
)  # fmt: skip
def generate() -> None:
    """Generate a job plan from a workload model of the source documents."""


def _written(
    output: str, df: pd.DataFrame, manifest: dict, force: bool, inputs: tuple[Path, ...] = ()
) -> None:
    try:
        plan.save_plan(df, manifest, output, inputs=inputs, force=force)
    except OutputError as exc:
        raise click.ClickException(str(exc)) from None
    span, seed = manifest["span_s"], manifest["seed"]
    click.echo(f"{output}: {len(df):,} jobs, span {span:,.0f} s, seed {seed}")


@generate.command(
    "feitelson96",
    examples=["harness workload generate feitelson96 -o lackner-s1.parquet --seed 1 --jobs 500"],
)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Plan file (.parquet).")
@click.option(
    "--seed",
    type=SEED,
    default=1,
    show_default=True,
    help="Seed of the workload model (one workload per seed).",
)
@click.option(
    "--jobs", type=JOB_COUNT, default=500, show_default=True, help="Number of jobs (Lackner Table I: 500)."
)
@click.option(
    "--nodes",
    "machine_nodes",
    type=NODE_COUNT,
    default=128,
    show_default=True,
    help="Machine size, in nodes.",
)
@click.option(
    "--max-repetitions",
    type=REPEAT,
    default=2,
    show_default=True,
    help="Repeated runs of one job at most.",
)
@click.option(
    "--arrival-factor",
    type=POSITIVE_SECONDS,
    default=500.0,
    show_default=True,
    help="Mean gap between new jobs, in seconds.",
)
@click.option(
    "--shortest",
    type=POSITIVE_SECONDS,
    default=1_800.0,
    show_default=True,
    help="Shortest runtime, in seconds.",
)
@click.option(
    "--longest",
    type=POSITIVE_SECONDS,
    default=86_400.0,
    show_default=True,
    help="Longest runtime, in seconds.",
)
@click.option(
    "--bb-per-node-mb",
    type=MEGABYTES,
    default=NODE_MEMORY_MB,
    show_default=True,
    help="Burst-buffer request per node, in MB (Lackner: a checkpoint of the node's 16 GB).",
)
@click.option("--walltime-factor", type=POSITIVE_NUMBER, default=1.0, show_default=True,
              help="walltime = runtime x factor (Lackner: accurate estimates).")  # fmt: skip
@force_option
def feitelson96_command(
    output: str, seed: int, walltime_factor: float, bb_per_node_mb: int, force: bool, **kw: float
) -> None:
    """Lackner's workload: the Feitelson 1996 model with Table I's parameters."""
    check_output(output, PLAN, force=force)  # before minutes of generating
    try:
        model = Feitelson96(
            jobs=int(kw["jobs"]), machine_nodes=int(kw["machine_nodes"]),
            max_repetitions=int(kw["max_repetitions"]), arrival_factor_s=kw["arrival_factor"],
            shortest_s=kw["shortest"], longest_s=kw["longest"],
        )  # fmt: skip
        df, manifest = feitelson96_plan(model, seed, bb_per_node_mb, walltime_factor)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    _written(output, df, manifest, force)


@generate.command(
    "herbein",
    examples=["harness workload generate herbein kth.swf -o h.parquet --nodes 3888 --model-out model.json"],
)
@click.argument("trace")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Plan file (.parquet).")
@click.option("--seed", type=SEED, default=1, show_default=True, help="Seed of the workload model.")
@click.option(
    "--jobs", type=JOB_COUNT, default=2_500, show_default=True, help="Number of jobs (Herbein: 2,500)."
)
@click.option(
    "--nodes",
    "machine_nodes",
    type=NODE_COUNT,
    default=3_888,
    show_default=True,
    help="Machine size, in nodes (Herbein's CTS-1: 3,888).",
)
@click.option(
    "--size-scale",
    type=POSITIVE_NUMBER,
    default=1.0,
    show_default=True,
    help="Multiply the sampled sizes (extrapolation to a larger machine).",
)
@click.option(
    "--procs-per-node",
    type=NODE_COUNT,
    default=None,
    help="The trace's processors per node (sizes are in nodes) [default: MaxProcs / MaxNodes of "
    "the header, else 1].",
)
@click.option("--model-out", type=click.Path(dir_okay=False), default=None,
              help="Also write the fitted model's summary to this JSON file (default: none).")  # fmt: skip
@force_option
def herbein_command(trace: str, output: str, seed: int, jobs: int, machine_nodes: int, size_scale: float,
                    procs_per_node: int | None, model_out: str | None, force: bool) -> None:  # fmt: skip
    """Herbein's model fitted from TRACE (user arrivals, four Poisson ranges, size bins, limit/elapsed)."""
    check_output(output, PLAN, force=force)
    if model_out:
        check_output(model_out, JSON_FILE, force=force)
    try:
        df, manifest, model = herbein_plan(
            plan.resolve_input(trace), jobs, seed, machine_nodes, size_scale, procs_per_node
        )
    except (HerbeinModelError, SwfError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    source = plan.resolve_input(trace)
    if model_out:
        try:
            atomic_write_text(
                model_out, json.dumps(model.summary(), indent=2) + "\n", inputs=[source, output]
            )
        except OutputError as exc:
            raise click.ClickException(str(exc)) from None
    _written(output, df, manifest, force, inputs=(source,))
