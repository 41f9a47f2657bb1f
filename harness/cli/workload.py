"""``harness workload inspect | prepare | split``: SWF traces into job plans."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from harness.cli.generate import generate
from harness.cli.options import (
    HarnessGroup,
    bb_seed_option,
    first_n_option,
    json_option,
    output_option,
    period_option,
    platform_option,
    shrink_option,
)
from harness.model.jsonio import to_json
from harness.model.timescale import ShrinkError
from harness.platform import PlatformError, load_platform
from harness.workload import bbmodel, plan, stats, transforms
from harness.workload.cleaning import ACTIONS, CleaningError
from harness.workload.schema import SchemaError
from harness.workload.swf import SwfError, SwfTrace, read_swf, write_swf
from harness.workload.table import trace_to_table

_USER_ERRORS = (
    SwfError,
    plan.PlanError,
    transforms.TransformError,
    CleaningError,
    bbmodel.BBModelError,
    PlatformError,
    SchemaError,
    ShrinkError,
)


def _friendly(func: Callable[..., None]) -> Callable[..., None]:
    """Bad input is the user's to fix: one clear line, no traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            func(*args, **kwargs)
        except _USER_ERRORS as exc:
            raise click.ClickException(str(exc)) from None

    return wrapper


def _common_options(func: Callable[..., None]) -> Callable[..., None]:
    """Reading, cleaning and BB-model options shared by every command."""
    options = [
        platform_option,
        click.option("--lenient", is_flag=True, help="Skip malformed records instead of failing."),
        bb_seed_option(plan.DEFAULT_SEED),
        click.option(
            "--bb-model", type=click.Choice(bbmodel.MODELS), default="lognormal", show_default=True,
            help="Burst-buffer request source: Kopański's log-normal, a constant, or a trace column.",
        ),
        click.option("--bb-constant", type=int, default=None,
                     help="MB per node for --bb-model constant (required with it)."),
        click.option("--bb-column", default=None,
                     help="Job-table column for --bb-model column (e.g. mem_req_kb; required with it)."),
        click.option("--zero-runtime", type=click.Choice(ACTIONS["zero_runtime"]), default="drop",
                     show_default=True, help="Jobs with runtime 0."),
        click.option("--unknown-walltime", type=click.Choice(ACTIONS["unknown_walltime"]), default="drop",
                     show_default=True, help="Jobs without requested time ('runtime': use the runtime)."),
        click.option("--runtime-above-walltime", type=click.Choice(ACTIONS["runtime_above_walltime"]),
                     default="clip", show_default=True, help="Jobs that ran past their walltime."),
    ]  # fmt: skip
    for option in reversed(options):
        func = option(func)
    return func


def _transform_options(func: Callable[..., None]) -> Callable[..., None]:
    """Selection, sampling, shuffling and shrinking (prepare and split)."""
    options = [
        shrink_option(0.0, "A stored plan is usually left unshrunk: `harness run --shrink` shrinks it."),
        first_n_option,
        click.option("--start", type=float, default=None,
                     help="Window start, seconds after the first submission (default: the first)."),
        click.option("--end", type=float, default=None,
                     help="Window end, seconds after the first submission (default: the last)."),
        click.option("--sample", type=click.Choice(plan.SAMPLING_METHODS), default=None,
                     help="Barberato sampling: 'ordered' (ratio, offset) or 'su' (service-unit balanced); "
                          "default: none."),
        click.option("--sample-n", type=int, default=None,
                     help="Jobs to keep when sampling (or --sample-ratio)."),
        click.option("--sample-ratio", type=float, default=None,
                     help="Sampling ratio s_p, a fraction of the jobs (instead of --sample-n)."),
        click.option("--sample-offset", type=int, default=0, show_default=True, help="Offset o_f (ordered)."),
        click.option("--sample-window", type=float, default=60.0, show_default=True,
                     help="Requested-time window, s (su)."),
        click.option("--shuffle", is_flag=True, help="Shuffle submission order, keeping the instants."),
    ]  # fmt: skip
    for option in reversed(options):
        func = option(func)
    return func


def _prepare_kwargs(opts: dict[str, Any]) -> dict[str, Any]:
    """Command-line options -> keyword arguments of ``plan.prepare``."""
    kwargs: dict[str, Any] = {
        "platform": load_platform(opts["platform_file"]),
        "seed": opts["bb_seed"],
        "bb_model": opts["bb_model"],
        "bb_constant_mb": opts["bb_constant"],
        "bb_column": opts["bb_column"],
        "lenient": opts["lenient"],
        "cleaning": {
            "zero_runtime": opts["zero_runtime"],
            "unknown_walltime": opts["unknown_walltime"],
            "runtime_above_walltime": opts["runtime_above_walltime"],
        },
    }
    if "shrink" in opts:
        start, end = opts["start"], opts["end"]
        kwargs.update(
            shrink=opts["shrink"],
            first_n=opts["first_n"],
            window=(start or 0.0, end) if start is not None or end is not None else None,
            shuffle=opts["shuffle"],
            sampling=_sampling(opts),
        )
    return kwargs


