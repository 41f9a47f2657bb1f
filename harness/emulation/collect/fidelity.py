"""How far an emulation is from the simulation of the same plan under the same policy.

Both sides are compared in original (unshrunk) time: the start order of the jobs both ran
(Kendall's tau of their start times) and every headline metric (emulated, simulated,
relative difference). Two twins: the *ideal* one (the policy sees every event at once) and
the *tick-aware* one (:func:`harness.sim.engine.simulate` with ``tick`` = Slurm's one-second
pass and ``launch_delay`` = the start latency measured in the run, both turned into original
time by the run's time scale). What the tick-aware twin still misses is the unexplained gap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from harness.analysis.metrics import summary
from harness.emulation.head.agent import DEFAULT_POLL_S
from harness.emulation.head.replay import slurm_limit_minutes
from harness.model.columns import RESULT_TIME_COLUMNS
from harness.model.io_models import ALLOC_ONLY, IO_AWARE
from harness.model.metric_names import HEADLINE_METRICS
from harness.model.timescale import time_scale_of, unshrink, unshrink_table
from harness.platform import Machine
from harness.policies.registry import get_policy
from harness.policies.tiers import HPS, LPS
from harness.sim.engine import simulate
from harness.slurm.config import SchedulerConfig

TIERS = (HPS, LPS)  # what a tier-choosing run's table says a job with a BB request ran on


def start_order_agreement(emulated: pd.DataFrame, simulated: pd.DataFrame) -> dict[str, float]:
    """Kendall's tau between the start times of the jobs present in both schedules."""
    both = emulated[["job_id", "start"]].merge(simulated[["job_id", "start"]], on="job_id",
                                               suffixes=("_emu", "_sim")).dropna()  # fmt: skip
    if len(both) < 2:
        return {"jobs": len(both), "kendall_tau": float("nan")}
    tau = stats.kendalltau(both["start_emu"], both["start_sim"]).statistic
    return {"jobs": len(both), "kendall_tau": float(tau)}


