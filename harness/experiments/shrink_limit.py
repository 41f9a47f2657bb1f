"""How far can time be shrunk? (Barberato Section 4.2.4, Figures 4.12-4.14.)

The same plan is replayed at increasing shrink factors, ``repeat`` times each; a metric
*holds* at a shrink when the mean of its repetitions is within ``tolerance`` (relative)
of the mean at the lowest shrink, the reference. The limit is the largest shrink up to
which every headline metric holds at that shrink and at every lower one. Intervals are
Barberato's C95 (:func:`harness.analysis.metrics.repetition_stats`).

A *runner* produces the metrics of one shrink: :func:`emulation_runner` replays on
Slurm (through :func:`harness.emulation.run.repetitions.run_repetitions`),
:func:`simulator_runner` asks the tick-aware twin (the policy invoked on a one-second
pass of emulated time), so the finder runs, and is tested, without Slurm.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from harness.analysis.metrics import repetition_stats
from harness.model.metric_names import HEADLINE_METRICS
from harness.model.timescale import TimeScale

LIMIT_METRICS: tuple[str, ...] = ("mean_wait", "mean_bsld", "util_compute", "makespan")
DEFAULT_SHRINKS: tuple[float, ...] = (0.5, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995)
# shrink, repeat -> one metrics dict (original time) per repetition
Runner = Callable[[TimeScale, int], list[dict[str, Any]]]  # one shrink's runs


@dataclass(frozen=True)
class ShrinkPoint:
    shrink: float
    values: dict[str, list[float]]  # metric -> its value in every repetition
    wall_s: float  # wall time of all repetitions of this shrink

    @property
    def speedup(self) -> float:
        return TimeScale(self.shrink).speedup


@dataclass(frozen=True)
class ShrinkLimit:
    reference: float  # the lowest shrink, against which the others are measured
    tolerance: float
    limit: float  # the largest shrink that holds (the reference at worst)
    table: pd.DataFrame  # shrink, speedup, metric, n, mean, c95, rel_diff, holds, wall_s

    def as_dict(self) -> dict[str, Any]:
        head = {"reference": self.reference, "tolerance": self.tolerance, "limit": self.limit}
        rows = self.table.to_dict(orient="records")
        return {**head, "speedup": TimeScale(self.limit).speedup, "rows": rows}


def check_shrinks(shrinks: Sequence[float]) -> list[float]:
    """Sorted, distinct, each in [0, 1); at least two (a reference and one to judge)."""
    values = sorted({float(s) for s in shrinks})
    bad = [s for s in values if not 0.0 <= s < 1.0]
    if bad:
        raise ValueError(f"--shrinks: every shrink must be in [0, 1), got {bad}")
    if len(values) < 2:
        raise ValueError(f"--shrinks: give at least two distinct shrinks, got {values}")
    return values


def relative(value: float, reference: float) -> float:
    if reference == 0:
        return 0.0 if value == 0 else math.inf
    return (value - reference) / abs(reference)


def find_limit(
    points: Sequence[ShrinkPoint], tolerance: float, metrics: Sequence[str] = LIMIT_METRICS
) -> ShrinkLimit:
    """The largest shrink up to which every metric stays within ``tolerance`` of the reference."""
    if not points:
        raise ValueError("no shrink was measured")
    unknown = [m for m in metrics if m not in HEADLINE_METRICS]
    if unknown:
        raise ValueError(f"not headline metrics: {unknown} (see harness.model.metric_names)")
    ordered = sorted(points, key=lambda p: p.shrink)
    reference = {m: float(repetition_stats(ordered[0].values[m])["AVE"]) for m in metrics}
    rows, limit, broken = [], ordered[0].shrink, False
    for point in ordered:
        holds_all = True
        for m in metrics:
            stats = repetition_stats(point.values[m])
            rel = relative(stats["AVE"], reference[m])
            holds = abs(rel) <= tolerance + 1e-12
            holds_all &= holds
            rows.append({"shrink": point.shrink, "speedup": point.speedup, "metric": m,
                         "n": len(point.values[m]), "mean": stats["AVE"], "c95": stats["C95"],
                         "rel_diff": rel, "holds": holds, "wall_s": point.wall_s})  # fmt: skip
        broken |= not holds_all
        if not broken:
            limit = point.shrink
    return ShrinkLimit(ordered[0].shrink, tolerance, limit, pd.DataFrame(rows))


def sweep(
    runner: Runner,
    shrinks: Sequence[float],
    repeat: int,
    metrics: Sequence[str] = LIMIT_METRICS,
    progress: Callable[[str], None] | None = None,
) -> list[ShrinkPoint]:
    """Every shrink's metrics over ``repeat`` repetitions, and the wall time they cost."""
    points = []
    for shrink in check_shrinks(shrinks):
        began = time.perf_counter()
        runs = runner(TimeScale(shrink), repeat)
        wall = time.perf_counter() - began
        values = {m: [float(r[m]) for r in runs] for m in metrics}
        points.append(ShrinkPoint(shrink, values, wall))
        if progress:
            progress(f"shrink {shrink:g}: {len(runs)} run(s) in {wall:.1f} s")
    return points


def simulator_runner(
    source: str | Path,
    policy: str,
    platform: Any,
    prepare: dict[str, Any] | None = None,
    tick: float = 1.0,
    launch_delay: float = 0.0,
) -> Runner:
    """The tick-aware twin at each shrink: ``tick`` and ``launch_delay`` in emulated seconds;
    for Slurm's own scheduler (``slurm-*``, with a tick), its whole-minute time limits."""
    from harness.analysis.metrics import summary
    from harness.emulation.collect.fidelity import simulator_twin, with_minute_limits
    from harness.policies.registry import get_policy
    from harness.sim.engine import simulate
    from harness.slurm.native import is_native
    from harness.workload.plan import load_plan_or_trace

    trace_plan, _ = load_plan_or_trace(source, platform=platform, **(prepare or {}))

    def run(scale: TimeScale, repeat: int) -> list[dict[str, Any]]:
        plan = with_minute_limits(trace_plan, scale) if tick > 0 and is_native(policy) else trace_plan
        ticked, delay = float(scale.to_trace(tick)), float(scale.to_trace(launch_delay))
        out = []
        for rep in range(repeat):
            twin = get_policy(simulator_twin(policy), seed=rep)
            result = simulate(plan, twin, platform, tick=ticked, launch_delay=delay)
            out.append(summary(result.jobs, platform))
        return out

    return run


def emulation_runner(opts: Any) -> Runner:
    """Replays on Slurm: ``opts`` (a RunOptions) at each shrink, repetitions as `harness run --repeat`."""
    from harness.emulation.run.repetitions import run_repetitions
    from harness.model import rundir

    def run(scale: TimeScale, repeat: int) -> list[dict[str, Any]]:
        shrink = scale.shrink
        at = replace(opts, workload=replace(opts.workload, shrink=shrink), label=f"limit{shrink:g}")
        parent = run_repetitions(at, repeat)
        return [rundir.read_metrics(parent / rundir.repetition_name(i)) for i in range(repeat)]

    return run
