"""What a run is about to do, before anything starts: jobs, the trace's span, the clock, the
expected wall time, the cluster and the policies; and whether to go ahead.

The expected wall time of one replay is its span (from the first submission to the earliest
instant the last job can have ended: ``max(submit + runtime)``) on the run's clock, plus the warm-up
and a fixed overhead for bringing the cluster up and collecting (:data:`OVERHEAD_S`). It is
a floor: jobs that wait in the queue end later. Runs of several policies and repetitions go
one after the other, so their times add up.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import Enum

import pandas as pd

from harness.model.durations import human_duration
from harness.model.timescale import TimeScale

# --clock events: real seconds per job (its submission, start and end as events, each with the
# one-second steps Slurm's passes need, and the approach to the second before an end), measured:
# 1.10 on the bundled slice, 1.125 on KTH's first period of 16 (docs/virtual-time.md)
EVENT_WALL_S_PER_JOB = 1.15
# ... with live I/O (io-aware): every transfer and phase end is an event too; measured on the
# bundled slice: 3.13 under slurm-backfill-1, 3.37 under the agent (2026-11-29 13:00 and 13:12,
# after the staging command's import fix; 3.72 and 4.6 before it; docs/virtual-time.md)
EVENT_IO_WALL_S_PER_JOB = 3.4
OVERHEAD_S = 60.0  # cluster check/bring-up, collection and report of one run (measured 20-40 s)
# the largest emulation (slurmd daemons) on which x100 was measured to keep Slurm's x1 schedule
# in five runs: RICC day 118's 1,152 nodes once the clock stood still through each job's release
# (docs/virtual-time.md, "The clock stands still while Slurm releases a job")
FIXED_RATE_MEASURED_NODES = 1_152
# at a fixed speed-up, real seconds per job that the clock stands still at its end while Slurm
# releases it (release_holds.py), measured: 0.09 on the bundled slice, 0.17 on RICC day 118
# (256-node jobs among them); the estimate is a floor
HOLD_WALL_S_PER_JOB = 0.09
DEFAULT_CONFIRM_OVER_S = 2 * 3600.0  # ask (or refuse without --yes) above this expected wall time
MIN_JOBS = 10  # fewer jobs are no experiment: not suggested as --first-n
HIGH_SHRINK = 0.99  # above this, fidelity suffers (docs/run.md, "Measured limits")

_UNITS = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


@dataclass(frozen=True)
class Estimate:
    """The estimate of one ``harness run`` command (all its policies and repetitions)."""

    jobs: int
    span_s: float  # first submission to the earliest end of the last job, the trace's seconds
    scale: TimeScale  # shrinking on the wall clock (none on a virtual clock)
    warmup_s: float
    cluster: str
    policies: tuple[str, ...]
    repeat: int = 1
    trace: str = ""
    speedup: float = 1.0  # the virtual clock's speed-up (1: the wall clock, times shrunk instead)
    events: bool = False  # the virtual clock moved by events: the wall time goes by jobs, not span
    live_io: bool = False  # io-aware: each job's transfers are events of their own

    @property
    def shrink(self) -> float:
        return self.scale.shrink

    @property
    def trace_s_per_real_s(self) -> float:
        """How fast the trace goes: shrunk on the wall clock, or on a faster virtual clock."""
        return self.scale.speedup * self.speedup

    @property
    def runs(self) -> int:
        return len(self.policies) * self.repeat

    @property
    def per_run_s(self) -> float:
        if self.events:
            return (
                OVERHEAD_S + (EVENT_IO_WALL_S_PER_JOB if self.live_io else EVENT_WALL_S_PER_JOB) * self.jobs
            )
        holds = HOLD_WALL_S_PER_JOB * self.jobs if self.speedup != 1.0 and not self.live_io else 0.0
        return OVERHEAD_S + self.warmup_s / self.speedup + self.span_s / self.trace_s_per_real_s + holds

    @property
    def wall_s(self) -> float:
        return self.per_run_s * self.runs

    def as_dict(self) -> dict[str, object]:
        return {
            "trace": self.trace, "jobs": self.jobs, "original_span_s": self.span_s,
            "shrink": self.shrink, "speedup": self.speedup, "policies": list(self.policies),
            "repeat": self.repeat, "runs": self.runs,
            "cluster": self.cluster, "per_run_s": self.per_run_s, "expected_wall_s": self.wall_s,
        }  # fmt: skip


def plan_span(plan: pd.DataFrame) -> float:
    """Seconds from the first submission to the earliest end of the last job (plan times)."""
    if plan.empty:
        return 0.0
    return float((plan["submit"] + plan["runtime"]).max() - plan["submit"].min())


def estimate_plan(
    plan: pd.DataFrame, scale: TimeScale, warmup: float, cluster: str, policies: tuple[str, ...],
    repeat: int = 1, trace: str = "", speedup: float = 1.0, events: bool = False, live_io: bool = False,
) -> Estimate:  # fmt: skip
    """The estimate of replaying ``plan`` (the trace's time) shrunk by ``scale`` on the wall
    clock, or on a virtual clock ``speedup`` times faster than it."""
    span = plan_span(plan)
    return Estimate(
        len(plan), span, scale, warmup, cluster, policies, repeat, trace, speedup, events, live_io
    )


def policies_of(text: str) -> tuple[str, ...]:
    """``a,b`` -> ("a", "b"): the policies of one command."""
    return tuple(p.strip() for p in text.split(",") if p.strip())


# -- durations ------------------------------------------------------------------------------


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``45m``, ``2h``, ``1.5d`` -> seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*(s|m|min|h|d)?\s*", text)
    if not match:
        raise ValueError(f"expected a duration such as 90s, 45m, 2h or 1d, got {text!r}")
    return float(match.group(1)) * _UNITS[match.group(2) or "s"]


def _clock_line(est: Estimate) -> str:
    if est.events:
        return "clock            virtual, moved by events (the trace's own times, unshrunk)"
    if est.speedup != 1.0:
        return f"clock            virtual, x{est.speedup:g} (the trace's own times, unshrunk)"
    return f"shrink           {est.shrink:g} (x{est.scale.speedup:.4g} faster than real time)"


def describe(est: Estimate) -> str:
    """The block printed before a run starts."""
    runs = f" x {est.runs} runs" if est.runs > 1 else ""
    return "\n".join([
        "harness run: what is about to start",
        f"  trace            {est.trace or '(bundled KTH slice)'}",
        f"  jobs             {est.jobs}",
        f"  original span    {human_duration(est.span_s)} ({est.span_s:.0f} s)",
        f"  {_clock_line(est)}",
        f"  cluster          {est.cluster}",
        f"  policies         {', '.join(est.policies)}" + (f"; each repeated {est.repeat} times"
                                                             if est.repeat > 1 else ""),
        f"  expected wall    at least {human_duration(est.per_run_s)} per run{runs}: "
        f"{human_duration(est.wall_s)} in all",
    ])  # fmt: skip


def fixed_rate_note(speedup: float | None, nodes: int) -> str | None:
    """A line for the estimate when a fixed speed-up runs a larger emulation than any on which
    it was measured to keep the x1 schedule: every real millisecond of Slurm's work there is
    ``speedup`` ms of the trace, and a larger machine has more of them (launches, releases)."""
    if speedup is None or nodes <= FIXED_RATE_MEASURED_NODES:
        return None
    return (
        f"  note             x{speedup:g} on {nodes:,} nodes: a fixed speed-up was measured to keep "
        f"Slurm's x1 schedule on up to {FIXED_RATE_MEASURED_NODES:,} nodes, not on more "
        "(docs/virtual-time.md); --clock events keeps it whatever the machine"
    )


# -- shorter alternatives -------------------------------------------------------------------


def suggestions(est: Estimate, plan: pd.DataFrame, limit_s: float) -> list[str]:
    """Options that bring the whole command under ``limit_s`` of wall time."""
    if est.events:  # the wall time goes by jobs: fewer jobs
        jobs = int((limit_s / est.runs - OVERHEAD_S) / EVENT_WALL_S_PER_JOB)
        return (
            [f"{'--first-n ' + str(jobs):<20} the first {jobs} jobs"] if MIN_JOBS <= jobs < est.jobs else []
        )
    # trace seconds of replay per run
    budget = (limit_s / est.runs - OVERHEAD_S - est.warmup_s / est.speedup) * est.trace_s_per_real_s
    if budget <= 0 or est.span_s <= budget:
        return []
    first = plan["submit"].min()
    ends = (plan["submit"] + plan["runtime"]).cummax() - first
    first_n = int((ends <= budget).sum())
    longest = float(plan["runtime"].max())
    found: list[tuple[str, str]] = []
    if first_n >= MIN_JOBS:
        found.append((f"--first-n {first_n}", f"the first {first_n} jobs"))
    if budget > longest:  # a selection by submission instants fits if its longest job does
        submits = float(plan["submit"].max() - first)
        k = math.ceil(submits / (budget - longest))
        window = budget - longest
        found.append((f"--period 1/{k}", f"one of {k} equal periods of the trace (any I/{k})"))
        found.append((f"--window 0:{window:.0f}", f"the jobs of the trace's first {human_duration(window)}"))
    else:
        alone = human_duration(longest / est.trace_s_per_real_s)
        found.append(("", f"(no --period or --window fits: the longest job alone runs "
                          f"{alone} at shrink {est.shrink:g})"))  # fmt: skip
    if (
        est.speedup != 1.0 or est.events
    ):  # a faster clock is not offered: x{MAX_SPEEDUP} is the measured limit
        return [f"{option:<20} {text}".strip() if option else text for option, text in found]
    shrink = faster_shrink(est.scale, budget / est.span_s)
    caveat = (f"; above {HIGH_SHRINK:g} the 1 s scheduler tick and the submission lag weigh on the "
              "results (docs/run.md)" if shrink > HIGH_SHRINK else "")  # fmt: skip
    found.append((f"--shrink {shrink:g}", f"the whole selection, faster{caveat}"))
    return [f"{option:<20} {text}".strip() if option else text for option, text in found]


def faster_shrink(scale: TimeScale, ratio: float) -> float:
    """The shrink whose times are ``ratio`` times those of ``scale``, rounded up (shorter) to the
    fewest decimals (at least 4) that stay below 1."""
    exact = scale.shrink_for(ratio)
    digits = 4
    while math.ceil(exact * 10**digits) >= 10**digits:
        digits += 1
    return math.ceil(exact * 10**digits) / 10**digits


# -- go ahead? ------------------------------------------------------------------------------


class Decision(Enum):
    PROCEED = "proceed"  # under the threshold, or --yes
    ASK = "ask"  # over the threshold on a terminal: ask
    REFUSE = "refuse"  # over the threshold, no terminal, no --yes


def decide(wall_s: float, threshold_s: float, yes: bool, tty: bool) -> Decision:
    """Whether a run of ``wall_s`` expected seconds starts without asking."""
    if yes or wall_s <= threshold_s:
        return Decision.PROCEED
    return Decision.ASK if tty else Decision.REFUSE
