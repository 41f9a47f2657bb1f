"""How far an emulation is from the simulation of the same plan under the same policy.

Both sides are compared in the trace's time: the start order of the jobs both ran
(Kendall's tau of their start times) and every headline metric (emulated, simulated,
relative difference). Two twins: the *ideal* one (the policy sees every event at once) and
the *tick-aware* one (:func:`harness.sim.engine.simulate` with ``tick`` = Slurm's one-second
pass and ``launch_delay`` = the start latency measured in the run, both turned into the
trace's time by the run's time scale). What the tick-aware twin still misses is the unexplained gap.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from harness.analysis.metrics import summary
from harness.emulation.head.agent import DEFAULT_POLL_S
from harness.emulation.iolive.staging_replay import staging_given_starts
from harness.model.io_models import ALLOC_ONLY, IO_AWARE
from harness.model.metric_names import HEADLINE_METRICS
from harness.model.timescale import TimeScale
from harness.platform import Machine
from harness.policies.base import Policy
from harness.policies.registry import family_of, get_policy
from harness.policies.tiers import HPS, LPS
from harness.policies.will_run import SLURM_TIME_WINDOW_S
from harness.sim.engine import simulate
from harness.sim.tiers import is_tiered
from harness.slurm.config import SchedulerConfig
from harness.slurm.jobspec import slurm_limit_minutes

# The twin of Slurm's backfill picks and reserves concrete nodes (docs/virtual-time.md, "A twin
# with Slurm's will-run windows": measured on the slice and a whole KTH period)
SLURM_NODE_RESERVATION = True
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
    seed: int = 0,
    model: str = ALLOC_ONLY,
    tick: float = 0.0,
    launch_delay: float = 0.0,
    stage_delay: float = 0.0,
    staged_start: str | None = None,
    policy_seed: int = 0,
    decision_tick: float | None = None,
    policy_params: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """(fidelity figures, simulated per-job table); ``plan`` and ``emulated`` in the trace's
    seconds since t0.
    ``seed`` is the workload's (the I/O volumes), ``policy_seed`` the run's policy's (a
    randomised policy, e.g. ``sas-random-P``, draws as the ordering agent did).

    ``tick`` and ``launch_delay`` (trace seconds, both 0: the ideal twin) select the tick-aware
    twin; ``decision_tick`` how often the ordering agent decides. ``io-aware``: the IO-Aware
    twin redraws the plan's I/O columns from the same seed (a job's volumes depend only on the
    seed and its number) and stages as Slurm's ``burst_buffer/lua`` pool does
    (``staging="pool"``: outside the allocation, striped over every BB node; ``staged_start``:
    how Slurm gives staged-in jobs nodes, :func:`staged_start_for`); a tier-choosing policy's
    twin runs the live jobs' tiers in that pool (:mod:`harness.sim.pool_tiers`: the volumes the
    agent reads, HPS staged by the pool, LPS on the PFS with no BB), with the same Slurm delays.
    """
    staging, twin = "inside", get_policy(policy, seed=policy_seed, params=policy_params)
    if model == IO_AWARE:
        plan = plan.drop(columns=[c for c in plan.columns if c.startswith("io_")])
        staging = "pool"
    order = staged_start if staging == "pool" else None
    sim = simulate(
        plan, twin, platform, model=model, io_seed=seed, tick=tick, launch_delay=launch_delay,
        staging=staging, stage_delay=stage_delay, staged_start=order,
        decision_tick=decision_tick if tick and order == "reserved" else None,
        stage_in=stage_in_for(staging, order, twin),
    ).jobs  # fmt: skip
    emu_metrics = summary(emulated, platform)
    sim_metrics = summary(sim, platform)
    metrics = {}
    for key in HEADLINE_METRICS:
        e, s = float(emu_metrics[key]), float(sim_metrics[key])
        rel = (e - s) / s if s else (0.0 if e == s else float("nan"))
        metrics[key] = {"emulated": e, "simulated": s, "rel_diff": rel}
    fidelity = {
        "simulator_policy": policy,
        "start_order": start_order_agreement(emulated, sim),
        "metrics": metrics,
        "mean_abs_start_shift_s": float(np.nanmean(np.abs(
            emulated.set_index("job_id")["start"] - sim.set_index("job_id")["start"]
        ))),
    }  # fmt: skip
    return {**fidelity, **io_agreement(emulated, sim, platform, model)}, sim


def io_agreement(emulated: pd.DataFrame, sim: pd.DataFrame, platform: Machine, model: str) -> dict[str, Any]:
    """``io-aware``: staging and phases beside the twin's, and the staging model replayed on the
    emulated instants (the live I/O service alone, whatever the schedule did); the tiers."""
    out: dict[str, Any] = {}
    if model == IO_AWARE:
        out["staging"] = staging_agreement(emulated, sim)
        replayed = staging_given_starts(emulated, platform)
        if replayed is not None:
            out["staging_replayed"] = replayed
    if "tier" in emulated.columns and "tier" in sim.columns:
        out["tiers"] = tier_agreement(emulated, sim)
    return out


def compare_with_both_twins(
    plan: pd.DataFrame,
    emulated: pd.DataFrame,
    policy: str,
    platform: Machine,
    scale: TimeScale,
    delay: LaunchDelay,
    seed: int = 0,
    model: str = ALLOC_ONLY,
    minute_limits: bool = False,
    staged: LaunchDelay | None = None,
    staged_start: str | None = None,
    policy_seed: int = 0,
    policy_params: Mapping[str, Any] | None = None,
    slurm_t0: float = 0.0,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """The ideal twin's figures, with the tick-aware twin's under ``"tick_aware"``: Slurm's
    pass every :data:`SLURM_PASS_S`, the measured ``delay`` after it (both Slurm seconds,
    turned into the trace's by ``scale``) and, with ``minute_limits`` (Slurm's own scheduler),
    Slurm's rules (:func:`slurm_rules`; ``slurm_t0``: the run's start on Slurm's clock).
    ``io-aware`` (Slurm's staging, ``staged`` given): a staged-in job starts on the pass after
    its stage-in, ``delay`` later, and a stage-in begins ``staged`` after the pass that picked
    the job; both twins give staged-in jobs nodes as ``staged_start`` says. Returns the ideal
    twin's schedule."""
    found, simulated = compare_with_simulation(
        plan, emulated, policy, platform, seed, model, staged_start=staged_start,
        policy_seed=policy_seed, policy_params=policy_params,
    )  # fmt: skip
    launch = delay.seconds
    stage = staged.seconds if staged is not None and model == IO_AWARE else 0.0
    tick, launch_s, stage_s = (float(scale.to_trace(s)) for s in (SLURM_PASS_S, launch, stage))
    rules = slurm_rules(plan, policy, platform, scale, model, slurm_t0) if minute_limits else None
    seen, machine, windows = rules or (plan, platform, {})
    ticked, _ = compare_with_simulation(
        seen, emulated, policy, machine, seed, model, tick=tick, launch_delay=launch_s,
        stage_delay=stage_s, staged_start=staged_start, policy_seed=policy_seed,
        policy_params={**windows, **(policy_params or {})},
        decision_tick=float(scale.to_trace(AGENT_POLL_S)),
    )  # fmt: skip
    found["tick_aware"] = {
        "tick_s": tick,
        "launch_delay_s": launch_s,
        "launch_delay_emulated_s": launch,
        "launch_delay_jobs": delay.jobs,
        "stage_delay_s": stage_s,
        "stage_delay_emulated_s": stage,
        "minute_limits": minute_limits,
        "slurm_will_run": windows.get("slurm_will_run") == "true",
        "slurm_node_reservation": windows.get("slurm_node_reservation") == "true",
        "bb_pool": machine is not platform,
        "staged_start": staged_start,
        "start_order": ticked["start_order"],
        "metrics": ticked["metrics"],
        "mean_abs_start_shift_s": ticked["mean_abs_start_shift_s"],
    }
    return found, simulated


def slurm_rules(
    plan: pd.DataFrame, policy: str, platform: Machine, scale: TimeScale, model: str, slurm_t0: float
) -> tuple[pd.DataFrame, Machine, dict[str, Any]]:
    """What the twin of Slurm's own scheduler plans with: the walltimes rounded up to whole
    minutes of Slurm's clock, as the replay submits them (the jobs still end at their exact
    limit); under alloc-only the burst buffer as the one license pool Slurm counts
    (:func:`license_pool`); and a backfilling twin's reservations where Slurm's backfill puts
    them (:func:`will_run_params`, aligned on ``slurm_t0``, the run's start on Slurm's clock)."""
    pooled = model == ALLOC_ONLY and platform.site is None
    machine = license_pool(platform) if pooled else platform
    return with_minute_limits(plan, scale), machine, will_run_params(policy, scale, slurm_t0)


def license_pool(machine: Machine) -> Machine:
    """``machine`` with its burst buffer as Slurm's license counts it: one BB node holding every
    BB node's capacity (a job's shares then fit wherever the pool's MB suffice), its compute
    nodes in one chassis (the twin counts them; only the BB placement used chassis)."""
    return dataclasses.replace(
        machine, groups=1, chassis_per_group=1, compute_per_chassis=machine.compute_count,
        compute_total=None, bb_per_chassis=1, bb_capacity_mb=machine.bb_total_mb,
    )  # fmt: skip


def will_run_params(
    policy: str, scale: TimeScale, slurm_t0: float, node_reservation: bool = SLURM_NODE_RESERVATION
) -> dict[str, Any]:
    """The tunables that make a backfilling twin reserve as Slurm's backfill does: cons_tres
    will-run's 30-s windows of Slurm's clock, in the trace's seconds, and with
    ``node_reservation`` its nodes picked and reserved as cons_tres does (none for a policy
    without them)."""
    if "slurm_will_run" not in family_of(policy).tunables:
        return {}
    window = float(scale.to_trace(SLURM_TIME_WINDOW_S))
    return {
        "slurm_will_run": "true",
        "will_run_window_s": window,
        "will_run_origin_s": float(scale.to_trace(slurm_t0 % SLURM_TIME_WINDOW_S)),
        "slurm_node_reservation": "true" if node_reservation else "false",
    }


def stage_in_for(staging: str, staged_start: str | None, twin: Policy) -> str:
    """Who begins a stage-in in the twin: Slurm itself, as soon as the pool has room, when
    Slurm's own scheduler runs the jobs (:mod:`harness.sim.slurm_stage_in`); the policy under
    the ordering agent (it releases a job when it starts it) and for a tier-choosing policy."""
    own = staging == "pool" and staged_start in ("in-order", "backfill") and not is_tiered(twin)
    return "slurm" if own else "policy"


def staged_start_for(sched: SchedulerConfig) -> str:
    """How the run's Slurm gives staged-in jobs nodes (:class:`harness.sim.staging.SlurmPasses`):
    on the nodes the ordering agent released them on, else as Slurm's scheduler orders jobs."""
    if sched.external_ordering:
        return "reserved"
    return "backfill" if sched.mode == "backfill" else "in-order"


def with_minute_limits(plan: pd.DataFrame, scale: TimeScale) -> pd.DataFrame:
    """The plan with the walltimes Slurm's own scheduler plans with: rounded up to whole
    minutes of Slurm's clock, as the replay submits them (``--time``)."""
    minutes = plan["walltime"].map(lambda w: slurm_limit_minutes(float(scale.to_slurm(w))))
    return plan.assign(walltime=scale.to_trace(60.0 * minutes.astype(float)))


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


def measured_launch_delays(results: pd.DataFrame, t0: float) -> dict[str, dict[str, Any]]:
    """The start and the stage-in delays of a run's results in Slurm's seconds, as recorded."""
    return {key: vars(measured_launch_delay(results, t0, key)) for key in ("start", "stage_in_begin")}


def recorded_launch_delays(collected: dict[str, Any]) -> tuple[LaunchDelay, LaunchDelay]:
    """The start and stage-in delays the collect step measured on Slurm's clock (what it
    recorded under ``launch_delays``; none: 0 s on 0 jobs)."""
    found = collected.get("launch_delays") or {}
    start, stage = (LaunchDelay(**found[key]) if key in found else LaunchDelay(0.0, 0)
                    for key in ("start", "stage_in_begin"))  # fmt: skip
    return start, stage


def staging_agreement(emulated: pd.DataFrame, simulated: pd.DataFrame) -> dict[str, Any]:
    """Mean stage-in and stage-out times in the trace's seconds, emulated beside the IO-Aware
    twin's (both outside the allocation, striped over the pool); with sigsleep's phases
    also the compute, checkpoint and I/O times and the dilation (no unit)."""
    out: dict[str, Any] = {}
    for col in ("stage_in_s", "stage_out_s", "compute_s", "checkpoint_s", "io_s", "dilation"):
        if col not in emulated.columns or col not in simulated.columns:
            continue
        e, s = float(emulated[col].mean()), float(simulated[col].mean())
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