def _sampling(opts: dict[str, Any]) -> plan.Sampling | None:
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


def _report_skipped(manifest_input: dict[str, Any]) -> None:
    skipped = manifest_input["skipped"]
    if skipped:
        click.echo(f"skipped {skipped} malformed record(s):", err=True)
        for line in manifest_input["skipped_records"][:20]:
            click.echo(f"  {line}", err=True)
        if skipped > 20:
            click.echo(f"  ... and {skipped - 20} more", err=True)


@click.group(
    cls=HarnessGroup,
    examples=[
        "harness workload inspect bundled",
        "harness workload prepare kth.swf -o kth.parquet --period 1/16",
    ],
)
def workload() -> None:
    """Read, inspect, clean and prepare SWF workload traces.

    TRACE is an .swf or .swf.gz file, or 'bundled' for the KTH slice shipped with harness.
    """


workload.add_command(generate)

# -- inspect ----------------------------------------------------------------------------


@workload.command(
    renamed={"--seed": "--bb-seed"},
    examples=["harness workload inspect bundled", "harness workload inspect kth.swf --lenient --json"],
)
@click.argument("trace")
@_common_options
@json_option
@_friendly
def inspect(trace: str, as_json: bool, **opts: Any) -> None:
    """Print what is in TRACE: jobs, span, load, sizes, runtimes, walltime accuracy, BB requests."""
    summary = inspect_summary(plan.resolve_input(trace), **_prepare_kwargs(opts))
    if as_json:
        click.echo(to_json(summary))
        return
    _report_skipped({"skipped": summary["skipped"], "skipped_records": summary["skipped_records"]})
    click.echo(format_summary(summary))


def inspect_summary(trace_path: str | Path, **kwargs: Any) -> dict[str, Any]:
    """The numbers of ``inspect`` (cleaned for the platform, BB model applied)."""
    platform = kwargs["platform"]
    model = bbmodel.BBModel(kwargs["bb_model"], kwargs["bb_constant_mb"], kwargs["bb_column"])
    trace, jobs, report = plan.load_trace_table(
        trace_path, platform=platform, lenient=kwargs["lenient"], cleaning=kwargs["cleaning"]
    )
    jobs, bb_counts = bbmodel.apply_model(
        jobs, model, bb_count=platform.bb_count, capacity_mb=platform.bb_capacity_mb, seed=kwargs["seed"]
    )
    summary = stats.summarize(trace, trace_to_table(trace), jobs, report, platform, bb_counts)
    summary["seed"] = kwargs["seed"]
    summary["bb_model"] = model.kind
    return summary


def _pct(count: int, total: int) -> str:
    return f"{count:>7,} {100 * count / total:5.1f}%" if total else f"{count:>7,}"


def _table(title: str, counts: dict[str, int], total: int) -> list[str]:
    return [title] + [f"  {label:>12}  {_pct(n, total)}" for label, n in counts.items()]


def format_summary(s: dict[str, Any]) -> str:
    """The text ``inspect`` prints."""
    h = s["header"]
    jobs = s["jobs"]
    lines = [
        f"trace          {s['path']}",
        f"sha256         {s['sha256']}",
        f"header         {h.get('Computer')}, {h.get('Installation')}; MaxNodes {h.get('MaxNodes')}, "
        f"MaxProcs {h.get('MaxProcs')}, UnixStartTime {h.get('UnixStartTime')}",
        f"records        {s['records']:,} read, {s['skipped']:,} skipped as malformed",
        f"cleaning       for {s['platform']['name']} ({s['platform']['compute']} compute nodes)",
    ]
    lines += [f"  {name:<24} {s['rule_actions'][name]:<7} {n:>7,}" for name, n in s["rules"].items()]
    lines += [
        f"jobs           {jobs:,}",
        f"span           {s['span_s']:,.0f} s ({s['span_s'] / 86400:.1f} days) from first to last submission",
        f"offered load   {s['offered_load']:.3f} (node-seconds asked / node-seconds of the span)",
        f"timeouts       {s['timeouts']:,} jobs ran past their walltime in the trace",
    ]
    lines += _table("size (nodes)", s["size_distribution"], jobs)
    lines += _table("runtime", s["runtime_distribution"], jobs)
    accuracy_title = "walltime accuracy (runtime / walltime, Barberato Fig. 4.3)"
    lines += _table(accuracy_title, s["walltime_accuracy"], jobs)
    lines += _bb_lines(s["bb"], s["bb_model"], s["seed"], jobs)
    return "\n".join(lines)


