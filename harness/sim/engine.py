"""Discrete-event simulator twin of the emulation.

Two job models (``model``): ``alloc-only``, the thesis's Alloc-Only model: jobs occupy
their nodes and BB shares from start until ``start + runtime``, or are killed at
``start + walltime``; ``io-aware``, its IO-Aware model: jobs are phases whose
transfers share the platform's links, so runtimes are an outcome
(:mod:`harness.sim.io_execution`). The policy is asked what to start after every batch
of simultaneous submissions and completions. The *tick-aware twin* (``tick`` > 0) models
the emulation's known limits: Slurm invokes the policy only on its scheduling pass, so a
decision waits for the next multiple of ``tick`` (1 s of emulated time in Slurm 24.11),
and a started job begins ``launch_delay`` later (its resources held meanwhile). With
``tick`` 0 and no delay it is the ideal twin. The output is the per-job results
table the emulation also produces (see :data:`harness.model.columns.RESULT_COLUMNS`),
in the plan's own time unit, the trace's seconds.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.model.columns import PLAN_COLUMNS, RESULT_COLUMNS
from harness.model.io_models import ALLOC_ONLY, MODELS
from harness.model.staging_names import OFF_ALLOCATION
from harness.platform import Machine
from harness.policies import kernels
from harness.policies.base import Decision, Policy
from harness.policies.io_platform import on_platform, uses_io_tree
from harness.policies.state import Allocation, JobQueue, RunningJob, Topology
from harness.sim.events import next_pass
from harness.sim.fixed_ends import FixedEnds
from harness.sim.io_execution import IOExecution
from harness.sim.io_mode import io_columns, io_execution
from harness.sim.machine import SimMachine, SimulationError, bb_map_string
from harness.sim.pool_tiers import PoolTiers, pool_tier_setup
from harness.sim.staged_runs import policy_off_allocation
from harness.sim.staging import OutsideStaging, SlurmPasses, check_staging, outside_execution
from harness.sim.tiers import TierExecution, is_tiered, tier_setup

DEFAULT_IO_SEED = 2020  # the plan's default seed (harness.workload.plan.DEFAULT_SEED)


@dataclass
class SimulationResult:
    policy: str
    jobs: pd.DataFrame
    decisions: pd.DataFrame  # one row per policy call: time, queue, running, started, latency_s
    wall_time_s: float
    model: str = ALLOC_ONLY
    link_bytes: dict[str, float] | None = None  # io-aware: bytes carried by every link
    bandwidth: pd.DataFrame | None = None  # io-aware: time, pfs_bps, bb_bps at every change

    @property
    def simulated_span_s(self) -> float:
        if self.jobs.empty:
            return 0.0
        return float(self.jobs["end"].max() - self.jobs["submit"].min())


class _Plan:
    """The workload as columns, sorted by submission."""

    def __init__(self, plan: pd.DataFrame, topology: Topology) -> None:
        missing = [c for c in PLAN_COLUMNS if c not in plan.columns]
        if missing:
            raise ValueError(f"plan lacks columns {missing}")
        df = plan.sort_values(["submit", "job_id"], kind="stable").reset_index(drop=True)
        self.df = df
        self.job_id = df["job_id"].to_numpy(np.int64)
        self.submit = df["submit"].to_numpy(np.float64)
        self.runtime = df["runtime"].to_numpy(np.float64)
        self.walltime = df["walltime"].to_numpy(np.float64)
        self.nodes = df["nodes"].to_numpy(np.int64)
        self.share = df["bb_per_node_mb"].to_numpy(np.int64)
        if len(np.unique(self.job_id)) != len(self.job_id):
            raise ValueError("job ids in the plan are not unique")
        impossible = [
            int(j) for j, n, s, w in zip(self.job_id, self.nodes, self.share, self.walltime, strict=True)
            if not topology.can_ever_run(int(n), int(s)) or w <= 0
        ]  # fmt: skip
        if impossible:
            raise ValueError(f"{len(impossible)} jobs can never run on this platform, e.g. {impossible[:5]}")

    def __len__(self) -> int:
        return len(self.job_id)

    def queue(self, rows: np.ndarray) -> JobQueue:
        return JobQueue(
            self.job_id[rows], self.submit[rows], self.walltime[rows], self.nodes[rows], self.share[rows]
        )


def simulate(
    plan: pd.DataFrame,
    policy: Policy,
    platform: Machine,
    *,
    model: str = ALLOC_ONLY,
    io_seed: int = DEFAULT_IO_SEED,
    tick: float = 0.0,
    launch_delay: float = 0.0,
    staging: str = "inside",
    tiers: bool = False,
    stage_delay: float = 0.0,
    staged_start: str | None = None,
    decision_tick: float | None = None,
    stage_in: str = "policy",
) -> SimulationResult:
    """Run ``policy`` on ``plan`` (columns of :data:`PLAN_COLUMNS`) and return the schedule.

    ``io-aware`` takes the plan's I/O columns, or draws them with ``io_seed``. ``tick``
    and ``launch_delay`` are in the plan's (the trace's) seconds.
    ``staging`` (io-aware): ``inside`` the allocation, ``outside`` it, or ``pool``
    (outside, striped over every BB node as Slurm's pool; :mod:`harness.sim.staging`);
    off the allocation, ``launch_delay`` is the time from the pass after a job's stage-in
    to its start and ``stage_delay`` that from the pass that picked it to its stage-in;
    ``staged_start`` how staged-in jobs get nodes and ``stage_in`` who begins a stage-in
    (:class:`~harness.sim.staging.SlurmPasses`); ``decision_tick`` (default ``tick``) how
    often the policy runs there, when it is not Slurm's pass (the agent's poll).
    ``tiers`` runs storage tiers for any policy, as always for a tier-choosing one:
    Lackner's (:mod:`harness.sim.tiers`) inside the allocation, a live run's in a pool.
    """
    _check_options(tick, launch_delay, stage_delay, model, staging, stage_in)
    topology = Topology.from_platform(platform)
    tiered = tiers or is_tiered(policy)  # a tier per job: Lackner's (inside) or the live one (pool)
    pool_tiers = tiered and staging == "pool"  # harness.sim.pool_tiers: the live run's I/O
    if tiered:
        plan, policy = _tier_setup(plan, policy, platform, model, staging, io_seed)
    policy = _on_io_tree(policy, plan, platform)
    jobs = _Plan(plan, topology)
    machine = None
    execution: _AllocOnly | IOExecution | TierExecution
    twin = Twin(tick, launch_delay)
    if staging in OFF_ALLOCATION:
        order = staged_start or ("backfill" if staging == "pool" else "in-order")
        passes = SlurmPasses(tick, stage_delay, launch_delay, order, stage_in)
        kind = PoolTiers if pool_tiers else OutsideStaging
        execution, machine = outside_execution(jobs.df, platform, topology, seed=io_seed,
                                               pool=staging == "pool", passes=passes, kind=kind)  # fmt: skip
        policy = policy_off_allocation(policy, execution, machine, jobs.queue)
        # the execution delays the stage-in and the start itself
        twin = Twin(tick if decision_tick is None else decision_tick, 0.0)
    elif tiered:
        execution = TierExecution(jobs.df, platform, policy)
    else:
        execution = _execution(model, jobs, platform, topology, io_seed)
    kernels.warm_up()  # compile before the clock starts: not part of any decision's latency
    began = time.perf_counter()
    sim = _Run(jobs, policy, topology, execution, twin, machine)
    sim.run()
    return _result(sim, platform, time.perf_counter() - began, model)


def _tier_setup(
    plan: pd.DataFrame, policy: Policy, platform: Machine, model: str, staging: str, seed: int
) -> tuple[pd.DataFrame, Policy]:
    """The plan with the jobs' I/O and the tier policy knowing it: the live run's in a pool,
    Lackner's inside the allocation."""
    if staging == "outside":
        raise ValueError(
            "storage tiers stage inside the allocation or in Slurm's pool: drop --staging outside"
        )
    if staging == "pool":
        return pool_tier_setup(plan, policy, platform, seed)
    return tier_setup(plan, policy, platform, model, seed)


