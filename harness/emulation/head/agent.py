"""The ordering agent: the project's policies deciding which held jobs Slurm starts.

Runs on the head node beside slurmctld. With external ordering, ``job_submit.lua`` holds
every job at submission (priority 0). On every change of the queue or of the running set
(looked at as soon as the replay has made a burst of submissions or a job's own record says
it ended, :mod:`~harness.emulation.head.wakeup`, else at a short poll) the agent rebuilds the
policy's :class:`ClusterState` (its own map of BB shares to BB nodes for the jobs it
started; a job in Slurm's ``STAGE_OUT``, nodes released and burst buffer still held, is
kept as holding its BB shares only, ``holding_bb``, until it leaves the queue, as the
simulator's twin counts a staging job), calls the policy, and enforces the decision: each
chosen job gets the policy's compute nodes as its node list and is released, so Slurm
starts exactly it, there, at its next scheduling pass. Every call is logged (time, queue,
running, staging out, started, latency, why it looked).

The job's walltime and per-node BB request travel in its comment (set by the replay,
:mod:`harness.slurm.jobspec`), because Slurm keeps time limits in whole minutes and
licenses only as a total.
"""

from __future__ import annotations

import functools
import json
import signal
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.emulation.head.wakeup import POLL, Wakeup
from harness.emulation.iolive.tiers import move_to_slow_tier
from harness.model.atomic import atomic_write_text
from harness.model.hostlist import compress_hostlist, expand_hostlist
from harness.model.jsonio import JsonFileError, read_json
from harness.model.rundir import STATUS
from harness.model.timescale import TimeScale
from harness.platform import Machine
from harness.policies import kernels
from harness.policies.base import Decision, Policy
from harness.policies.io_platform import on_platform, platform_tree, uses_io_tree
from harness.policies.iotree import link_use
from harness.policies.state import Allocation, ClusterState, JobQueue, QueuedJob, RunningJob, Topology
from harness.policies.tiers import LPS, JobIo, TierRates, io_of_words
from harness.slurm.client import SlurmClient, SlurmCommandError, SlurmJob
from harness.slurm.jobspec import decode_comment

DEFAULT_POLL_S = 0.1
UNKNOWN_WALLTIME_S = 365 * 86400.0


