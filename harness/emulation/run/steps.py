"""The steps of a run, in order: plan, cluster, replay, collect, fidelity, metrics,
manifest, report. Each reads what it needs from the run directory (or from what earlier
steps recorded in ``steps.json``) and writes its own files there, so a run can be resumed
after the last step that completed (:class:`harness.emulation.run.experiment.Experiment` records them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from harness.analysis.metrics import summary
from harness.cluster.base import ClusterBackend
from harness.emulation.collect.fidelity import (
    compare_with_both_twins,
    measured_launch_delays,
    simulator_twin,
    staged_start_for,
)
from harness.emulation.collect.preemption import preemption_section
from harness.emulation.collect.results import (
    AGREEMENT_S,
    agent_copies,
    build_results,
    cross_check,
    decision_stats,
    finished,
    lag_stats,
)
from harness.emulation.collect.slurm_view import slurm_records
from harness.emulation.head.faultlog import fault_section, poke_warning
from harness.emulation.head.launch import HeadRun
from harness.emulation.head.leftovers import leftover_advice
from harness.emulation.head.progress import RunObserver
from harness.emulation.head.site_requests import check_site_plan, uses_site_requests
from harness.emulation.head.watch import HeadProcessDied
from harness.emulation.iolive.plugin import LiveIO
from harness.emulation.plugin import Collected, RunPlugin
from harness.emulation.run.hostload import LoadSampler, said_load
from harness.emulation.run.io_tree import with_pfs_rates
from harness.emulation.run.manifest import write_manifest
from harness.emulation.run.settle import settle_before_replay
from harness.emulation.run.site_run import SiteReplay, add_site_users, site_replay
from harness.emulation.run.slurm_time import (
    collected_delays,
    collected_results,
    plan_on_clock,
    results_in_trace_time,
)
from harness.emulation.run.specs import RunOptions, plan_for
from harness.model import rundir
from harness.model.atomic import atomic_write_csv, atomic_write_parquet
from harness.model.io_models import IO_AWARE
from harness.model.jsonio import append_jsonl, read_json, read_jsonl, write_json
from harness.model.records import read_job_records, read_submissions
from harness.model.timescale import TimeScale
from harness.policies.tunables import parse_assignments
from harness.slurm.config import SchedulerConfig
from harness.slurm.lost_launches import recheck_lost_launches
from harness.slurm.passes import PassExits, cut_by_time
from harness.workload.io import HerbeinIO
from harness.workload.plan import load_plan, save_plan
from harness.workload.priority import assign, parse_priority

Progress = Callable[[str], None]
Prepared = tuple[pd.DataFrame, dict[str, Any]]  # a plan and its manifest


@dataclass
class RunContext:
    """What every step of one run shares."""

    opts: RunOptions
    run_dir: Path
    run_id: str
    backend: ClusterBackend
    sched: SchedulerConfig
    say: Progress
    started_at: str
    prepared: Prepared | None = None  # the plan the estimate before the run prepared (used once)
    resumed: bool = False  # taken up again (``harness run --resume``)
    site: SiteReplay | None = None  # whose jobs they are (the plan's users, or emu), once the plan is made

    @property
    def uses_agent(self) -> bool:
        return self.sched.external_ordering

    @property
    def site_users(self) -> bool:
        """Whether the jobs are submitted as the plan's users (a site's history), not as emu."""
        return self.site is not None and self.site.users is not None

    @property
    def plugins(self) -> list[RunPlugin]:
        return plugins_for(self.opts)

    @property
    def scale(self) -> TimeScale:
        """How the trace's seconds map to Slurm's on this run's clock (identity on a virtual one)."""
        return TimeScale(self.opts.workload.shrink)

    def plan(self) -> tuple[pd.DataFrame, dict[str, Any]]:
        """The run's plan, in the trace's time."""
        return load_plan(self.run_dir / rundir.PLAN)

    def results(self) -> pd.DataFrame:
        """``results.parquet``, in the trace's time."""
        return collected_results(self.run_dir, self.found("collect"), self.scale, self.plugins)

    def replayed_plan(self) -> pd.DataFrame:
        """The plan as the head node replays it, in Slurm's seconds."""
        return load_plan(self.run_dir / rundir.REPLAY_PLAN)[0]

    def found(self, step: str) -> dict[str, Any]:
        """What a completed step recorded ({} if it has not run)."""
        return rundir.done_steps(self.run_dir).get(step, {}).get("info", {})

    def verdict(self) -> tuple[bool, str]:
        """(complete, why not) from the replay's verdict and the records collected."""
        replay, collected = self.found("replay"), self.found("collect")
        if not replay.get("complete"):
            return False, str(replay.get("reason") or "the replay did not run")
        missing, rejected = collected.get("missing", 0), collected.get("rejected", 0)
        if missing or rejected:
            return False, f"{missing} job(s) have no record, {rejected} rejected by Slurm"
        return True, ""