def _on_io_tree(policy: Policy, plan: pd.DataFrame, platform: Machine) -> Policy:
    """Herbein's schedulers on the platform's I/O tree with the plan's rates, as the live agent
    runs them; without a tree, on their own CTS-1 links (Herbein's figures)."""
    if uses_io_tree(policy) and platform.io.hierarchy is not None:
        return on_platform(policy, platform, _pfs_rates(plan))
    return policy


def _pfs_rates(plan: pd.DataFrame) -> dict[int, float]:
    """Each job's per-node PFS rate (Herbein's ``pfs_mbps_per_node``); {} without the column."""
    if "pfs_mbps_per_node" not in plan.columns:
        return {}
    return dict(
        zip(
            plan["job_id"].astype(int).tolist(), plan["pfs_mbps_per_node"].astype(float).tolist(), strict=True
        )
    )


def _result(sim: _Run, platform: Machine, wall: float, model: str) -> SimulationResult:
    table = sim.results(platform)
    decisions = pd.DataFrame(sim.decision_log, columns=["time", "queue", "running", "started", "latency_s"])
    execution, name = sim.execution, sim.policy.name
    if not isinstance(execution, IOExecution):
        return SimulationResult(name, table, decisions, wall, model)
    names = execution.net.network.names
    carried = dict(zip(names, execution.engine.link_bytes.tolist(), strict=True))
    timeline = pd.DataFrame(execution.timeline, columns=["time", "pfs_bps", "bb_bps"])
    return SimulationResult(name, table, decisions, wall, model, carried, timeline)


