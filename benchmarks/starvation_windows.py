"""Where does Slurm's backfill starve without burst-buffer reservations? (Kopański 4.2)

For each period of KTH-SP2 (16, as the thesis splits it), the tick-aware twins of
``slurm-backfill-no-future-1`` (reservations hold nodes only) and ``slurm-backfill-1``
(nodes and burst buffers) are simulated, built as ``harness run --compare-sim`` builds them
(:func:`harness.emulation.collect.fidelity.simulator_twin`, ``slurm_rules``: Slurm's one-second
pass, a launch delay, whole-minute time limits, the BB as one license pool, the backfill's
will-run windows). The periods are ranked by starvation: the ratio of no-future-1's max wait
to backfill-1's and of its mean wait, the score being their geometric mean. Optionally, the
strongest period is cut into shorter windows (``--window-days``) for a live replay that
fits in a session; the best of them is named as a ``harness run`` command.

    PYTHONPATH=. python3 benchmarks/starvation_windows.py [--periods 16] [--only 3,13] \
        [--window-days 3 --window-step-days 1] [--shrink 0] [--launch-delay 0.5]

Times in the trace's seconds. ``--shrink 0`` (the default) is a replay on a virtual clock
(``harness run --clock events`` or ``--speedup``), where Slurm's seconds are the trace's.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pandas as pd

from harness.analysis.metrics import summary
from harness.emulation.collect.fidelity import SLURM_PASS_S, simulator_twin, slurm_rules
from harness.model.io_models import ALLOC_ONLY
from harness.model.paths import kth_trace
from harness.model.timescale import TimeScale
from harness.platform import Machine, load_platform
from harness.policies.registry import get_policy
from harness.sim.engine import simulate
from harness.workload.plan import prepare

STARVING = "slurm-backfill-no-future-1"
REFERENCE = "slurm-backfill-1"
DAY_S = 86400.0
LIVE_JOBS = 1800  # above this, a live replay of the window is too long for one session


@dataclass(frozen=True)
class WindowResult:
    """One window of the trace under both twins (waits in the trace's seconds)."""

    label: str  # e.g. "3/16" or "3/16 86400:345600"
    run_args: str  # what `harness run` selects it with
    jobs: int
    starving_mean: float
    starving_max: float
    reference_mean: float
    reference_max: float

    @property
    def mean_ratio(self) -> float:
        return ratio(self.starving_mean, self.reference_mean)

    @property
    def max_ratio(self) -> float:
        return ratio(self.starving_max, self.reference_max)

    @property
    def score(self) -> float:
        """The geometric mean of the two ratios: both the worst job and the average count."""
        return math.sqrt(self.mean_ratio * self.max_ratio)


def ratio(value: float, reference: float) -> float:
    """``value / reference``; a zero reference gives 1 for a zero value, else infinity."""
    if reference > 0:
        return value / reference
    return 1.0 if value <= 0 else math.inf


def rank(results: list[WindowResult]) -> list[WindowResult]:
    """Strongest starvation first: by score, then max-wait ratio, then the label (stable)."""
    return sorted(results, key=lambda r: (-r.score, -r.max_ratio, r.label))


def strongest_live(results: list[WindowResult], max_jobs: int = LIVE_JOBS) -> WindowResult | None:
    """The strongest window a live replay can run in one session (at most ``max_jobs`` jobs)."""
    return next((r for r in rank(results) if r.jobs <= max_jobs), None)


def windows_in(span_s: float, length_s: float, step_s: float) -> Iterator[tuple[float, float]]:
    """Windows ``[a, a + length)`` every ``step`` seconds covering ``[0, span]`` (the last
    ends at or after ``span``)."""
    start = 0.0
    while True:
        yield start, start + length_s
        if start + length_s >= span_s:
            return
        start += step_s


@dataclass(frozen=True)
class Twin:
    """How the twins see time: the replay's time scale and Slurm's launch delay."""

    scale: TimeScale
    launch_delay_s: float  # Slurm seconds after the pass
    bb_seed: int = 2020


def twin_waits(plan: pd.DataFrame, slurm_policy: str, platform: Machine, twin: Twin) -> tuple[float, float]:
    """(mean wait, max wait) of the tick-aware twin of ``slurm_policy`` on ``plan``."""
    policy = simulator_twin(slurm_policy)
    seen, machine, params = slurm_rules(plan, policy, platform, twin.scale, ALLOC_ONLY, 0.0)
    jobs = simulate(
        seen, get_policy(policy, params=params), machine, model=ALLOC_ONLY, io_seed=twin.bb_seed,
        tick=float(twin.scale.to_trace(SLURM_PASS_S)),
        launch_delay=float(twin.scale.to_trace(twin.launch_delay_s)),
    ).jobs  # fmt: skip
    found = summary(jobs, platform)
    return float(found["mean_wait"]), float(found["max_wait"])


def measure(plan: pd.DataFrame, label: str, run_args: str, platform: Machine, twin: Twin) -> WindowResult:
    starving = twin_waits(plan, STARVING, platform, twin)
    reference = twin_waits(plan, REFERENCE, platform, twin)
    return WindowResult(label, run_args, len(plan), *starving, *reference)


def period_plan(trace: str, period: int, periods: int, window: tuple[float, float] | None,
                platform: Machine, seed: int) -> pd.DataFrame:  # fmt: skip
    plan, _ = prepare(trace, platform=platform, seed=seed, period=(period - 1, periods), window=window)
    return plan


def scan_periods(args: argparse.Namespace, platform: Machine, twin: Twin) -> list[WindowResult]:
    out = []
    for k in args.only or range(1, args.periods + 1):
        began = time.monotonic()
        plan = period_plan(args.trace, k, args.periods, None, platform, args.bb_seed)
        out.append(measure(plan, f"{k}/{args.periods}", f"--period {k}/{args.periods}", platform, twin))
        _progress(out[-1], began)
    return out


def scan_windows(args: argparse.Namespace, period: int, platform: Machine, twin: Twin) -> list[WindowResult]:
    whole = period_plan(args.trace, period, args.periods, None, platform, args.bb_seed)
    span = float(whole["submit"].max() - whole["submit"].min())
    out = []
    for a, b in windows_in(span, args.window_days * DAY_S, args.window_step_days * DAY_S):
        began = time.monotonic()
        plan = period_plan(args.trace, period, args.periods, (a, b), platform, args.bb_seed)
        if len(plan) < 2:
            continue
        label = f"{period}/{args.periods} {a / DAY_S:g}-{b / DAY_S:g} d"
        sel = f"--period {period}/{args.periods} --window {a:.0f}:{b:.0f}"
        out.append(measure(plan, label, sel, platform, twin))
        _progress(out[-1], began)
    return out


def _progress(r: WindowResult, began: float) -> None:
    print(f"  {r.label}: {r.jobs} jobs, mean wait ratio {r.mean_ratio:.2f}, max wait ratio "
          f"{r.max_ratio:.2f} ({time.monotonic() - began:.0f} s)", file=sys.stderr, flush=True)  # fmt: skip


def table(results: list[WindowResult]) -> str:
    """A Markdown table, strongest starvation first."""
    head = ("| rank | window | jobs | no-future-1 mean / max wait (s) | backfill-1 mean / max wait (s) "
            "| mean ratio | max ratio | score |\n|---:|---|---:|---:|---:|---:|---:|---:|")  # fmt: skip
    lines = [
        f"| {i} | {r.label} | {r.jobs:,} | {r.starving_mean:,.0f} / {r.starving_max:,.0f} | "
        f"{r.reference_mean:,.0f} / {r.reference_max:,.0f} | {r.mean_ratio:.2f} | {r.max_ratio:.2f} "
        f"| {r.score:.2f} |"
        for i, r in enumerate(rank(results), start=1)
    ]
    return "\n".join([head, *lines])


def live_command(r: WindowResult, trace: str, shrink: float = 0.0) -> str:
    """The replay of ``r`` on the clock the twins assumed: virtual (shrink 0) or shrunk."""
    clock = f"--shrink {shrink:g}" if shrink > 0 else "--clock events"
    return f"harness run -p {STARVING} {r.run_args} {clock} {trace}  # then -p {REFERENCE}"


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trace", default=None, help="SWF trace (default: KTH-SP2 on this machine)")
    p.add_argument("--periods", type=int, default=16, help="equal periods to split the trace into")
    p.add_argument("--only", type=lambda s: [int(x) for x in s.split(",")], default=None,
                   help="only these periods (comma list, 1-based; default: all)")  # fmt: skip
    p.add_argument("--window-days", type=float, default=0.0,
                   help="also scan windows this long inside the strongest period (0: no)")  # fmt: skip
    p.add_argument("--window-step-days", type=float, default=1.0)
    p.add_argument("--window-period", type=int, default=None,
                   help="scan the windows of this period instead of the strongest")  # fmt: skip
    p.add_argument("--shrink", type=float, default=0.0, help="the replay's shrink (0: a virtual clock)")
    p.add_argument("--launch-delay", type=float, default=0.5, help="Slurm seconds from the pass to a start")
    p.add_argument("--bb-seed", type=int, default=2020)
    p.add_argument("--platform", default="default")
    args = p.parse_args(argv)
    args.trace = args.trace or str(kth_trace())
    return args


def main(argv: list[str] | None = None) -> None:
    args = _parse(argv)
    platform = load_platform(args.platform)
    twin = Twin(TimeScale(args.shrink), args.launch_delay, args.bb_seed)
    print(f"periods ({args.periods}), twins of {STARVING} and {REFERENCE}:", file=sys.stderr)
    periods = scan_periods(args, platform, twin)
    print(table(periods))
    best = rank(periods)[0]
    print(f"\nstrongest period: {best.label}\n  {live_command(best, args.trace, args.shrink)}")
    if args.window_days > 0:
        period = args.window_period or int(best.label.split("/")[0])
        print(f"\nwindows of {args.window_days:g} days in period {period}:", file=sys.stderr)
        windows = scan_windows(args, period, platform, twin)
        print(table(windows))
        live = strongest_live(windows)
        if live is not None:
            print(f"\nstrongest window of at most {LIVE_JOBS} jobs: {live.label}")
            print(f"  {live_command(live, args.trace, args.shrink)}")


if __name__ == "__main__":
    main()