# -- the steps ------------------------------------------------------------------------------


def make_plan(ctx: RunContext) -> dict[str, Any]:
    """The plan to replay (in the trace's time): a trace prepared now, or a stored plan."""
    spec = ctx.opts.workload
    plan, manifest = ctx.prepared or plan_for(spec, ctx.backend.platform)
    for plugin in ctx.plugins:
        plan, extra = plugin.plan(plan, ctx.opts, ctx.backend.platform)
        manifest = {**manifest, **extra}
    if uses_site_requests(plan.columns, ctx.backend.platform.machine.site):  # (before the cluster)
        check_site_plan(plan, ctx.backend.platform.machine.site)  # type: ignore[arg-type]
    fit_to_plan(ctx, plan)  # (before the cluster: a plan with users refused here starts nothing)
    if ctx.sched.bandwidth_license:  # each job's PFS drain rate, held as a license
        plan = HerbeinIO().apply(plan, seed=spec.seed)
    if ctx.uses_agent:  # Herbein's schedulers: each job's drain rate, on the platform's I/O tree
        plan, rejected = with_pfs_rates(
            plan, ctx.opts.replay.policy, ctx.backend.platform, spec.seed, ctx.say
        )
        manifest = {**manifest, **rejected}
    model = parse_priority(spec.priority)
    if model.enabled:  # the high-priority jobs go to the urgent partition (replay)
        plan, manifest = assign(plan, model, seed=spec.seed), {**manifest, "priority": str(model)}
    save_plan(plan, manifest, ctx.run_dir / rundir.PLAN)
    ctx.say(f"run {ctx.run_id}: {len(plan)} jobs, shrink {spec.shrink:g}, policy {ctx.opts.replay.policy}")
    # what `harness run --resume` needs to take the run up again
    return {"jobs": len(plan), "run_id": ctx.run_id, "options": ctx.opts.as_dict()}


def fit_to_plan(ctx: RunContext, plan: pd.DataFrame) -> None:
    """Whose jobs the run submits and, with the site's users, its priority (site_run)."""
    ctx.site = site_replay(plan, ctx.opts, ctx.sched, ctx.backend, ctx.say)
    ctx.sched = ctx.site.sched


def bring_up_cluster(ctx: RunContext) -> dict[str, Any]:
    ctx.backend.prepare(ctx.sched, progress=ctx.say)
    info: dict[str, Any] = {"backend": ctx.opts.cluster.backend, "name": ctx.backend.name}
    if ctx.site is not None and ctx.site.users is not None:  # (a Docker cluster: users_to_replay checked)
        info["site_users"] = add_site_users(ctx.backend, ctx.site.users, ctx.say)  # type: ignore[arg-type]
    return info