def _bb_lines(bb: dict[str, Any], model: str, seed: int, jobs: int) -> list[str]:
    per = bb["per_node_mb"]
    load = bb["offered_load"]
    return [
        f"burst buffer   model {model}, seed {seed}",
        f"  per node MB  mean {per['mean']:,.0f}, median {per['median']:,.0f}, "
        f"min {per['min']:,.0f}, max {per['max']:,.0f}",
        f"  short jobs (10 MB) {_pct(bb['short'], jobs)}; clipped low {bb['clipped_low']:,}, "
        f"high {bb['clipped_high']:,}; reduced to fit {bb['reduced_to_fit']:,}",
        f"  offered BB load {load:.3f}" if not math.isnan(load) else "  offered BB load n/a",
    ]


# -- prepare ----------------------------------------------------------------------------


@workload.command(
    renamed={"--seed": "--bb-seed"},
    examples=[
        "harness workload prepare kth.swf -o kth.parquet",
        "harness workload prepare bundled -o p.parquet --first-n 50",
    ],
)
@click.argument("trace")
@output_option(
    "Plan file to write (.parquet; a manifest is stored beside it).", required=True, dir_okay=False
)
@period_option
@_common_options
@_transform_options
@_friendly
def prepare(trace: str, output: Path, period: tuple[int, int] | None, **opts: Any) -> None:
    """Turn TRACE into a job plan (parquet) with a sidecar manifest."""
    df, manifest = plan.prepare(plan.resolve_input(trace), period=period, **_prepare_kwargs(opts))
    _report_skipped(manifest["input"])
    side = plan.save_plan(df, manifest, output)
    click.echo(
        f"{output}: {len(df):,} jobs, span {manifest['span_s']:,.0f} s (shrink {manifest['shrink']}, "
        f"speed-up {manifest['speedup']:g}), seed {manifest['seed']}; manifest {side}"
    )


# -- split ------------------------------------------------------------------------------


@workload.command(
    renamed={"--seed": "--bb-seed", "--output-dir": "--output"},
    examples=[
        "harness workload split kth.swf -k 16 -o parts/",
        "harness workload split kth.swf -o parts/ --format swf",
    ],
)
@click.argument("trace")
@click.option(
    "-k",
    "--parts",
    type=click.IntRange(min=1),
    default=16,
    show_default=True,
    help="Number of equal periods (of duration, not of jobs).",
)
@output_option("Directory to write the parts to (created).", required=True, file_okay=False)
@click.option("--format", "fmt", type=click.Choice(["plan", "swf"]), default="plan", show_default=True,
              help="plan: prepared parquet parts; swf: the trace's own records, uncleaned.")  # fmt: skip
@_common_options
@_transform_options
@_friendly
def split(trace: str, parts: int, output: Path, fmt: str, **opts: Any) -> None:
    """Split TRACE into K consecutive periods of equal duration (Kopański: 16 x 20.8 days)."""
    out = output
    out.mkdir(parents=True, exist_ok=True)
    source = plan.resolve_input(trace)
    stem = Path(source).name.removesuffix(".gz").removesuffix(".swf")
    if fmt == "swf":
        _split_swf(source, parts, out, stem, opts["lenient"])
        return
    for i, part in enumerate(plan.prepare_split(source, parts, **_prepare_kwargs(opts))):
        target = out / f"{stem}.part{i:02d}of{parts:02d}.parquet"
        if part is None:
            click.echo(f"{target.name}: empty period, not written")
            continue
        plan.save_plan(part[0], part[1], target)
        click.echo(f"{target}: {len(part[0]):,} jobs")


def _split_swf(source: Path, k: int, out: Path, stem: str, lenient: bool) -> None:
    trace: SwfTrace = read_swf(source, lenient=lenient)
    table = trace_to_table(trace)
    idx = transforms.period_index(table, k)
    for i in range(k):
        rows = trace.records[idx == i]
        target = out / f"{stem}.part{i:02d}of{k:02d}.swf"
        if not len(rows):
            click.echo(f"{target.name}: empty period, not written")
            continue
        note = f"; Note: part {i + 1} of {k} equal periods of the trace above, cut by harness workload split"
        write_swf(target, rows, [*trace.header_lines, note], trace.column_widths)
        click.echo(f"{target}: {len(rows):,} records")
