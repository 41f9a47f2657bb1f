"""``harness workload inspect | prepare | split | from-sacct``: traces into job plans."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from harness.cli.from_sacct import from_sacct_command
from harness.cli.generate import generate
from harness.cli.options import PARTS, HarnessGroup, json_option, output_option
from harness.cli.output_options import force_option
from harness.cli.workload_options import selection_kwargs, selection_options, trace_kwargs, trace_options
from harness.model.atomic import OutputError, check_target
from harness.model.jsonio import nulls_for_non_finite, to_json
from harness.model.outputs import PARTS_FOLDER, PLAN, SWF_TRACE, check_output, check_output_folder
from harness.model.timescale import ShrinkError
from harness.platform import PlatformError, load_platform
from harness.workload import bbmodel, plan, stats, transforms
from harness.workload.cleaning import CleaningError
from harness.workload.nodes import NodeSizeError
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
    NodeSizeError,
    OutputError,
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


def _prepare_kwargs(opts: dict[str, Any]) -> dict[str, Any]:
    """Command-line options -> keyword arguments of ``plan.prepare``."""
    kwargs: dict[str, Any] = {"platform": load_platform(opts["platform_file"]), **trace_kwargs(opts)}
    if "first_n" in opts:  # every command but split's --period-less parts: a selection of the trace
        kwargs.update(selection_kwargs(opts))
    if "shuffle" in opts:  # prepare and split
        kwargs["shuffle"] = opts["shuffle"]
    return kwargs


def _report_skipped(manifest_input: dict[str, Any]) -> None:
    skipped = manifest_input["skipped"]
    if skipped:
        click.echo(f"skipped {skipped} malformed record(s):", err=True)
        for line in manifest_input["skipped_records"][:20]:
            click.echo(f"  {line}", err=True)
        if skipped > 20:
            click.echo(f"  ... and {skipped - 20} more", err=True)


_shuffle_option = click.option(
    "--shuffle", is_flag=True, help="Shuffle submission order, keeping the instants."
)


@click.group(
    cls=HarnessGroup,
    examples=[
        "harness workload inspect bundled",
        "harness workload prepare kth.swf -o k.parquet --period 1/16",
    ],
)
def workload() -> None:
    """Read, inspect, clean and prepare SWF workload traces.

    TRACE is an .swf or .swf.gz file, or 'bundled' for the KTH slice shipped with harness.
    """


workload.add_command(generate)
workload.add_command(from_sacct_command)

# -- inspect ----------------------------------------------------------------------------


@workload.command(
    renamed={"--seed": "--bb-seed"},
    examples=[
        "harness workload inspect bundled",
        "harness workload inspect kth.swf --lenient --json",
        "harness workload inspect kth.swf --sample ordered --sample-ratio 10",
    ],
)
@click.argument("trace")
@trace_options
@selection_options
@json_option
@_friendly
def inspect(trace: str, as_json: bool, **opts: Any) -> None:
    """Print what is in TRACE: jobs, span, load, sizes, runtimes, walltime accuracy, BB requests.

    With a selection (--period, --window, --first-n, --sample), of the jobs a plan would keep.
    """
    summary = inspect_summary(plan.resolve_input(trace), **_prepare_kwargs(opts))
    warning = summary["node_size"].get("warning")
    if warning:
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        click.echo(to_json(nulls_for_non_finite(summary)))  # strict JSON: an unknown load is null
        return
    _report_skipped({"skipped": summary["skipped"], "skipped_records": summary["skipped_records"]})
    click.echo(format_summary(summary))


def inspect_summary(trace_path: str | Path, **kwargs: Any) -> dict[str, Any]:
    """The numbers of ``inspect`` (cleaned for the platform, BB model applied)."""
    platform = kwargs["platform"]
    model = bbmodel.BBModel(kwargs["bb_model"], kwargs["bb_constant_mb"], kwargs["bb_column"])
    trace, jobs, report = plan.load_trace_table(
        trace_path, platform=platform, lenient=kwargs["lenient"], cleaning=kwargs["cleaning"],
        procs_per_node=kwargs["procs_per_node"], walltime_factor=kwargs["walltime_factor"],
    )  # fmt: skip
    jobs, bb_counts = bbmodel.apply_model(
        jobs, model, bb_count=platform.bb_count, capacity_mb=platform.bb_capacity_mb, seed=kwargs["seed"]
    )
    # The BB requests are drawn for the whole trace first, as prepare does, so a selection
    # shows the very requests its plan would hold.
    selection = {k: kwargs.get(k) for k in ("first_n", "window", "period", "sampling")}
    if any(v is not None for v in selection.values()):
        jobs = plan.select(jobs, **selection)
    raw = trace_to_table(trace, int(str((report.node_size or {}).get("procs_per_node", 1))))
    summary = stats.summarize(trace, raw, jobs, report, platform, bb_counts)
    summary["seed"] = kwargs["seed"]
    summary["bb_model"] = model.kind
    summary["selection"] = _selection_text(selection)
    return summary


def _selection_text(selection: dict[str, Any]) -> str:
    """``period 1/16, sample ordered (ratio 10, offset 0)``, or ``""`` for the whole trace."""
    parts = []
    if selection["period"] is not None:
        i, k = selection["period"]
        parts.append(f"period {i + 1}/{k}")
    if selection["window"] is not None:
        start, end = selection["window"]
        parts.append(f"window {start:g}:{'' if end is None else f'{end:g}'} s")
    if selection["first_n"] is not None:
        parts.append(f"first {selection['first_n']} jobs")
    sampling = selection["sampling"]
    if sampling is not None:
        shown = {k: v for k, v in sampling.as_dict().items() if k != "method" and v is not None}
        parts.append(f"sample {sampling.method} ({', '.join(f'{k} {v}' for k, v in shown.items())})")
    return ", ".join(parts)


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
        f"node size      {s['node_size']['procs_per_node']} processor(s) per node "
        f"({s['node_size']['source']}: {s['node_size']['reason']})",
        f"cleaning       for {s['platform']['name']} ({s['platform']['compute']} compute nodes)",
    ]
    lines += [f"  {name:<24} {s['rule_actions'][name]:<9} {n:>7,}" for name, n in s["rules"].items()]
    lines += [
        f"jobs           {jobs:,}" + (f" (selected: {s['selection']})" if s.get("selection") else ""),
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
    per = bb["per_node_mb"] or {"mean": 0, "median": 0, "min": 0, "max": 0}
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
    examples=["harness workload prepare kth.swf -o kth.parquet",
              "harness workload prepare bundled -o p.parquet --first-n 50"],
)  # fmt: skip
@click.argument("trace")
@output_option(
    "Plan file to write (.parquet; its manifest in the file's metadata).", required=True, dir_okay=False
)
@force_option
@trace_options
@selection_options
@_shuffle_option
@_friendly
def prepare(trace: str, output: Path, force: bool, **opts: Any) -> None:
    """Turn TRACE into a job plan: one parquet file, its manifest in the parquet metadata."""
    source = plan.resolve_input(trace)
    check_target(output, inputs=[source])
    check_output(output, PLAN, force=force)
    df, manifest = plan.prepare(source, **_prepare_kwargs(opts))
    _report_skipped(manifest["input"])
    plan.save_plan(df, manifest, output, inputs=(source,), force=force)
    click.echo(
        f"{output}: {len(df):,} jobs, span {manifest['span_s']:,.0f} s of the trace's time, "
        f"seed {manifest['seed']}"
    )


# -- split ------------------------------------------------------------------------------


@workload.command(
    renamed={"--seed": "--bb-seed", "--output-dir": "--output"},
    examples=["harness workload split kth.swf -k 16 -o parts/",
              "harness workload split kth.swf -o parts/ --format swf"],
)  # fmt: skip
@click.argument("trace")
@click.option("-k", "--parts", type=PARTS, default=16, show_default=True,
              help="Number of equal periods K (of duration, not of jobs).")  # fmt: skip
@output_option("Directory to write the parts to (created).", required=True, file_okay=False)
@click.option("--format", "fmt", type=click.Choice(["plan", "swf"]), default="plan", show_default=True,
              help="plan: prepared parquet parts; swf: the trace's own records, uncleaned.")  # fmt: skip
@force_option
@trace_options
@selection_options
@_shuffle_option
@_friendly
def split(trace: str, parts: int, output: Path, fmt: str, force: bool, **opts: Any) -> None:
    """Split TRACE into K consecutive periods of equal duration (Kopański: 16 x 20.8 days)."""
    out = check_output_folder(output, PARTS_FOLDER, force=force)
    source = plan.resolve_input(trace)
    stem = Path(source).name.removesuffix(".gz").removesuffix(".swf")
    for i in range(parts):  # every part that would replace a file of another kind, before any is written
        suffix, kind = (".swf", SWF_TRACE) if fmt == "swf" else (".parquet", PLAN)
        check_output(out / _part_name(stem, i, parts, suffix), kind, force=force)
    if fmt == "swf":  # the folder is made by the first part written: a refused K leaves none
        _split_swf(source, parts, out, stem, opts["lenient"])
        return
    if opts["period"] is not None:
        raise click.UsageError("split makes the periods: --period does not apply")
    kwargs = _prepare_kwargs(opts)
    kwargs.pop("period")
    empty = []
    for i, part in enumerate(plan.prepare_split(source, parts, **kwargs)):
        target = out / _part_name(stem, i, parts, ".parquet")
        if part is None:
            empty.append(i + 1)
            continue
        plan.save_plan(part[0], part[1], target, inputs=(source,), force=force)
        click.echo(f"{target}: {len(part[0]):,} jobs")
    _say_empty(empty, parts)


def _part_name(stem: str, index: int, parts: int, suffix: str) -> str:
    return f"{stem}.part{index:02d}of{parts:02d}{suffix}"


def _say_empty(empty: list[int], k: int) -> None:
    """One line for the empty periods, however many (K far above the job count makes many)."""
    if empty:
        listed = ", ".join(map(str, empty[:10])) + (", ..." if len(empty) > 10 else "")
        click.echo(f"{len(empty):,} of {k:,} periods are empty, not written: {listed}")


def _split_swf(source: Path, k: int, out: Path, stem: str, lenient: bool) -> None:
    trace: SwfTrace = read_swf(source, lenient=lenient)
    table = trace_to_table(trace)
    idx = transforms.period_index(table, transforms.check_period_count(table, k))
    if (idx < 0).any():
        click.echo(f"{int((idx < 0).sum()):,} record(s) of unknown submit time are in no period", err=True)
    empty = []
    for i in range(k):
        rows = trace.records[idx == i]
        target = out / _part_name(stem, i, k, ".swf")
        if not len(rows):
            empty.append(i + 1)
            continue
        note = f"; Note: part {i + 1} of {k} equal periods of the trace above, cut by harness workload split"
        write_swf(target, rows, [*trace.header_lines, note], trace.column_widths)
        click.echo(f"{target}: {len(rows):,} records")
    _say_empty(empty, k)