def replay(ctx: RunContext) -> dict[str, Any]:
    """The replay and agent on the head node until the run is over. When they die instead,
    the step is not done: the death is noted in ``head_deaths.jsonl`` (its fault events are the
    report's once the run completes) and :class:`HeadProcessDied` stops the run, to be resumed."""
    if ctx.resumed:  # a host reboot or a dead controller container stopped what it needs
        ctx.backend.revive(ctx.say)
        recheck_lost_launches(ctx.backend.exec, ctx.say, rate=ctx.opts.replay.speedup or 1.0)
    head = HeadRun(
        ctx.backend, ctx.run_id, ctx.opts.replay, ctx.opts.workload.seed, ctx.uses_agent, ctx.say,
        quiet=ctx.opts.quiet, verbose=ctx.opts.verbose, backfill=ctx.sched.mode == "backfill",
        site_users=ctx.site_users, live_io=ctx.opts.workload.model == IO_AWARE,
    )  # fmt: skip
    path = ctx.run_dir / rundir.REPLAY_PLAN
    plan = plan_on_clock(*ctx.plan(), ctx.scale, ctx.plugins, ctx.backend.platform, path)
    ctx.backend.put(ctx.run_dir / rundir.REPLAY_PLAN, f"{head.shared}/{rundir.PLAN}")
    head.observer = RunObserver(
        ctx.run_dir, plan, ctx.backend.platform, ctx.scale, ctx.opts.replay.interim_every
    )
    head.count_passes()
    settled = settle_before_replay(ctx.opts.replay.events, ctx.opts.cluster.backend, ctx.say)
    with LoadSampler() as load:
        try:
            complete, reason = head.run(plan)
        except HeadProcessDied as exc:
            append_jsonl(ctx.run_dir / rundir.HEAD_DEATHS, {"why": str(exc), "events": head.monitor.events})
            raise
    head.count_passes()
    host_load = said_load(load.summary(), wall_clock=not ctx.opts.replay.events, say=ctx.say)
    if settled is not None:
        host_load["settle"] = asdict(settled)
    earlier = [event for death in read_jsonl(ctx.run_dir / rundir.HEAD_DEATHS) for event in death["events"]]
    return {
        "complete": complete, "reason": reason, "fault_events": [*earlier, *head.monitor.events],
        "host_load": host_load,
        "slurm_passes": head.passes.passes(), "slurm_stats_resets": head.passes.resets,
        "release_holds": asdict(head.hold_tally) if head.hold_tally is not None else None,
    }  # fmt: skip


def add_run_passes(ctx: RunContext, sections: dict[str, Any]) -> None:
    """How Slurm's passes ended during the replay (``slurm_passes``); says so when some were cut
    at a time limit. At a fixed speed-up also what the release holds did (``release_holds``)."""
    found = ctx.found("replay")
    if found.get("release_holds"):
        sections["release_holds"] = found["release_holds"]
    passes: PassExits | None = found.get("slurm_passes")
    if passes is None:
        return
    if (cut := cut_by_time(passes)) is not None:
        ctx.say(cut)
    sections["slurm_passes"] = {**passes, "stats_resets": found.get("slurm_stats_resets", 0)}