class Agent:
    def __init__(
        self,
        policy: Policy,
        platform: Machine,
        client: SlurmClient,
        log_path: Path | None = None,
        clock: Callable[[], float] = time.time,
        status_path: Path | None = None,
        in_step: Callable[[], bool] = lambda: True,
        origin: Callable[[], float | None] | None = None,
        wakeup: Wakeup | None = None,
    ) -> None:
        """``clock``: the run's clock (a virtual clock's ``now`` on one); ``origin``: on a virtual
        clock, the replay's t0 once it is known (the policy then decides in the trace's own
        seconds, as its twin does); ``status_path``: where
        to say, after each look, when it began (the event clock moves only once the agent has
        looked at, and acted on, the cluster's latest state); ``in_step``: whether Slurm is at
        the clock's instant (not while an event clock's page leads the daemons: the instant's
        jobs are still ending, and a look would decide on half of it); ``wakeup``: what it
        waits on between looks besides its poll (new submissions, a job's end)."""
        self.in_step = in_step
        self.wakeup = wakeup
        self.woke = POLL  # why the latest look came (logged with its decision)
        # Herbein's schedulers on the platform's I/O tree (NoIoTreeError without one)
        self.policy = on_platform(policy, platform)
        self.io_tree = platform_tree(platform, policy.name) if self.policy is not policy else None
        self.status_path = status_path
        self.platform = platform
        self.topology = Topology.from_platform(platform)
        self.client = client
        self.log_path = log_path
        self.clock = clock
        self.t0 = clock()
        self.origin = origin
        # Slurm job id <-> the id the policy knows the job by: its trace id (as in the simulator,
        # whose plan-based policies seed their search with it), else minus its Slurm id
        self.policy_id: dict[int, int] = {}
        self.slurm_id: dict[int, int] = {}
        self.node_index = {name: i for i, name in enumerate(platform.compute_nodes())}
        self.started: dict[int, RunningJob] = {}  # released (or adopted) and still in the queue
        self.staging_out: frozenset[int] = frozenset()  # of these, the jobs in STAGE_OUT
        self.first_seen: dict[int, float] = {}
        self.memo: dict[str, Any] = {}
        self._signature: tuple[frozenset[int], ...] | None = None
        self.calls = 0
        self.released_at: float | None = None  # when the last release of jobs went through (wall clock)
        self.comments: dict[int, dict[str, str]] = {}
        self.io: dict[int, JobIo] = {}
        self.tier_rates = TierRates.of_platform(platform)  # as the simulator's SAS (sim.pool_tiers)

    # -- one polling step -----------------------------------------------------------------
    def step(self) -> Decision | None:
        """Look at Slurm once; call the policy if anything changed; enforce its decision."""
        began = time.monotonic()
        jobs = self.client.jobs()
        if self.wakeup is not None:
            self.wakeup.looked({j.job_id for j in jobs}, took=time.monotonic() - began)
        self._take_origin()
        now = self.clock() - self.t0
        self.comments = {j.job_id: j.comment for j in jobs}
        self.io = {j.job_id: _job_io(j) for j in jobs}
        self._forget_finished({j.job_id for j in jobs})
        self._name_for_policy(jobs)
        self.staging_out = frozenset(j.job_id for j in jobs if j.stages_out)
        for job in jobs:
            if (job.holds_nodes or job.stages_out) and job.job_id not in self.started:
                self._adopt(job, now)
        self._release_unmanaged([j for j in jobs if j.held and not _managed(j)])
        queue = self._in_twin_order([self._queued(j, now) for j in jobs
                                     if j.held and _managed(j) and j.job_id not in self.started])  # fmt: skip
        signature = (frozenset(q.job_id for q in queue), frozenset(self.started), self.staging_out)
        if signature == self._signature or not queue:
            self._signature = signature
            return None
        decision = self._decide(queue, now)
        starts = {s.job_id for s in decision.starts}
        self._signature = (signature[0] - starts, frozenset(self.started), self.staging_out)
        return decision

    def _take_origin(self) -> None:
        """On a virtual clock: count time from the replay's t0 once it has one (no job is
        queued before it)."""
        if self.origin is not None and (t0 := self.origin()) is not None:
            self.t0, self.origin = t0, None

    def _in_twin_order(self, queue: list[QueuedJob]) -> list[QueuedJob]:
        """The queue as the simulator orders it: by submission, then trace id. Not by Slurm id:
        jobs submitted in the same second get their ids in whatever order their ``sbatch``
        calls finish, and the order decides which job gets which nodes."""

        def key(q: QueuedJob) -> tuple[float, int, int]:
            named = self.policy_id.get(q.job_id, -q.job_id)
            return (q.submit, 0, named) if named >= 0 else (q.submit, 1, q.job_id)

        return sorted(queue, key=key)

    def _name_for_policy(self, jobs: list[SlurmJob]) -> None:
        for job in jobs:
            if job.job_id not in self.policy_id:
                trace = job.spec.trace_id
                named = trace if trace is not None and trace not in self.slurm_id else -job.job_id
                self.policy_id[job.job_id], self.slurm_id[named] = named, job.job_id

    def _trace_ids(self, queue: list[QueuedJob]) -> dict[int, int]:
        """The trace's job id of each queued job, by its policy id (its comment's ``trace_id``)."""
        ids = {self.policy_id[q.job_id]: self.comments.get(q.job_id, {}).get("trace_id", "") for q in queue}
        return {job: int(trace) for job, trace in ids.items() if trace.isdigit()}

    def _decide(self, queue: list[QueuedJob], now: float) -> Decision:
        state = self.state(self.memo)
        began = time.perf_counter()
        policy = self.policy
        if getattr(policy, "tiered", False):  # SAS: the tier choice needs each job's I/O and the rates
            io = {self.policy_id[q.job_id]: self.io.get(q.job_id, JobIo()) for q in queue}
            # it plans in Slurm's seconds (the comments' walltimes): MB per Slurm second
            speedup = max(_time_scale(self.comments.get(q.job_id, {})) for q in queue)
            rates = self.tier_rates.on_clock(TimeScale.of_speedup(speedup))
            traced = self._trace_ids(queue)
            policy = policy.with_io(io, rates, traced)  # type: ignore[attr-defined]
        pfs_rates = self._pfs_rates() if uses_io_tree(policy) else {}
        if pfs_rates:  # Herbein's: every job's drain rate, from its comment (by the policy's ids)
            named_rates = {self.policy_id.get(job, job): rate for job, rate in pfs_rates.items()}
            policy = policy.with_rates(named_rates)  # type: ignore[attr-defined]
        named = [replace(q, job_id=self.policy_id[q.job_id]) for q in queue]
        decision = policy.decide(state, JobQueue.of(named), now)
        decision = replace(
            decision, starts=tuple(replace(s, job_id=self.slurm_id[s.job_id]) for s in decision.starts)
        )
        latency = time.perf_counter() - began
        if decision.memo is not None:
            self.memo = dict(decision.memo)
        released = self._enforce(decision, queue, now)
        self.calls += 1
        self._log({
            "t": round(self.t0 + now, 6), "now": round(now, 6), "queue": len(queue),
            "running": len(state.running), "staging_out": len(state.holding_bb), "started": released,
            "latency_s": round(latency, 6), "woke": self.woke,
            **({"links_mb_s": self.link_use(pfs_rates)} if self.io_tree is not None else {}),
        })  # fmt: skip
        return decision

    def _pfs_rates(self) -> dict[int, float]:
        """Per-node PFS rate of every job whose comment gives one (``pfs_per_node``)."""
        specs = {job: decode_comment(words).pfs_mbps_per_node for job, words in self.comments.items()}
        return {job: rate for job, rate in specs.items() if rate is not None}

    def link_use(self, rates: dict[int, float]) -> dict[str, float]:
        """MB/s on each switch and chain link from the jobs the agent started (their nodes, their
        rates; a job without one demands the hierarchy's rate), after its latest releases."""
        assert self.io_tree is not None and self.platform.io.hierarchy is not None
        demand = self.platform.io.hierarchy.demand_mbps_per_node
        placed = [(job.allocation.compute, rates.get(i, demand))
                  for i, job in self.started.items() if i not in self.staging_out]  # fmt: skip
        return {link: round(mb_s, 3) for link, mb_s in link_use(self.io_tree, placed).items()}

    # -- bookkeeping --------------------------------------------------------------------
    def state(self, memo: dict[str, Any] | None = None) -> ClusterState:
        """What the policy sees: the jobs in STAGE_OUT hold their BB shares, none of their nodes."""
        running = [self._named(j) for i, j in self.started.items() if i not in self.staging_out]
        holding = [self._named(j) for i, j in self.started.items() if i in self.staging_out]
        return ClusterState.from_running(self.topology, running, memo, holding)

    def _named(self, job: RunningJob) -> RunningJob:
        return replace(job, job_id=self.policy_id.get(job.job_id, job.job_id))

    def _forget_finished(self, active: set[int]) -> None:
        for job_id in [j for j in self.policy_id if j not in active]:
            del self.slurm_id[self.policy_id.pop(job_id)]
        for job_id in [j for j in self.started if j not in active]:
            del self.started[job_id]
        for job_id in [j for j in self.first_seen if j not in active]:
            del self.first_seen[job_id]

    def _queued(self, job: SlurmJob, now: float) -> QueuedJob:
        submit = self.first_seen.setdefault(job.job_id, now)
        return QueuedJob(job.job_id, submit, _walltime(job), job.nodes, _bb_per_node(job))

    def _adopt(self, job: SlurmJob, now: float) -> None:
        """A running (or staging-out) job the agent did not start, e.g. after a restart: place
        its BB shares near the nodes Slurm lists for it."""
        compute = tuple(self.node_index[n] for n in expand_hostlist(job.nodelist) if n in self.node_index)
        share = _bb_per_node(job)
        free = list(self.state().free_bb_mb)
        bb = []
        for c in compute:
            target = next((b for b in self.topology.bb_preference[c] if free[b] >= share), None)
            if target is None:  # Slurm only checks the total: keep the books consistent anyway
                target = max(range(len(free)), key=free.__getitem__)
            free[target] -= share
            bb.append(target)
        self.started[job.job_id] = RunningJob(
            job.job_id, now, now + _walltime(job), share, Allocation(compute, tuple(bb))
        )

    def _release_unmanaged(self, jobs: list[SlurmJob]) -> None:
        """Jobs not submitted by the replay carry no walltime: hand them to Slurm at once."""
        if jobs:
            self._try(lambda: self.client.release([j.job_id for j in jobs]))

    # -- enforcement --------------------------------------------------------------------
    def _enforce(self, decision: Decision, queue: list[QueuedJob], now: float) -> list[int]:
        by_id = {q.job_id: q for q in queue}
        released: list[int] = []
        for start in decision.starts:
            if getattr(start, "tier", None) == LPS and by_id[start.job_id].bb_per_node_mb > 0:
                self._to_slow_tier(start.job_id)  # released as a new job, without BB, at a next call
                continue
            names = compress_hostlist([self.platform.compute_name(c) for c in start.allocation.compute])
            if not self._try(functools.partial(self.client.set_nodelist, start.job_id, names)):
                continue
            released.append(start.job_id)
            q = by_id[start.job_id]
            self.started[start.job_id] = RunningJob(
                start.job_id, now, now + q.walltime, q.bb_per_node_mb, start.allocation
            )
        if released and self._try(lambda: self.client.release(released)):
            self.released_at = time.time()
        return released

    def _to_slow_tier(self, job_id: int) -> None:
        """A job with a BB request put on LPS: submitted again without it (tier_live)."""
        comment = " ".join(f"{k}={v}" for k, v in self.comments.get(job_id, {}).items())
        try:
            new = move_to_slow_tier(self.client, job_id, comment)
        except (SlurmCommandError, KeyError, ValueError) as exc:
            self._log({"t": round(self.clock(), 6), "error": f"job {job_id} to {LPS}: {exc}"})
            return
        if job_id in self.first_seen:  # the copy waits since the original's submission
            self.first_seen[new] = self.first_seen[job_id]
        self._log({"t": round(self.clock(), 6), "tier": LPS, "job": job_id, "resubmitted": new})

    def _try(self, action: Callable[[], None]) -> bool:
        try:
            action()
        except SlurmCommandError as exc:  # e.g. the job was cancelled meanwhile
            self._log({"t": round(self.clock(), 6), "error": str(exc)})
            return False
        return True

    def _log(self, record: dict) -> None:
        if self.log_path is None:
            return
        with open(self.log_path, "a") as handle:
            handle.write(json.dumps(record) + "\n")

    # -- main loop ------------------------------------------------------------------------
    def run(self, poll: float = DEFAULT_POLL_S, should_stop: Callable[[], bool] = lambda: False) -> None:
        stop = {"now": False}

        def request_stop(*_: object) -> None:
            stop["now"] = True

        signal.signal(signal.SIGTERM, request_stop)
        signal.signal(signal.SIGINT, request_stop)
        kernels.warm_up()  # compiling during the first decision would delay it by seconds
        while not (stop["now"] or should_stop()):
            if not self.in_step():
                time.sleep(poll)
                continue
            looked = time.time()  # the wall clock: the host compares it with when it saw a change
            try:
                self.step()
            except SlurmCommandError as exc:  # slurmctld busy or restarting: look again next poll
                self._log({"t": round(self.clock(), 6), "look_failed": str(exc)})
            else:
                self._write_status(looked)
            if self.wakeup is None:
                time.sleep(poll)
            else:
                self.woke = self.wakeup.wait(poll)

    def _write_status(self, looked: float) -> None:
        """After a look that went through: when it began, how many calls so far and when jobs
        were last released (the event clock then has Slurm's main cycle run at that instant)."""
        if self.status_path is not None:
            status = {"looked": looked, "calls": self.calls, "released": self.released_at}
            atomic_write_text(self.status_path, json.dumps(status) + "\n")