@dataclass(frozen=True)
class Twin:
    """The emulation's limits the tick-aware twin models (both 0: the ideal twin)."""

    tick: float = 0.0  # the policy runs only at multiples of this
    launch_delay: float = 0.0  # from the decision to the job's start

    def pass_at(self, now: float) -> float:
        """The first scheduling pass at or after ``now``."""
        return next_pass(now, self.tick)


def _check_options(
    tick: float, launch_delay: float, stage_delay: float, model: str, staging: str, stage_in: str
) -> None:
    if model not in MODELS:
        raise ValueError(f"unknown job model '{model}' (models: {', '.join(MODELS)})")
    check_staging(staging, model, stage_in)
    for name, value in (("tick", tick), ("launch delay", launch_delay), ("stage delay", stage_delay)):
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {value}")
    off = staging in OFF_ALLOCATION
    if launch_delay > 0 and model != ALLOC_ONLY and not off:
        raise ValueError(
            "a launch delay is modelled with the alloc-only job model or staging off the allocation"
        )
    if stage_delay > 0 and not off:
        raise ValueError("a stage delay needs staging off the allocation (outside or pool)")


def _execution(
    model: str, jobs: _Plan, platform: Machine, topology: Topology, seed: int
) -> _AllocOnly | IOExecution:
    if model == ALLOC_ONLY:
        return _AllocOnly(jobs)
    return io_execution(jobs.df, platform, topology.chassis_of_compute, seed=seed)


class _AllocOnly(FixedEnds):
    """A job holds its resources for min(runtime, walltime), then ends."""

    def __init__(self, jobs: _Plan) -> None:
        super().__init__(jobs.runtime, jobs.walltime)
        self.jobs = jobs

    def start(self, row: int, now: float, compute: tuple[int, ...], bb: tuple[int, ...]) -> None:
        self.ends_at(row, now + min(float(self.jobs.runtime[row]), float(self.jobs.walltime[row])))