def collect(ctx: RunContext) -> dict[str, Any]:
    """Copy what the head node wrote; build the per-job results, cross-check them with Slurm (in
    Slurm's seconds), and store them in the trace's time."""
    raw, shared = ctx.run_dir / rundir.RAW_DIR, f"{rundir.SHARED_RUNS}/{ctx.run_id}"
    raw.mkdir(exist_ok=True)
    for plugin in ctx.plugins:
        plugin.before_collect(ctx.backend)
    for name in rundir.RAW_FILES:
        ctx.backend.get(f"{shared}/{name}", raw / name)
    ctx.backend.collect_slurm_files(ctx.run_dir / rundir.SLURM_DIR)
    t0 = float(read_json(raw / rundir.STATUS).get("t0", 0.0))
    submissions = read_submissions(raw / rundir.SUBMISSIONS)
    records = read_job_records(raw / rundir.SIGSLEEP_LOG)
    ran = [*submissions, *agent_copies(submissions, records)]  # with the agent's slow-tier copies
    slurm_jobs, source = slurm_records(ctx.backend, ctx.run_dir / rundir.SLURM_DIR, ran)
    results = build_results(ctx.replayed_plan(), submissions, records, t0, slurm_jobs)
    collected = Collected(
        ctx.opts, ctx.backend, ctx.sched, raw, t0, submissions, records, ran, ctx.run_dir / rundir.SLURM_DIR,
        ctx.scale,
    )  # fmt: skip
    for plugin in ctx.plugins:
        results = plugin.enrich(results, collected)
    bb_license = ctx.backend.platform.deployment.bb_license
    staged = ctx.sched.burst_buffer == "lua"  # Slurm holds the pool, not a license
    tolerance = AGREEMENT_S * (ctx.opts.replay.speedup or 1.0)  # a real launch delay, on the run's clock
    ahead = {int(s["job_id"]) for s in submissions if "sent" in s}  # sbatch --begin (the event clock)
    check = cross_check(results, slurm_jobs, t0, source, bb_license, staged, tolerance, ahead).as_dict()
    for plugin in ctx.plugins:
        parts = plugin.check(results, slurm_jobs, collected)
        check.update(parts)
        check["ok"] = check["ok"] and all(part.get("ok", True) for part in parts.values())
    sections: dict[str, Any] = {"submission": lag_stats(submissions), "cross_check": check}
    add_run_passes(ctx, sections)
    events = ctx.found("replay").get("fault_events", [])
    stopped = str(ctx.found("replay").get("reason", ""))
    faults = fault_section(
        results, submissions, events, read_json(raw / rundir.STATUS), t0, slurm_jobs, stopped
    )
    if warning := poke_warning(faults):
        ctx.say(warning)
    if events or faults["n_affected"] or faults["resumes"] or warning:
        sections["faults"] = faults
    if ctx.uses_agent:
        sections["agent"] = decision_stats(read_jsonl(raw / rundir.DECISIONS))
    delays = measured_launch_delays(finished(results), t0)  # on Slurm's clock
    results = results_in_trace_time(results, ctx.scale, ctx.plugins)
    atomic_write_parquet(ctx.run_dir / rundir.RESULTS, results)
    atomic_write_csv(ctx.run_dir / rundir.RESULTS_CSV, results)
    for plugin in ctx.plugins:
        sections.update(plugin.sections(results))
    counts = results["status"].value_counts()
    return {
        "t0": t0,
        "launch_delays": delays,
        rundir.TIMES: rundir.TRACE_TIME,
        "missing": int(counts.get("missing", 0)),
        "rejected": int(counts.get("rejected", 0)),
        "sections": sections,
    }


def fidelity(ctx: RunContext) -> dict[str, Any]:
    """With ``--compare-sim``: the same plan in the simulator under the policy's twin."""
    ran = finished(ctx.results())
    if not (ctx.opts.replay.compare_sim and len(ran)):
        return {}
    twin = simulator_twin(ctx.opts.replay.policy)
    spec = ctx.opts.workload
    start_delay, stage_delay = collected_delays(ctx.run_dir, ctx.found("collect"))
    found, simulated = compare_with_both_twins(
        ctx.plan()[0], ran, twin, ctx.backend.platform, ctx.scale, start_delay,
        seed=spec.seed, model=spec.model, minute_limits=not ctx.uses_agent, staged=stage_delay,
        staged_start=staged_start_for(ctx.sched), policy_seed=ctx.opts.replay.policy_seed,
        policy_params=parse_assignments(ctx.opts.replay.policy_params),
        slurm_t0=float(ctx.found("collect").get("t0", 0.0)),  # Slurm's will-run windows align on it
    )  # fmt: skip
    atomic_write_parquet(ctx.run_dir / rundir.SIMULATION_DIR / rundir.RESULTS, simulated)  # makes the folder
    tau, wait = found["start_order"]["kendall_tau"], found["metrics"]["mean_wait"]
    ticked = found["tick_aware"]["metrics"]["mean_wait"]
    ctx.say(
        f"fidelity vs simulation ({twin}): start-order Kendall tau {tau:.3f}, mean wait "
        f"{wait['emulated']:.0f} s emulated vs {wait['simulated']:.0f} s ideal twin "
        f"({wait['rel_diff']:+.1%}), "
        f"{ticked['simulated']:.0f} s tick-aware twin ({ticked['rel_diff']:+.1%})"
    )
    if ctx.opts.replay.slurm_settings:  # only an experiment's [screen] gives the twin some of them
        found["settings_not_in_twins"] = unseen = [key for key, _ in ctx.opts.replay.slurm_settings]
        ctx.say(f"the twins ran with the policy's own settings, not with {', '.join(unseen)}")
    return {"fidelity": found}


