"""The simulator twin of Slurm's priority tiers, with or without preemption by suspension.

What ``harness run --priority MODEL --preempt suspend`` configures (``preempt/partition_prio``,
``PreemptMode=SUSPEND,GANG``, high jobs in the ``urgent`` partition of a higher PriorityTier,
one job per node: ``OverSubscribe=FORCE:1`` on 1-CPU nodes), modelled on whole nodes:

* **Order.** High-priority jobs first, each class first come first served; a high job that
  cannot be placed blocks the high jobs behind it. EASY backfill with one reservation per
  partition (``bf_job_part_count_reserve=1``): the first blocked high job (without
  preemption) and the first blocked low job reserve from the expected ends (start + walltime
  + time suspended so far) of the jobs holding nodes; a low job starts now only if it ends
  before every shadow or fits in its spare nodes and BB. A suspended job counts as ending at
  its recorded end (start + walltime + past suspensions; Slurm updates ``end_time`` on resume
  only). With preemption a low job ignores the high reservation's nodes (it would be
  suspended) but not its burst buffer: preemption frees no license.
* **Placement** (cons_tres's consecutive-set rule on equal nodes): among the candidate
  nodes, the smallest run of consecutive nodes that holds the job, its first nodes; if no
  run is large enough, the largest runs first (ties: the lowest node).
* **Victims** (``preempt: suspend``). A high job takes idle nodes (no job at all) when there
  are enough of them; otherwise it is placed over every node no high job holds, as if the
  low jobs were absent, and *every* low job on a chosen node is suspended (Slurm's gang
  scheduler suspends whatever runs under the preemptor: all of the job, even on nodes the
  preemptor does not need). A suspended job keeps its nodes and burst buffers.
* **Resume.** A suspended job resumes as soon as none of its nodes holds a high job, before
  anything else is scheduled at that instant; its running time is preserved (it ends
  ``runtime`` of running after its start, plus the time it spent suspended).

Without preemption (``preempt=False``) the tiers only order the queue: Barberato's
"backfill with priorities" (Table 4.5). Burst buffers are a pool held from start to end
(suspended or not); a job starts only when its share is free. Times are in the plan's unit.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from harness.model.columns import PLAN_COLUMNS, RESULT_COLUMNS
from harness.platform import Machine
from harness.workload.priority import high_priority

# What the twin adds to the results: the job's tier, its suspended time and count.
PREEMPTION_COLUMNS: tuple[str, ...] = (*RESULT_COLUMNS, "priority", "suspended", "n_suspensions")
EPS = 1e-9


@dataclass
class PreemptionResult:
    jobs: pd.DataFrame  # PREEMPTION_COLUMNS; runtime = time running (end - start - suspended)
    suspensions: pd.DataFrame  # job_id, start, end: one row per suspension (the intervals)
    wall_time_s: float
    policy: str = "backfill-1"

    @property
    def n_suspensions(self) -> int:
        return len(self.suspensions)


def place(candidates: list[int], need: int) -> list[int] | None:
    """``need`` nodes out of ``candidates`` (sorted indices) by the consecutive-set rule."""
    if need > len(candidates):
        return None
    runs: list[list[int]] = []
    for node in candidates:
        if runs and node == runs[-1][-1] + 1:
            runs[-1].append(node)
        else:
            runs.append([node])
    fitting = [r for r in runs if len(r) >= need]
    if fitting:
        return min(fitting, key=len)[:need]
    chosen: list[int] = []
    for run in sorted(runs, key=lambda r: -len(r)):  # stable: ties keep the lowest node first
        chosen += run[: need - len(chosen)]
        if len(chosen) == need:
            break
    return sorted(chosen)


@dataclass
class _Job:
    row: int
    runtime: float  # of running: min(runtime, walltime)
    nodes: list[int] = field(default_factory=list)
    start: float = np.nan
    resumed: float = np.nan  # when it last began running
    done: float = 0.0  # running time before ``resumed``
    suspended_at: float | None = None
    epoch: int = 0  # bumped at every suspension: stale end events are skipped

    def end_if_running(self) -> float:
        return self.resumed + self.runtime - self.done


class PreemptionSim:
    """One run of the twin (:func:`simulate_preemption` is the entry point)."""

    def __init__(self, plan: pd.DataFrame, machine: Machine, preempt: bool) -> None:
        missing = [c for c in PLAN_COLUMNS if c not in plan.columns]
        if missing:
            raise ValueError(f"plan lacks columns {missing}")
        self.df = plan.sort_values(["submit", "job_id"], kind="stable").reset_index(drop=True)
        self.high = high_priority(self.df)
        self.need = self.df["nodes"].to_numpy(np.int64)
        self.bb = (self.df["nodes"] * self.df["bb_per_node_mb"]).to_numpy(np.int64)
        self.walltime = self.df["walltime"].to_numpy(np.float64)
        self.n_nodes, self.bb_free = machine.compute_count, int(machine.bb_total_mb)
        too_big = self.df["job_id"][(self.need > self.n_nodes) | (self.bb > self.bb_free)].tolist()
        if too_big:
            raise ValueError(f"{len(too_big)} jobs can never run on this platform, e.g. {too_big[:5]}")
        self.preempt = preempt
        self.low_on: list[int | None] = [None] * self.n_nodes  # the low job holding each node
        self.high_on: list[int | None] = [None] * self.n_nodes
        self.jobs: dict[int, _Job] = {}
        self.queue: list[int] = []  # waiting rows, in submission order
        self.events: list[tuple[float, int, int]] = []  # (end, row, epoch)
        self.intervals: list[tuple[int, float, float]] = []  # (row, suspended, resumed)
        self.ends = np.full(len(self.df), np.nan)
        self.suspended_total = np.zeros(len(self.df))
        self.count = np.zeros(len(self.df), dtype=np.int64)

    def run(self) -> None:
        submit = self.df["submit"].to_numpy(np.float64)
        nxt, n = 0, len(self.df)
        while nxt < n or self.events:
            t_end = self.events[0][0] if self.events else np.inf
            now = float(min(submit[nxt] if nxt < n else np.inf, t_end))
            while self.events and self.events[0][0] <= now + EPS:
                _, row, epoch = heapq.heappop(self.events)
                if self.jobs[row].epoch == epoch and self.jobs[row].suspended_at is None:
                    self._finish(row, now)
            while nxt < n and submit[nxt] <= now + EPS:
                self.queue.append(nxt)
                nxt += 1
            self._resume(now)
            self._schedule(now)
        if self.queue:
            raise RuntimeError(f"{len(self.queue)} jobs never started")

    # -- job life ---------------------------------------------------------------------------

    def _start(self, row: int, nodes: list[int], now: float) -> None:
        job = _Job(row, min(float(self.df["runtime"].iat[row]), float(self.walltime[row])), nodes, now, now)
        self.jobs[row] = job
        owner = self.high_on if self.high[row] else self.low_on
        for node in nodes:
            owner[node] = row
        self.bb_free -= int(self.bb[row])
        self.queue.remove(row)
        heapq.heappush(self.events, (job.end_if_running(), row, job.epoch))

    def _finish(self, row: int, now: float) -> None:
        owner = self.high_on if self.high[row] else self.low_on
        for node in self.jobs[row].nodes:
            owner[node] = None
        self.bb_free += int(self.bb[row])
        self.ends[row] = now

    def _suspend(self, row: int, now: float) -> None:
        job = self.jobs[row]
        if job.suspended_at is not None:
            return  # already suspended by an earlier high job
        job.done += now - job.resumed
        job.suspended_at, job.epoch = now, job.epoch + 1
        self.count[row] += 1

    def _resume(self, now: float) -> None:
        for row, job in self.jobs.items():
            if job.suspended_at is None or any(self.high_on[n] is not None for n in job.nodes):
                continue
            self.intervals.append((row, job.suspended_at, now))
            self.suspended_total[row] += now - job.suspended_at
            job.suspended_at, job.resumed = None, now
            heapq.heappush(self.events, (job.end_if_running(), row, job.epoch))

    # -- scheduling -------------------------------------------------------------------------

    def _idle(self) -> list[int]:
        return [i for i in range(self.n_nodes) if self.low_on[i] is None and self.high_on[i] is None]

    def _schedule(self, now: float) -> None:
        """High jobs by EASY among themselves, then the low jobs (:meth:`_backfill_low`)."""
        held: list[list[float]] = []  # [shadow, spare nodes, spare BB] of the reservations
        for row in [r for r in self.queue if self.high[r]]:
            need, bb, end = int(self.need[row]), int(self.bb[row]), now + self.walltime[row]
            if self._delays_none(held, need, bb, end) and self._start_high(row, now):
                self._use(held, need, bb, end)
            elif not held:  # the first blocked high job reserves
                held.append(list(self._reservation(need, bb, now, high_only=self.preempt)))
        # With preemption a low job cannot delay a high one for nodes (it would be suspended)
        # but it can for burst buffers: a suspended job keeps its licenses, so the low jobs
        # respect the high reservation's burst buffer (Slurm's bf_licenses), not its nodes.
        if self.preempt:
            held = [[shadow, self.n_nodes, spare_bb] for shadow, _, spare_bb in held]
        self._backfill_low([r for r in self.queue if not self.high[r]], now, held)

    @staticmethod
    def _delays_none(held: list[list[float]], need: int, bb: int, end: float) -> bool:
        return all(end <= r[0] + EPS or (need <= r[1] and bb <= r[2]) for r in held)

    @staticmethod
    def _use(held: list[list[float]], need: int, bb: int, end: float) -> None:
        for r in held:
            if end > r[0] + EPS:
                r[1], r[2] = r[1] - need, r[2] - bb

    def _start_high(self, row: int, now: float) -> bool:
        if self.bb[row] > self.bb_free:
            return False
        idle = place(self._idle(), int(self.need[row]))
        if idle is not None or not self.preempt:
            if idle is not None:
                self._start(row, idle, now)
            return idle is not None
        free_of_high = [i for i in range(self.n_nodes) if self.high_on[i] is None]
        nodes = place(free_of_high, int(self.need[row]))
        if nodes is None:
            return False
        for victim in sorted({v for v in (self.low_on[n] for n in nodes) if v is not None}):
            self._suspend(victim, now)
        self._start(row, nodes, now)
        return True

    def _backfill_low(self, rows: list[int], now: float, held: list[list[float]]) -> None:
        """EASY: the first blocked low job reserves, like the first blocked high job (``held``:
        one reservation per partition, Slurm's bf_job_part_count_reserve=1); a job starts now
        only if it delays none of them (it ends before the shadow or fits in the spare)."""
        blocked = False
        for row in rows:
            idle = self._idle()
            need, bb, end = int(self.need[row]), int(self.bb[row]), now + self.walltime[row]
            if bb <= self.bb_free and len(idle) >= need and self._delays_none(held, need, bb, end):
                self._start(row, place(idle, need) or [], now)
                self._use(held, need, bb, end)
            elif not blocked:
                blocked = True
                held.append(list(self._reservation(need, bb, now)))

    def _reservation(self, need: int, bb: int, now: float, high_only: bool = False) -> tuple[float, int, int]:
        """(shadow time, nodes and BB to spare then) of a blocked job: when the jobs' expected
        ends free enough nodes and burst buffer (Slurm with bf_licenses). ``high_only``: a high
        job that can preempt waits for high jobs' nodes only. A suspended job is expected to end
        at start + walltime + its past suspensions, like a running one: Slurm moves a job's
        end_time on resume only, and its backfill counts suspended jobs' licenses free then."""
        free = sum(1 for n in self.high_on if n is None) if high_only else len(self._idle())
        free_bb, expected = self.bb_free, []
        for row, job in self.jobs.items():
            if np.isnan(self.ends[row]):  # a suspended job too: Slurm keeps its end_time
                other = self.low_on if self.high[row] else self.high_on  # a node stays taken beneath
                releases = sum(1 for n in job.nodes if other[n] is None)
                if high_only:
                    releases = len(job.nodes) if self.high[row] else 0
                end = job.start + self.walltime[row] + self.suspended_total[row]
                expected.append((end, releases, int(self.bb[row])))
        for end, releases, held in sorted(expected):
            free, free_bb = free + releases, free_bb + held
            if free >= need and free_bb >= bb:
                return max(end, now), free - need, free_bb - bb
        return np.inf, 0, 0

    def results(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        df, rows = self.df, range(len(self.df))
        start = np.array([self.jobs[r].start for r in rows])
        table = pd.DataFrame({
            "job_id": df["job_id"].to_numpy(), "submit": df["submit"].to_numpy(), "start": start,
            "end": self.ends, "runtime": self.ends - start - self.suspended_total,
            "walltime": self.walltime, "nodes": self.need, "bb_per_node_mb": df["bb_per_node_mb"].to_numpy(),
            "bb_nodes": "", "status": np.where(df["runtime"] > df["walltime"], "timeout", "completed"),
            "priority": self.high.astype(np.int64), "suspended": self.suspended_total,
            "n_suspensions": self.count,
        }, columns=list(PREEMPTION_COLUMNS))  # fmt: skip
        ids = df["job_id"].to_numpy()
        spans = pd.DataFrame(
            [(int(ids[r]), a, b) for r, a, b in sorted(self.intervals, key=lambda x: (x[1], x[0]))],
            columns=["job_id", "start", "end"],
        )
        return table, spans


def simulate_preemption(plan: pd.DataFrame, platform: Machine, *, preempt: bool = True) -> PreemptionResult:
    """Schedule ``plan`` (with its ``priority`` column, :mod:`harness.workload.priority`) by
    the rules of the module's docstring; ``preempt`` False: tiers without suspension."""
    began = time.perf_counter()
    sim = PreemptionSim(plan, platform, preempt)
    sim.run()
    table, spans = sim.results()
    name = "backfill-1+suspend" if preempt else "backfill-1+tiers"
    return PreemptionResult(table, spans, time.perf_counter() - began, name)
