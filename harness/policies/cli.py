"""``harness simulate`` and ``harness policies``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click

from harness.policies.registry import FAMILIES, THESIS_POLICIES, UnknownPolicyError, parse_policy_list

# Columns of the plain-text comparison table: (summary key, header, format).
TEXT_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("jobs", "jobs", "{:d}"),
    ("mean_wait", "mean wait", "{:.0f}"),
    ("median_wait", "median wait", "{:.0f}"),
    ("max_wait", "max wait", "{:.0f}"),
    ("mean_turnaround", "mean turnaround", "{:.0f}"),
    ("mean_slowdown", "mean sld", "{:.2f}"),
    ("mean_bsld", "mean bsld", "{:.2f}"),
    ("makespan", "makespan", "{:.0f}"),
    ("util_compute", "util compute", "{:.3f}"),
    ("util_bb", "util BB", "{:.3f}"),
)


def _load_workload(
    path: str, shrink: float | None, seed: int | None, first_n: int | None, period: str | None
):
    from harness.workload.plan import load_plan_or_trace

    kwargs: dict[str, Any] = {}
    if shrink is not None:
        kwargs["shrink"] = shrink
    if seed is not None:
        kwargs["seed"] = seed
    if first_n is not None:
        kwargs["first_n"] = first_n
    if period:
        try:
            index, count = (int(x) for x in period.split("/"))
        except ValueError:
            raise click.BadParameter("expected i/k, e.g. 0/16", param_hint="--period") from None
        kwargs["period"] = (index, count)
    return load_plan_or_trace(path, **kwargs)


def _text_table(results: dict[str, dict[str, Any]]) -> str:
    headers = ["policy", *(h for _, h, _ in TEXT_COLUMNS)]
    rows = []
    for name, summ in results.items():
        cells = [name]
        for key, _, fmt in TEXT_COLUMNS:
            value = summ.get(key)
            ok = value is not None and not (isinstance(value, float) and math.isnan(value))
            cells.append(fmt.format(value) if ok else "-")
        rows.append(cells)
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    fmt_row = "  ".join([f"{{:<{widths[0]}}}", *(f"{{:>{w}}}" for w in widths[1:])])
    lines = [fmt_row.format(*headers)] + [fmt_row.format(*r) for r in rows]
    return "\n".join(lines)


def _write_jobs(jobs, output: Path, policy: str, several: bool) -> Path:
    target = output
    if several:
        target = output.with_name(f"{output.stem}.{policy}{output.suffix}")
    if target.suffix == ".csv":
        jobs.to_csv(target, index=False)
    else:
        jobs.to_parquet(target, index=False)
    return target


@click.command("simulate")
@click.argument("workload")
@click.option(
    "--policy",
    "-p",
    "policy_names",
    default="backfill-1",
    show_default=True,
    help="Policy name, or several separated by commas (see `harness policies`).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object keyed by policy name.")
@click.option("--platform", "platform_path", default=None, help="Platform TOML (default: the built-in one).")
@click.option("--shrink", type=float, default=None, help="Time shrink of a trace (a plan keeps its own).")
@click.option("--seed", type=int, default=None, help="Seed of the BB request model (traces only).")
@click.option("--first-n", type=int, default=None, help="Only the first N jobs of a trace.")
@click.option("--period", default=None, help="Only period i of k equal periods of a trace, as i/k.")
@click.option("--policy-seed", type=int, default=0, show_default=True, help="Seed of randomised policies.")
@click.option(
    "--time-limit",
    type=float,
    default=None,
    help="Wall-clock limit (s) of one plan search; results then depend on the machine's speed.",
)
@click.option("--tau", type=float, default=600.0, show_default=True, help="Bounded slowdown threshold (s).")
@click.option("--ci", is_flag=True, help="Add bootstrap 95% intervals of mean wait and mean bsld.")
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path),
    default=None,
    help="Write the per-job results (.parquet or .csv; one file per policy if several).",
)
@click.option("--check/--no-check", default=True, show_default=True, help="Verify the schedule invariants.")
def simulate_command(
    workload: str,
    policy_names: str,
    as_json: bool,
    platform_path: str | None,
    shrink: float | None,
    seed: int | None,
    first_n: int | None,
    period: str | None,
    policy_seed: int,
    time_limit: float | None,
    tau: float,
    ci: bool,
    output: Path | None,
    check: bool,
) -> None:
    """Run policies on WORKLOAD (a prepared plan or an SWF trace) in the simulator.

    Metrics are in the trace's original time (a shrunk plan is unshrunk).
    """  # fmt: skip
    from harness.metrics import summary, time_scale_of
    from harness.platform import PlatformError, load_platform
    from harness.policies.registry import get_policy
    from harness.simulator import check_schedule, simulate

    try:
        names = parse_policy_list(policy_names)
        platform = load_platform(platform_path)
    except (UnknownPolicyError, PlatformError) as exc:
        raise click.ClickException(str(exc)) from None
    try:
        plan, manifest = _load_workload(workload, shrink, seed, first_n, period)
    except (OSError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    scale = time_scale_of(float(manifest.get("shrink") or 0.0))
    results: dict[str, dict[str, Any]] = {}
    for name in names:
        try:
            result = simulate(plan, get_policy(name, seed=policy_seed, time_limit_s=time_limit), platform)
        except ValueError as exc:
            raise click.ClickException(f"{name}: {exc}") from None
        if check:
            problems = check_schedule(result.jobs, platform)
            if problems:
                raise click.ClickException(f"{name}: invalid schedule: {'; '.join(problems[:3])}")
        results[name] = summary(result.jobs, platform, tau=tau, time_scale=scale, ci=ci)
        results[name]["sim_wall_s"] = result.wall_time_s
        if output is not None:
            path = _write_jobs(result.jobs, output, name, len(names) > 1)
            click.echo(f"{name}: per-job results in {path}", err=True)
    if as_json:
        click.echo(json.dumps(results, indent=2))
    else:
        click.echo(_text_table(results))


@click.command("policies")
@click.option("--thesis", is_flag=True, help="List the concrete policies of the thesis's experiments.")
def policies_command(thesis: bool) -> None:
    """List the scheduling policies (names end with the reservation depth D)."""
    if thesis:
        for name in THESIS_POLICIES:
            click.echo(name)
        return
    width = max(len(f.usage) for f in FAMILIES)
    for family in FAMILIES:
        click.echo(f"{family.usage:<{width}}  {family.description}  (e.g. {', '.join(family.examples)})")
