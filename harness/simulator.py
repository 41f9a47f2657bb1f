"""Discrete-event simulator twin of the emulation (the thesis's Alloc-Only model).

Jobs occupy their nodes and BB shares from start until ``start + runtime``, or are
killed at ``start + walltime``. The policy is asked what to start after every batch
of simultaneous submissions and completions. The output is the per-job results
table the emulation also produces (see :data:`RESULT_COLUMNS`), in the plan's own
time unit (shrunk if the plan was shrunk: unshrink in the metrics).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.platform import Platform, load_platform
from harness.policies import kernels
from harness.policies.base import Decision, Policy
from harness.policies.state import Allocation, ClusterState, JobQueue, RunningJob, Topology

RESULT_COLUMNS: tuple[str, ...] = (
    "job_id", "submit", "start", "end", "runtime", "walltime", "nodes", "bb_per_node_mb",
    "bb_nodes", "status",
)  # fmt: skip

PLAN_COLUMNS = ("job_id", "submit", "runtime", "walltime", "nodes", "bb_per_node_mb")


class SimulationError(RuntimeError):
    """A policy asked for something impossible (the simulator never silently fixes it)."""


@dataclass
class SimulationResult:
    policy: str
    jobs: pd.DataFrame
    decisions: pd.DataFrame  # one row per policy call: time, queue, running, started, latency_s
    wall_time_s: float

    @property
    def simulated_span_s(self) -> float:
        if self.jobs.empty:
            return 0.0
        return float(self.jobs["end"].max() - self.jobs["submit"].min())


def bb_map_string(platform: Platform, alloc: Allocation) -> str:
    """``c001:bb01,c002:bb01``: each compute node with the BB node holding its share."""
    return ",".join(
        f"{platform.compute.name(c + 1)}:{platform.bb.name(b + 1)}"
        for c, b in zip(alloc.compute, alloc.bb, strict=True)
    )


class _Machine:
    """Free resources and running jobs, updated as jobs start and end."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.free = [True] * topology.compute_count
        self.free_count = topology.compute_count
        self.free_bb = [topology.bb_capacity_mb] * topology.bb_count
        self.running: dict[int, RunningJob] = {}

    def state(self, memo: dict | None) -> ClusterState:
        free = tuple(i for i, f in enumerate(self.free) if f)
        return ClusterState(
            self.topology, tuple(self.running.values()), free, tuple(self.free_bb), memo or {}
        )

    def start(self, job: RunningJob) -> None:
        alloc = job.allocation
        for c in alloc.compute:
            if not self.free[c]:
                raise SimulationError(f"job {job.job_id}: compute node {c} is busy")
            self.free[c] = False
        for b in alloc.bb:
            self.free_bb[b] -= job.bb_per_node_mb
        if min(self.free_bb) < 0:
            raise SimulationError(f"job {job.job_id}: a BB node is over-allocated")
        self.free_count -= len(alloc.compute)
        self.running[job.job_id] = job

    def finish(self, job_id: int) -> None:
        job = self.running.pop(job_id)
        for c in job.allocation.compute:
            self.free[c] = True
        for b in job.allocation.bb:
            self.free_bb[b] += job.bb_per_node_mb
        self.free_count += job.nodes


class _Plan:
    """The workload as columns, sorted by submission."""

    def __init__(self, plan: pd.DataFrame, topology: Topology) -> None:
        missing = [c for c in PLAN_COLUMNS if c not in plan.columns]
        if missing:
            raise ValueError(f"plan lacks columns {missing}")
        df = plan.sort_values(["submit", "job_id"], kind="stable").reset_index(drop=True)
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


def simulate(plan: pd.DataFrame, policy: Policy, platform: Platform | None = None) -> SimulationResult:
    """Run ``policy`` on ``plan`` (columns of :data:`PLAN_COLUMNS`) and return the schedule."""
    platform = platform or load_platform()
    topology = Topology.from_platform(platform)
    jobs = _Plan(plan, topology)
    kernels.warm_up()  # compile before the clock starts: not part of any decision's latency
    began = time.perf_counter()
    sim = _Run(jobs, policy, topology)
    sim.run()
    wall = time.perf_counter() - began
    table = sim.results(platform)
    decisions = pd.DataFrame(sim.decision_log, columns=["time", "queue", "running", "started", "latency_s"])
    return SimulationResult(policy.name, table, decisions, wall)