class _Run:
    def __init__(
        self,
        jobs: _Plan,
        policy: Policy,
        topology: Topology,
        execution: _AllocOnly | IOExecution | TierExecution,
        twin: Twin | None = None,
        machine: SimMachine | None = None,
    ) -> None:
        self.twin = twin or Twin()
        self.jobs = jobs
        self.policy = policy
        self.machine = machine or SimMachine(topology)
        self.row_of = {int(j): i for i, j in enumerate(jobs.job_id)}
        self.queued = np.empty(0, dtype=np.int64)  # plan rows, in submission order
        self.execution = execution
        self.start = np.full(len(jobs), np.nan)
        self.alloc: list[Allocation | None] = [None] * len(jobs)
        self.memo: dict = {}
        self.decision_log: list[tuple[float, int, int, int, float]] = []
        self.every_event = policy.needs_every_event

    def run(self) -> None:
        next_submit = 0
        n = len(self.jobs)
        pending = math.inf  # the scheduling pass that will see the last change
        while next_submit < n or self.execution.busy() or pending < math.inf:
            now = min(self._next_time(next_submit), pending)
            ended = self.execution.advance(now)
            for row in ended:
                self.machine.finish(int(self.jobs.job_id[row]))
            first = next_submit
            while next_submit < n and self.jobs.submit[next_submit] <= now:
                next_submit += 1
            if next_submit > first:
                self.queued = np.concatenate((self.queued, np.arange(first, next_submit)))
            if next_submit > first or ended:  # else a phase of a running job changed: nothing a policy sees
                pending = min(pending, self.twin.pass_at(now))
            if now < pending:
                continue
            pending = math.inf
            if len(self.queued) and (self.every_event or self._something_fits()):
                self._decide(now)
        if len(self.queued):
            raise SimulationError(f"{len(self.queued)} jobs never started (policy {self.policy.name})")

    def _next_time(self, next_submit: int) -> float:
        t_submit = self.jobs.submit[next_submit] if next_submit < len(self.jobs) else np.inf
        return float(min(t_submit, self.execution.next_time()))

    def _something_fits(self) -> bool:
        """Whether any queued job fits the free resources now: otherwise no policy can start one."""
        m = self.machine
        nodes = self.jobs.nodes[self.queued]
        cand = np.flatnonzero(nodes <= m.free_count)
        if len(cand) == 0:
            return False
        shares = np.maximum(self.jobs.share[self.queued[cand]], 1)
        nodes = nodes[cand]
        free_bb = np.asarray(m.free_bb, dtype=np.int64)
        # sum_b floor(free_b / s) lies in (total / s - B, total / s]: decide most jobs
        # from the total alone and count per BB node only for the rest.
        whole = free_bb.sum() / shares
        if np.any(whole - len(free_bb) >= nodes):
            return True
        unsure = np.flatnonzero(whole >= nodes)
        slots = (free_bb[None, :] // shares[unsure, None]).sum(axis=1)
        return bool(np.any(slots >= nodes[unsure]))

    def _decide(self, now: float) -> None:
        queue = self.jobs.queue(self.queued)
        state = self.machine.state(self.memo)
        t0 = time.perf_counter()
        decision = self.policy.decide(state, queue, now)
        latency = time.perf_counter() - t0
        if decision.memo is not None:
            self.memo = dict(decision.memo)
        started = self._apply(decision, now)
        self.decision_log.append((now, len(queue), len(state.running), started, latency))

    def _apply(self, decision: Decision, now: float) -> int:
        if not decision.starts:
            return 0
        queued_rows = set(self.queued.tolist())
        done: list[int] = []
        for s in decision.starts:
            row = self.row_of.get(s.job_id)
            if row is None or row not in queued_rows or row in done:
                raise SimulationError(f"{self.policy.name} started job {s.job_id}, which is not waiting")
            if len(s.allocation.compute) != self.jobs.nodes[row]:
                raise SimulationError(f"job {s.job_id}: allocation size differs from its request")
            walltime, share = float(self.jobs.walltime[row]), int(self.jobs.share[row])
            if isinstance(self.execution, TierExecution):  # the tier sets both
                walltime, share = self.execution.hold(row, s)
            elif isinstance(self.execution, PoolTiers):  # the tier sets the BB share
                share = self.execution.hold(row, s, share)
            begin = now + self.twin.launch_delay
            job = RunningJob(s.job_id, now, begin + walltime, share, s.allocation)
            self.machine.start(job)
            self.execution.start(row, begin, s.allocation.compute, s.allocation.bb)
            self.start[row], self.alloc[row] = begin, s.allocation
            done.append(row)
        if done:
            keep = np.ones(len(self.queued), dtype=bool)
            for row in done:  # few starts per decision: cheaper than np.isin
                keep &= self.queued != row
            self.queued = self.queued[keep]
        return len(done)

    def results(self, platform: Machine) -> pd.DataFrame:
        j, end = self.jobs, self.execution.end
        killed = self.execution.timeout
        start, allocs = self.start, self.alloc
        if isinstance(self.execution, OutsideStaging):  # the run on the nodes, not the decision
            start, allocs = self.execution.run_start, self.execution.allocation
        table = pd.DataFrame(
            {
                "job_id": j.job_id,
                "submit": j.submit,
                "start": start,
                "end": end,
                "runtime": end - start,
                "walltime": j.walltime,
                "nodes": j.nodes,
                "bb_per_node_mb": j.share,
                "bb_nodes": [bb_map_string(platform, a) if a else "" for a in allocs],
                "status": np.where(killed, "timeout", "completed"),
            },
            columns=list(RESULT_COLUMNS),
        )
        if isinstance(self.execution, TierExecution | PoolTiers):
            table = self.execution.annotate(table)
        if isinstance(self.execution, OutsideStaging):
            for name, values in self.execution.result_columns().items():
                table[name] = values
        elif isinstance(self.execution, IOExecution):
            for name, values in io_columns(self.execution, self.start, self.alloc).items():
                table[name] = values
        return table
