"""``harness simulate``: policies on a plan or trace in the discrete-event simulator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from harness.analysis.formatting import format_terse
from harness.cli.options import (
    TAU,
    HarnessCommand,
    json_option,
    output_option,
    policy_option,
    policy_param_option,
    policy_seed_option,
    priority_options,
    time_limit_option,
)
from harness.cli.output_options import figure_format_option, force_option
from harness.cli.simulate_options import twin_options
from harness.cli.simulate_repeat import (
    check_repeat,
    format_repetitions,
    pooled_row,
    repeat_options,
    shuffle_seeds,
)
from harness.cli.workload_options import (
    given,
    selection_kwargs,
    selection_options,
    trace_kwargs,
    trace_options,
)
from harness.model.io_models import ALLOC_ONLY, IO_AWARE
from harness.model.metric_names import DEFAULT_TAU_S, HEADLINE_METRICS, IO_METRICS, metric_spec
from harness.policies.registry import UnknownPolicyError, parse_policy_list

if TYPE_CHECKING:
    import pandas as pd

# Columns of the plain-text comparison table (and under --model io-aware, the I/O ones).
TEXT_COLUMNS: tuple[str, ...] = ("jobs", *HEADLINE_METRICS)


def _load_workload(path: str, platform: Any, opts: dict[str, Any]) -> list[tuple[Any, dict[str, Any]]]:
    """A plan as stored, or a trace prepared with the workload options (shared with prepare):
    one (plan, manifest), or one per submission order (--shuffle, --repeat)."""
    from harness.workload.plan import is_plan_file, load_plan_or_trace, prepare_shuffled, resolve_input

    source = resolve_input(path)
    if source.exists() and is_plan_file(source):  # a plan keeps its own; the options set are ignored
        kwargs = {k: opts[k] for k in given(list(opts))}
        return [load_plan_or_trace(source, **kwargs)]
    kwargs = {**trace_kwargs(opts), **selection_kwargs(opts), "platform": platform}
    seeds = shuffle_seeds(opts["shuffle"], opts["repeat"], opts["bb_seed"])
    return prepare_shuffled(source, seeds, **kwargs) if seeds else [load_plan_or_trace(source, **kwargs)]


def _text_table(results: dict[str, dict[str, Any]], io: bool = False) -> str:
    columns = TEXT_COLUMNS + (IO_METRICS if io else ())
    headers = ["policy", *(metric_spec(key).short or key for key in columns)]
    rows = [[name, *(format_terse(key, summ.get(key)) for key in columns)] for name, summ in results.items()]
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    fmt_row = "  ".join([f"{{:<{widths[0]}}}", *(f"{{:>{w}}}" for w in widths[1:])])
    lines = [fmt_row.format(*headers)] + [fmt_row.format(*r) for r in rows]
    return "\n".join(lines)


RESULT_SUFFIXES = (".parquet", ".csv")  # -o with one of these: a per-job file; otherwise a run directory


def _is_run_dir(output: Path | None) -> bool:
    return output is not None and output.suffix.lower() not in RESULT_SUFFIXES


def _jobs_target(output: Path, policy: str, several: bool) -> Path:
    if _is_run_dir(output):
        return output / policy if several else output
    return output.with_name(f"{output.stem}.{policy}{output.suffix}") if several else output


def _write_jobs(jobs: pd.DataFrame, output: Path, policy: str, several: bool) -> Path:
    from harness.model.atomic import OutputError, atomic_write_csv, atomic_write_parquet

    target = _jobs_target(output, policy, several)
    write = atomic_write_csv if target.suffix == ".csv" else atomic_write_parquet
    try:
        return write(target, jobs)
    except OutputError as exc:
        raise click.ClickException(str(exc)) from None


def _check_outputs(output: Path | None, names: list[str], workload: str, force: bool) -> None:
    """Refuse an unusable --output before simulating (a directory, a device, the input, a
    file of another kind, a run directory named like a file)."""
    from harness.emulation.run.simulated import RunDirectoryError, check_run_dir
    from harness.model.atomic import OutputError, check_target
    from harness.model.outputs import RESULTS_TABLE, check_output, check_run_dir_name
    from harness.workload.plan import resolve_input

    if output is None:
        return
    try:
        for name in names:
            target = _jobs_target(output, name, len(names) > 1)
            if _is_run_dir(output):
                check_run_dir_name(output)
                check_run_dir(target)
            else:
                check_target(target, inputs=[resolve_input(workload)])
                check_output(target, RESULTS_TABLE, force=force)
    except (OutputError, RunDirectoryError) as exc:
        raise click.ClickException(str(exc)) from None


def _write_bandwidth(result: Any, platform: Any, jobs_path: Path, formats: tuple[str, ...]) -> Path:
    """Beside the per-job results of an io-aware run: the bandwidth timeline and its plot."""
    from harness.analysis.io_plots import plot_bandwidth
    from harness.model.atomic import atomic_write_csv

    assert result.bandwidth is not None
    atomic_write_csv(jobs_path.with_suffix(".bandwidth.csv"), result.bandwidth)
    per_s = 1e6  # MB/s -> bytes per second
    capacity = {
        "pfs": platform.io.pfs_capacity_mbps(platform.compute_count) * per_s,
        "bb": platform.io.bb_node_mbps * platform.bb_count * per_s,
    }
    out = jobs_path.with_suffix(".bandwidth.png")
    return plot_bandwidth(
        result.bandwidth, capacity, out, title=f"Bandwidth: {result.policy}", formats=formats
    )


@click.command(
    "simulate",
    cls=HarnessCommand,
    renamed={"--seed": "--bb-seed"},
    examples=[
        "harness simulate -p fcfs,backfill-1 bundled",
        "harness simulate --model io-aware -p backfill-1 --period 1/16 kth.swf --json",
    ],
)
@click.argument("workload")
@policy_option("backfill-1", "Policy name, or several separated by commas (see `harness policies`).")
@json_option
@trace_options
@selection_options
@policy_seed_option
@time_limit_option(None, "results then depend on the machine's speed (default: none).")
@click.option("--tau", type=TAU, default=DEFAULT_TAU_S, show_default=True,
              help="Bounded-slowdown threshold, in seconds of original time.")  # fmt: skip
@click.option("--ci", is_flag=True, help="Add bootstrap 95% intervals of mean wait and mean bsld.")
@output_option(
    "Per-job results (.parquet or .csv; one file per policy if several), or a new run directory "
    "(any other name; DIR/POLICY if several) with results, metrics, manifest, report and plots, "
    "as `harness run` writes: `harness compare` then sets it beside emulated runs."
)
@force_option
@click.option("--check/--no-check", default=True, show_default=True, help="Verify the schedule invariants.")
@policy_param_option
@twin_options
@priority_options
@repeat_options
@figure_format_option()
def simulate_command(
    workload: str,
    policy: str,
    as_json: bool,
    platform_file: str,
    policy_seed: int,
    time_limit: float | None,
    tau: float,
    ci: bool,
    output: Path | None,
    check: bool,
    model: str,
    staging: str,
    stage_in: str,
    tick: float,
    launch_delay: float,
    figure_formats: tuple[str, ...],
    **opts: Any,
) -> None:
    """Run policies on WORKLOAD (a prepared plan or an SWF trace) in the simulator.

    Times and metrics are in the trace's own seconds.
    """  # fmt: skip
    from harness.emulation.run.simulated import SimulatedRun, write_simulated_run

    tiers = (opts.pop("priority"), opts.pop("preempt"))
    check_repeat(opts["shuffle"], opts["repeat"], output, tiers[0])
    params = _policy_params(policy, opts.pop("policy_param"))
    names, platform, plans = _inputs(workload, policy, platform_file, output, opts)
    plan, manifest = plans[0]
    io_seed = int(manifest.get("seed", opts["bb_seed"]))
    if tiers != ("none", "none"):
        _check_priority_twin(tiers[0], names, model, tick, launch_delay)
        row = _simulate_priorities(plan, platform, *tiers, io_seed, tau, output, figure_formats)
        return click.echo(json.dumps({names[0]: row}, indent=2) if as_json else _text_table({names[0]: row}))
    results: dict[str, dict[str, Any]] = {}
    settings = {"model": model, "staging": staging, "stage_in": stage_in, "tick": tick, "tau": tau,
                "launch_delay": launch_delay, "io_seed": io_seed, "policy_seed": policy_seed,
                "time_limit_s": time_limit, "policy_params": params}  # fmt: skip
    common = {"platform": platform, "twin": (model, tick, launch_delay, staging, stage_in), "params": params,
              "io_seed": io_seed, "policy_seed": policy_seed, "time_limit": time_limit, "tau": tau, "ci": ci,
              "check": check, "several": len(names) > 1, "formats": figure_formats}  # fmt: skip
    for name in names:
        jobs_file = None if _is_run_dir(output) else output
        results[name], result = _simulate_one(name, plan, output=jobs_file, **common)
        if len(plans) > 1:  # the other submission orders (--repeat): their metrics, no files
            rows = [results[name], *(_simulate_one(name, p, output=None, **common)[0] for p, _ in plans[1:])]
            results[name] = pooled_row(rows)
        if output is not None and _is_run_dir(output):
            run = SimulatedRun(name, plan, manifest, result.jobs, results[name], platform, settings)
            target = write_simulated_run(_jobs_target(output, name, len(names) > 1), run, figure_formats)
            click.echo(f"{name}: run directory {target}", err=True)
    if as_json:
        return click.echo(json.dumps(results, indent=2))
    click.echo(_text_table(results, io=model == IO_AWARE))
    if len(plans) > 1:
        click.echo(format_repetitions(results, TEXT_COLUMNS + (IO_METRICS if model == IO_AWARE else ())))


def _policy_params(policy: str, pairs: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """``--policy-param`` shared out among the policies named (a key goes to each policy that has
    it); a key none has or a value out of range is a usage error."""
    from harness.policies.registry import params_for
    from harness.policies.tunables import PolicyParamError, parse_assignments

    try:
        return params_for(parse_policy_list(policy), parse_assignments(pairs))
    except UnknownPolicyError:
        return {}  # named by _inputs
    except PolicyParamError as exc:
        raise click.BadParameter(str(exc), param_hint="'--policy-param'") from None


def _no_slurm_policy(policy: str) -> None:
    """A Slurm-native name (``harness policies`` lists them) runs on Slurm, not here: say so, and
    name the simulator's twin, instead of "unknown policy"."""
    from harness.model.checks import InputError
    from harness.policies.registry import get_policy
    from harness.slurm.native import PREFIX, is_native

    for name in (n.strip() for n in policy.split(",")):
        if is_native(name):
            twin = name.removeprefix(PREFIX)
            try:
                get_policy(twin)
                hint = f"; its twin in the simulator is '{twin}'"
            except UnknownPolicyError:
                hint = ""
            raise InputError(
                f"'{name}' is Slurm's own scheduler: it runs on Slurm (harness run -p {name}), "
                f"not in the simulator{hint}",
                where="-p/--policy",
            )