def compare_with_simulation(
    plan: pd.DataFrame,
    emulated: pd.DataFrame,
    policy: str,
    platform: Machine,
    shrink: float,
    seed: int = 0,
    model: str = ALLOC_ONLY,
    tick: float = 0.0,
    launch_delay: float = 0.0,
    stage_delay: float = 0.0,
    staged_start: str | None = None,
    policy_seed: int = 0,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """(fidelity figures, simulated per-job table); ``emulated`` in shrunk time since t0.
    ``seed`` is the workload's (the I/O volumes), ``policy_seed`` the run's policy's (a
    randomised policy, e.g. ``sas-random-P``, draws as the ordering agent did).

    ``tick`` and ``launch_delay`` (emulated seconds, both 0: the ideal twin) select the
    tick-aware twin; they are unshrunk with the run's time scale, as the simulation runs
    on the unshrunk plan. ``io-aware``: the IO-Aware twin redraws the plan's I/O columns
    from the same seed (a job's volumes depend only on the seed and its number) and stages
    as Slurm's ``burst_buffer/lua`` pool does (``staging="pool"``: outside the allocation,
    striped over every BB node; ``staged_start``: how Slurm gives staged-in jobs nodes,
    :func:`staged_start_for`); a tier-choosing policy's twin runs the live jobs' tiers in
    that pool (:mod:`harness.sim.pool_tiers`: the volumes the agent reads, HPS staged by the
    pool, LPS on the PFS with no BB), with the same Slurm delays.
    """
    staging, twin = "inside", get_policy(policy, seed=policy_seed)
    if model == IO_AWARE:
        plan = plan.drop(columns=[c for c in plan.columns if c.startswith("io_")])
        staging = "pool"
    order = staged_start if staging == "pool" else None
    sim = simulate(
        unshrink_table(plan, shrink), twin, platform, model=model, io_seed=seed,
        tick=float(unshrink(tick, shrink)), launch_delay=float(unshrink(launch_delay, shrink)),
        staging=staging, stage_delay=float(unshrink(stage_delay, shrink)), staged_start=order,
        decision_tick=float(unshrink(AGENT_POLL_S, shrink)) if tick and order == "reserved" else None,
    ).jobs  # fmt: skip
    emu_orig = unshrink_table(emulated, shrink, RESULT_TIME_COLUMNS)
    emu_metrics = summary(emulated, platform, time_scale=time_scale_of(shrink))
    sim_metrics = summary(sim, platform)
    metrics = {}
    for key in HEADLINE_METRICS:
        e, s = float(emu_metrics[key]), float(sim_metrics[key])
        rel = (e - s) / s if s else (0.0 if e == s else float("nan"))
        metrics[key] = {"emulated": e, "simulated": s, "rel_diff": rel}
    fidelity = {
        "simulator_policy": policy,
        "start_order": start_order_agreement(emu_orig, sim),
        "metrics": metrics,
        "mean_abs_start_shift_s": float(np.nanmean(np.abs(
            emu_orig.set_index("job_id")["start"] - sim.set_index("job_id")["start"]
        ))),
    }  # fmt: skip
    if model == IO_AWARE:
        fidelity["staging"] = staging_agreement(emulated, sim, time_scale_of(shrink))
    if "tier" in emulated.columns and "tier" in sim.columns:
        fidelity["tiers"] = tier_agreement(emulated, sim)
    return fidelity, sim


def compare_with_both_twins(
    plan: pd.DataFrame,
    emulated: pd.DataFrame,
    policy: str,
    platform: Machine,
    shrink: float,
    delay: LaunchDelay,
    seed: int = 0,
    model: str = ALLOC_ONLY,
    minute_limits: bool = False,
    staged: LaunchDelay | None = None,
    staged_start: str | None = None,
    policy_seed: int = 0,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """The ideal twin's figures, with the tick-aware twin's under ``"tick_aware"``: Slurm's
    pass every :data:`SLURM_PASS_S`, the measured ``delay`` after it and, with
    ``minute_limits`` (Slurm's own scheduler), the time limits Slurm plans with: the
    walltimes rounded up to whole emulated minutes, as the replay submits them (the jobs
    still end at their exact limit). ``io-aware`` (Slurm's staging, ``staged`` given): a
    staged-in job starts on the pass after its stage-in, ``delay`` later, and a stage-in
    begins ``staged`` after the pass that picked the job; both twins give staged-in jobs
    nodes as ``staged_start`` says. Returns the ideal twin's schedule."""
    found, simulated = compare_with_simulation(
        plan, emulated, policy, platform, shrink, seed, model,
        staged_start=staged_start, policy_seed=policy_seed,
    )  # fmt: skip
    launch = delay.seconds
    stage = staged.seconds if staged is not None and model == IO_AWARE else 0.0
    seen = with_minute_limits(plan) if minute_limits else plan
    ticked, _ = compare_with_simulation(
        seen, emulated, policy, platform, shrink, seed, model, tick=SLURM_PASS_S, launch_delay=launch,
        stage_delay=stage, staged_start=staged_start, policy_seed=policy_seed,
    )  # fmt: skip
    found["tick_aware"] = {
        "tick_s": float(unshrink(SLURM_PASS_S, shrink)),
        "launch_delay_s": float(unshrink(launch, shrink)),
        "launch_delay_emulated_s": launch,
        "launch_delay_jobs": delay.jobs,
        "stage_delay_s": float(unshrink(stage, shrink)),
        "stage_delay_emulated_s": stage,
        "minute_limits": minute_limits,
        "staged_start": staged_start,
        "start_order": ticked["start_order"],
        "metrics": ticked["metrics"],
        "mean_abs_start_shift_s": ticked["mean_abs_start_shift_s"],
    }
    return found, simulated


def staged_start_for(sched: SchedulerConfig) -> str:
    """How the run's Slurm gives staged-in jobs nodes (:class:`harness.sim.staging.SlurmPasses`):
    on the nodes the ordering agent released them on, else as Slurm's scheduler orders jobs."""
    if sched.external_ordering:
        return "reserved"
    return "backfill" if sched.mode == "backfill" else "in-order"


def with_minute_limits(plan: pd.DataFrame) -> pd.DataFrame:
    """The plan (shrunk) with the walltimes Slurm's own scheduler plans with: rounded up to
    whole minutes, as the replay submits them (``--time``)."""
    return plan.assign(walltime=plan["walltime"].map(lambda w: 60.0 * slurm_limit_minutes(w)))


AGENT_POLL_S = DEFAULT_POLL_S  # the ordering agent decides on its poll, not on Slurm's pass
SLURM_PASS_S = 1.0  # Slurm 24.11's scheduling pass, emulated seconds (sched_min_interval=0, bf_interval=1)


@dataclass(frozen=True)
class LaunchDelay:
    """The start latency measured in a run (emulated seconds) and the jobs it was measured on."""

    seconds: float
    jobs: int


def measured_launch_delay(results: pd.DataFrame, t0: float, column: str = "start") -> LaunchDelay:
    """How long after Slurm's pass a job starts: the median, over the started jobs, of the
    fraction of a second of the job's start on the wall clock (``t0`` + start); with
    ``column="stage_in_begin"``, how long after it a stage-in begins.

    slurmctld's passes fall on whole wall-clock seconds (measured: every start of a
    bundled-slice run lies 0.0-0.5 s after one), whoever released the job (Slurm itself or
    the ordering agent); what comes after the pass is the job's launch (prolog, slurmd,
    sigsleep's first record).
    """
    if column not in results.columns:
        return LaunchDelay(0.0, 0)
    starts = (float(t0) + results[column].dropna().to_numpy(dtype=float)) % 1.0
    return LaunchDelay(float(np.median(starts)) if len(starts) else 0.0, len(starts))


def staging_agreement(emulated: pd.DataFrame, simulated: pd.DataFrame, time_scale: float) -> dict[str, Any]:
    """Mean stage-in and stage-out times in original seconds, emulated beside the IO-Aware
    twin's (both outside the allocation, striped over the pool); with sigsleep's phases
    also the compute, checkpoint and I/O times and the dilation (no unit)."""
    out: dict[str, Any] = {}
    for col in ("stage_in_s", "stage_out_s", "compute_s", "checkpoint_s", "io_s", "dilation"):
        if col not in emulated.columns or col not in simulated.columns:
            continue
        scale = 1.0 if col == "dilation" else time_scale
        e, s = float(emulated[col].mean() * scale), float(simulated[col].mean())
        out[f"mean_{col}"] = {"emulated": e, "simulated": s, "rel_diff": (e - s) / s if s else float("nan")}
    return out


def tier_agreement(emulated: pd.DataFrame, simulated: pd.DataFrame) -> dict[str, Any]:
    """Under a tier-choosing policy: the jobs with a BB request that ran, on each tier, in the
    emulation and in the twin, and how many of them the two put on the same tier."""
    e = emulated.set_index("job_id")["tier"]
    s = simulated.set_index("job_id")["tier"].reindex(e.index)
    both = e.isin(TIERS) & s.isin(TIERS)
    e, s = e[both], s[both]
    return {
        "jobs": int(both.sum()),
        "emulated": {t: int((e == t).sum()) for t in TIERS},
        "simulated": {t: int((s == t).sum()) for t in TIERS},
        "same_tier": int((e == s).sum()),
    }


def simulator_twin(policy: str) -> str:
    """The simulator policy that a run's policy corresponds to."""
    if policy == "slurm-fcfs":
        return "fcfs"
    if policy.startswith("slurm-backfill-io-aware-"):
        return "io-easy"  # Herbein's I/O-aware EASY, which the bandwidth license gives Slurm
    return policy.removeprefix("slurm-")