def _managed(job: SlurmJob) -> bool:
    return job.spec.managed


def _walltime(job: SlurmJob) -> float:
    walltime = job.spec.walltime_s
    return UNKNOWN_WALLTIME_S if walltime is None else walltime


def _bb_per_node(job: SlurmJob) -> int:
    return job.spec.bb_per_node_mb


def _job_io(job: SlurmJob) -> JobIo:
    """A job's I/O for a tier-choosing policy: its BB request from the comment (HPS capacity),
    its volumes from the optional words ``in_mb``, ``out_mb``, ``data_mb`` (whole job, MB,
    :func:`~harness.policies.tiers.io_words`)."""
    return io_of_words(job.comment, job.nodes * _bb_per_node(job))


def _time_scale(words: dict[str, str]) -> float:
    """The comment's ``time_scale`` (1 / (1 - shrink), written by the replay; 1 without)."""
    try:
        scale = float(words.get("time_scale", 1.0))
    except ValueError:
        return 1.0
    return scale if scale > 0 else 1.0


def replay_t0(run_dir: Path) -> float | None:
    """The replay's t0 (its status in the run directory), None before it has one."""
    try:
        t0 = read_json(run_dir / STATUS).get("t0")
    except JsonFileError:  # (being replaced right now: the next look reads it)
        return None
    return float(t0) if t0 else None


def release_all(client: SlurmClient) -> int:
    """Hand the queue back to Slurm: release every held job."""
    held = [j.job_id for j in client.jobs() if j.held]
    client.release(held)
    return len(held)