class _Run:
    def __init__(self, jobs: _Plan, policy: Policy, topology: Topology) -> None:
        self.jobs = jobs
        self.policy = policy
        self.machine = _Machine(topology)
        self.row_of = {int(j): i for i, j in enumerate(jobs.job_id)}
        self.queued = np.empty(0, dtype=np.int64)  # plan rows, in submission order
        self.ends: list[tuple[float, int]] = []  # heap of (end, row)
        self.start = np.full(len(jobs), np.nan)
        self.end = np.full(len(jobs), np.nan)
        self.alloc: list[Allocation | None] = [None] * len(jobs)
        self.memo: dict = {}
        self.decision_log: list[tuple[float, int, int, int, float]] = []
        self.every_event = policy.needs_every_event

    def run(self) -> None:
        next_submit = 0
        n = len(self.jobs)
        while next_submit < n or self.ends:
            now = self._next_time(next_submit)
            while self.ends and self.ends[0][0] <= now:
                _, row = heapq.heappop(self.ends)
                self.machine.finish(int(self.jobs.job_id[row]))
            first = next_submit
            while next_submit < n and self.jobs.submit[next_submit] <= now:
                next_submit += 1
            if next_submit > first:
                self.queued = np.concatenate((self.queued, np.arange(first, next_submit)))
            if len(self.queued) and (self.every_event or self._something_fits()):
                self._decide(now)
        if len(self.queued):
            raise SimulationError(f"{len(self.queued)} jobs never started (policy {self.policy.name})")

    def _next_time(self, next_submit: int) -> float:
        t_submit = self.jobs.submit[next_submit] if next_submit < len(self.jobs) else np.inf
        t_end = self.ends[0][0] if self.ends else np.inf
        return float(min(t_submit, t_end))

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
            walltime = float(self.jobs.walltime[row])
            job = RunningJob(s.job_id, now, now + walltime, int(self.jobs.share[row]), s.allocation)
            self.machine.start(job)
            end = now + min(float(self.jobs.runtime[row]), walltime)
            heapq.heappush(self.ends, (end, row))
            self.start[row], self.end[row], self.alloc[row] = now, end, s.allocation
            done.append(row)
        if done:
            keep = np.ones(len(self.queued), dtype=bool)
            for row in done:  # few starts per decision: cheaper than np.isin
                keep &= self.queued != row
            self.queued = self.queued[keep]
        return len(done)

    def results(self, platform: Platform) -> pd.DataFrame:
        j = self.jobs
        killed = j.runtime > j.walltime
        return pd.DataFrame(
            {
                "job_id": j.job_id,
                "submit": j.submit,
                "start": self.start,
                "end": self.end,
                "runtime": self.end - self.start,
                "walltime": j.walltime,
                "nodes": j.nodes,
                "bb_per_node_mb": j.share,
                "bb_nodes": [bb_map_string(platform, a) if a else "" for a in self.alloc],
                "status": np.where(killed, "timeout", "completed"),
            },
            columns=list(RESULT_COLUMNS),
        )


# -- invariants -----------------------------------------------------------------
def parse_bb_map(platform: Platform, text: str) -> list[tuple[int, int]]:
    """Inverse of :func:`bb_map_string`: ``[(compute index, BB index), ...]``."""
    compute = {n: i for i, n in enumerate(platform.compute_nodes())}
    bb = {n: i for i, n in enumerate(platform.bb_nodes())}
    pairs = []
    for item in filter(None, text.split(",")):
        c, b = item.split(":")
        pairs.append((compute[c], bb[b]))
    return pairs


def check_schedule(results: pd.DataFrame, platform: Platform | None = None, tol: float = 1e-6) -> list[str]:
    """Violations of the schedule invariants (empty when the schedule is valid).

    Every job starts (not before its submission) and ends no later than its walltime
    allows; each allocated compute node has exactly one BB node; no compute node is
    used by two jobs at once; no BB node ever holds more than its capacity.
    """
    platform = platform or load_platform()
    problems = list(_check_jobs(results, tol))
    if problems:
        return problems
    return list(_check_overlaps(results, platform))


def _check_jobs(df: pd.DataFrame, tol: float) -> Iterator[str]:
    for row in df.itertuples(index=False):
        if not (np.isfinite(row.start) and np.isfinite(row.end)):
            yield f"job {row.job_id} never ran"
        elif row.start < row.submit - tol:
            yield f"job {row.job_id} starts before its submission"
        elif row.end < row.start - tol or row.end - row.start > row.walltime + tol:
            yield f"job {row.job_id} runs outside [start, start + walltime]"


def _check_overlaps(df: pd.DataFrame, platform: Platform) -> Iterator[str]:
    events: list[tuple[float, int, int]] = []  # (time, 0 = end first / 1 = start, row)
    maps = []
    for row, r in enumerate(df.itertuples(index=False)):
        pairs = parse_bb_map(platform, r.bb_nodes)
        computes = [c for c, _ in pairs]
        if len(pairs) != r.nodes or len(set(computes)) != len(computes):
            yield f"job {r.job_id}: needs one BB node per each of its {r.nodes} compute nodes"
        maps.append(pairs)
        if r.end > r.start:  # a job that ran for no time holds nothing
            events.append((float(r.start), 1, row))
            events.append((float(r.end), 0, row))
    events.sort()
    owner: dict[int, int] = {}
    used = [0] * platform.bb_count
    shares = df["bb_per_node_mb"].to_numpy()
    ids = df["job_id"].to_numpy()
    for _, is_start, row in events:
        sign = 1 if is_start else -1
        for c, b in maps[row]:
            used[b] += sign * int(shares[row])
            if is_start:
                if c in owner:
                    yield f"compute node {c} runs jobs {owner[c]} and {ids[row]} at once"
                owner[c] = int(ids[row])
            else:
                owner.pop(c, None)
        if is_start and max(used) > platform.bb_capacity_mb:
            yield f"a BB node exceeds its capacity when job {ids[row]} starts"