def preemption(ctx: RunContext) -> dict[str, Any]:
    """With a priority model: the suspensions, emulated and predicted
    (harness.emulation.collect.preemption)."""
    if not parse_priority(ctx.opts.workload.priority).enabled:
        return {}
    raw = ctx.run_dir / rundir.RAW_DIR
    section = preemption_section(
        ctx.run_dir, ctx.plan()[0], ctx.results(), read_job_records(raw / rundir.SIGSLEEP_LOG),
        float(ctx.found("collect").get("t0", 0.0)), ctx.backend.platform, ctx.scale,
        ctx.sched.preempt_suspend,
    )  # fmt: skip
    emu, twin = section["emulated"], section["twin"]
    ctx.say(
        f"suspensions: {emu['suspensions']} emulated ({emu['suspended_jobs']} jobs), "
        f"{twin['suspensions']} predicted by the twin ({twin['suspended_jobs']} jobs)"
    )
    return {"preemption": section}


def measure(ctx: RunContext) -> dict[str, Any]:
    """``metrics.json``: the summary (the trace's time) and the sections of collect and fidelity."""
    ran = finished(ctx.results())
    metrics = summary(ran, ctx.backend.platform) if len(ran) else {}
    metrics.update(ctx.found("collect").get("sections", {}))
    metrics.update(ctx.found("fidelity"))
    metrics.update(ctx.found("preemption"))
    if ctx.found("replay").get("host_load"):
        metrics["host_load"] = ctx.found("replay")["host_load"]
    write_json(ctx.run_dir / rundir.METRICS, metrics)
    return {"jobs": len(ran)}


def manifest(ctx: RunContext) -> dict[str, Any]:
    complete, reason = ctx.verdict()
    write_manifest(ctx, complete, reason)
    return {"complete": complete}


def report(ctx: RunContext) -> dict[str, Any]:
    from harness.analysis.report import write_report  # matplotlib: only when a report is written

    write_report(ctx.run_dir, ctx.opts.figure_formats)
    check = ctx.found("collect").get("sections", {}).get("cross_check", {})
    if check and not check.get("ok"):
        ctx.say(
            f"cross-check: {check['n_disagreements']} disagreement(s) outside {check.get('accepted')}, "
            f"{len(check['missing_in_slurm'])} job(s) missing in Slurm's records, "
            f"{len(check['missing_in_log'])} missing in the sigsleep log"
        )
    complete, reason = ctx.verdict()
    if not complete:
        ctx.say(
            f"INCOMPLETE run ({reason}); everything collected so far is in {ctx.run_dir}. "
            f"Leftover jobs: {leftover_advice(ctx.opts.cluster.backend, ctx.backend.name, ctx.site_users)}; "
            "or start again with `harness run`."
        )
    return {}


PLUGINS: tuple[RunPlugin, ...] = (LiveIO(),)


def plugins_for(opts: RunOptions) -> list[RunPlugin]:
    """The plug-ins a run with ``opts`` uses, in the order of :data:`PLUGINS`."""
    return [plugin for plugin in PLUGINS if plugin.wanted(opts)]


STEPS: tuple[tuple[str, Callable[[RunContext], dict[str, Any]]], ...] = (
    ("plan", make_plan),
    ("cluster", bring_up_cluster),
    ("replay", replay),
    ("collect", collect),
    ("fidelity", fidelity),
    ("preemption", preemption),
    ("metrics", measure),
    ("manifest", manifest),
    ("report", report),
)