def _inputs(
    workload: str, policy: str, platform_file: str, output: Path | None, opts: dict
) -> tuple[list[str], Any, list[tuple[Any, dict]]]:
    """(policy names, platform, [(plan, manifest), ...]) or a ClickException naming what is wrong."""
    from harness.platform import PlatformError, load_platform

    try:
        _no_slurm_policy(policy)
        names = parse_policy_list(policy)
        platform = load_platform(platform_file)
    except (UnknownPolicyError, PlatformError) as exc:
        raise click.ClickException(str(exc)) from None
    _check_outputs(output, names, workload, opts.pop("force"))
    try:
        plans = _load_workload(workload, platform, opts)
    except (OSError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    return names, platform, plans


def _simulate_one(
    name: str,
    plan: Any,
    platform: Any,
    twin: tuple[str, float, float, str, str],
    params: dict[str, dict[str, Any]],
    io_seed: int,
    policy_seed: int,
    time_limit: float | None,
    tau: float,
    ci: bool,
    check: bool,
    output: Path | None,
    several: bool,
    formats: tuple[str, ...],
) -> tuple[dict[str, Any], Any]:
    """Simulate one policy: its summary row (and per-job file and plot when asked) and its result."""
    from harness.analysis.io_metrics import io_summary
    from harness.analysis.metrics import summary
    from harness.policies.registry import get_policy
    from harness.sim.checks import check_schedule
    from harness.sim.engine import simulate

    model, tick, delay, staging, stage_in = twin  # the job model, the tick-aware twin's, the staging's
    scheduler = get_policy(name, seed=policy_seed, time_limit_s=time_limit, params=params.get(name))
    try:
        result = simulate(plan, scheduler, platform, model=model, io_seed=io_seed,
                          tick=tick, launch_delay=delay, staging=staging, stage_in=stage_in)  # fmt: skip
    except ValueError as exc:
        raise click.ClickException(f"{name}: {exc}") from None
    if check:
        problems = check_schedule(result.jobs, platform, pool=stage_in == "slurm")
        if problems:
            raise click.ClickException(f"{name}: invalid schedule: {'; '.join(problems[:3])}")
    row = summary(result.jobs, platform, tau=tau, ci=ci)
    row.update(io_summary(result.jobs, platform, result.link_bytes))
    row["sim_wall_s"] = result.wall_time_s
    if output is not None:
        path = _write_jobs(result.jobs, output, name, several)
        click.echo(f"{name}: per-job results in {path}", err=True)
        if result.bandwidth is not None:
            plot = _write_bandwidth(result, platform, path, formats)
            click.echo(f"{name}: bandwidth over time in {plot} (and .csv)", err=True)
    return row, result


def _check_priority_twin(priority: str, names: list[str], model: str, tick: float, delay: float) -> None:
    if priority == "none":
        raise click.UsageError("--preempt suspend needs high-priority jobs: --priority random:F or size:N")
    if names != ["backfill-1"] or model != ALLOC_ONLY or tick or delay:
        raise click.UsageError(
            "--priority simulates Slurm's tiers (harness.sim.preemption): policy backfill-1 (EASY, "
            "the twin of slurm-backfill-1), alloc-only, no --tick or --launch-delay"
        )


def _simulate_priorities(
    plan: Any, platform: Any, priority: str, preempt: str, seed: int, tau: float,
    output: Path | None, formats: tuple[str, ...],
) -> dict[str, Any]:  # fmt: skip
    """The suspend/resume twin: its summary row with the suspension counts (files with --output)."""
    from harness.analysis.metrics import summary
    from harness.analysis.preemption import plot_suspensions, suspension_counts
    from harness.model.atomic import atomic_write_csv
    from harness.sim.preemption import simulate_preemption
    from harness.workload.priority import assign, parse_priority

    try:
        result = simulate_preemption(assign(plan, parse_priority(priority), seed), platform,
                                     preempt=preempt == "suspend")  # fmt: skip
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    row = summary(result.jobs, platform, tau=tau)
    row.update({"priority": priority, "preempt": preempt, "sim_wall_s": result.wall_time_s})
    row.update(suspension_counts(result.jobs, result.suspensions))
    click.echo(f"{priority}, preempt {preempt}: {row['high_priority_jobs']} high-priority jobs, "
               f"{row['suspensions']} suspensions of {row['suspended_jobs']} jobs", err=True)  # fmt: skip
    if output is not None:
        path = _write_jobs(result.jobs, output, "backfill-1", False)
        spans = atomic_write_csv(path.with_suffix(".suspensions.csv"), result.suspensions)
        plot = plot_suspensions(result.jobs, result.suspensions, platform.compute_count,
                                path.with_suffix(".suspended.png"),
                                title=f"Twin: {priority}, preempt {preempt}", formats=formats)  # fmt: skip
        click.echo(f"per-job results in {path}, suspensions in {spans}, figure {plot}", err=True)
    return row
