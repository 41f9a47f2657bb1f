"""Window-based combinatorial scheduling (Algorithm 7, ``window-N-D``).

Among the first N queued jobs (the window), find the set that can start now and
maximises the lexicographic utilisation objective of Section 3.2. The search
starts from the whole window and drops one job at a time; a set that fits is
scored and not shrunk further (its subsets score no better). A job that has sat
in the window for more than ``max_age`` scheduling runs and is among the first D
must be in the chosen set. The chosen set starts, then SJF backfilling without
reservations fills the rest; when no set is chosen, SJF backfilling with D
reservations runs instead.

Whether a set fits: enough free compute nodes, and a packing of every job's
shares into the BB nodes (a share is never split). A greedy best-fit packing
settles most sets; the rest go to an exact integer program (Eqs. 3.1-3.3) solved
by OR-Tools CP-SAT, with the thesis's 1 s limit per check (a timeout counts as
"does not fit"). Job ages live in the decision's memo, so the policy stays pure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from harness.policies.backfill import backfill
from harness.policies.base import Decision, Policy
from harness.policies.orderings import compute_first, utilisation_score
from harness.policies.state import ClusterState, JobQueue, QueuedJob
from harness.policies.workspace import Workspace

AGE_MEMO_KEY = "window_age"
Packing = list[list[int]]  # packing[k][b]: shares of the k-th job of a set on BB node b


def greedy_packing(jobs: Sequence[tuple[int, int]], avail_mb: Sequence[int]) -> Packing | None:
    """Best-fit packing of ``(nodes, share)`` jobs, largest share first; ``None`` if it fails."""
    left = list(avail_mb)
    packing = [[0] * len(left) for _ in jobs]
    for k in sorted(range(len(jobs)), key=lambda k: -jobs[k][1]):
        nodes, share = jobs[k]
        if share <= 0:
            continue
        for b in sorted(range(len(left)), key=lambda b: left[b]):
            take = min(nodes, left[b] // share)
            if take > 0:
                packing[k][b] = take
                left[b] -= take * share
                nodes -= take
            if nodes == 0:
                break
        if nodes:
            return None
    return packing


def exact_packing(
    jobs: Sequence[tuple[int, int]], avail_mb: Sequence[int], timeout_s: float
) -> Packing | None:
    """Integer program of Eqs. 3.1-3.3 with CP-SAT; ``None`` if infeasible or timed out."""
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    bins = range(len(avail_mb))
    x = [[model.new_int_var(0, nodes, f"x{k}_{b}") for b in bins] for k, (nodes, _) in enumerate(jobs)]
    for k, (nodes, _) in enumerate(jobs):
        model.add(sum(x[k]) == nodes)
    for b in bins:
        model.add(sum(share * x[k][b] for k, (_, share) in enumerate(jobs)) <= int(avail_mb[b]))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = timeout_s
    solver.parameters.num_workers = 1  # deterministic, and the machine is shared
    if solver.solve(model) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return [[int(solver.value(v)) for v in row] for row in x]


class SetChecker:
    """Whether a set of window jobs can start together now, with a packing if so."""

    def __init__(
        self, free_compute: int, avail_mb: Sequence[int], jobs: Sequence[tuple[int, int]], timeout_s: float
    ):
        self.free = free_compute
        self.avail = [int(a) for a in avail_mb]
        self.jobs = jobs
        self.timeout_s = timeout_s
        self.exact_calls = 0

    def packing(self, members: Sequence[int]) -> Packing | None:
        chosen = [self.jobs[k] for k in members]
        if sum(n for n, _ in chosen) > self.free:
            return None
        if sum(n * s for n, s in chosen) > sum(self.avail):
            return None
        if any(s > 0 and sum(a // s for a in self.avail) < n for n, s in chosen):
            return None
        packing = greedy_packing(chosen, self.avail)
        if packing is None:
            self.exact_calls += 1
            packing = exact_packing(chosen, self.avail, self.timeout_s)
        return packing


def best_combination(
    checker: SetChecker,
    size: int,
    mandatory: frozenset[int],
    score_of: Callable[[Sequence[int]], tuple[float, float, float]],
) -> tuple[tuple[int, ...], Packing] | None:
    """Algorithm 7, lines 11-28: the best fitting subset of ``range(size)``."""
    best: tuple[tuple[int, ...], Packing] | None = None
    best_score = (0.0, 0.0, 0.0)
    frontier = {tuple(range(size))}
    while frontier:
        unsatisfied = []
        for members in sorted(frontier):  # sorted: ties resolve the same way every run
            packing = checker.packing(members)
            if packing is None:
                unsatisfied.append(members)
                continue
            score = score_of(members)
            if score > best_score:
                best_score, best = score, (members, packing)
        frontier = {
            tuple(m for m in members if m != drop)
            for members in unsatisfied
            for drop in members
            if drop not in mandatory
        }
    return best


class WindowPolicy(Policy):
    description = "window-based combinatorial selection of jobs to start (exact BB packing, CP-SAT)"
    needs_every_event = True  # job ages count scheduling runs, as in the thesis

    def __init__(
        self,
        name: str,
        window: int,
        depth: int,
        max_age: int = 50,
        beta: float = 1.0,
        solver_timeout_s: float = 1.0,
    ) -> None:
        super().__init__(name)
        self.window = window
        self.depth = depth
        self.max_age = max_age
        self.beta = beta
        self.solver_timeout_s = solver_timeout_s

    def decide(self, state: ClusterState, queue: Sequence[QueuedJob], now: float) -> Decision:
        jobs = JobQueue.of(queue)
        ws = Workspace(state, now)
        size = min(self.window, len(jobs))
        ages = self._ages(state, jobs, size)
        chosen = self._choose(ws, jobs, size, ages, compute_first(jobs, state.topology, self.beta))
        waiting = np.arange(len(jobs))
        depth = self.depth
        if chosen is not None:
            members, packing = chosen
            for k, counts in zip(members, packing, strict=True):
                fixed = counts if jobs.bb_per_node_mb[k] > 0 else None
                if not ws.try_start(jobs[k], bb_counts=fixed):
                    raise AssertionError(f"job {jobs.job_id[k]}: the packing found does not fit")
            waiting = np.setdiff1d(waiting, members, assume_unique=True)
            depth = 0  # the thesis backfills without reservations after a chosen set
        order = backfill(ws, jobs, waiting, depth, sjf=True)
        started = {s.job_id for s in ws.starts}
        memo = {AGE_MEMO_KEY: {k: v for k, v in ages.items() if int(k) not in started}}
        return ws.decision(planned_order=order, memo=memo)

    def _ages(self, state: ClusterState, jobs: JobQueue, size: int) -> dict[str, int]:
        """Scheduling runs each window job has spent in the window, this one included."""
        previous = state.memo.get(AGE_MEMO_KEY, {})
        return {str(j): int(previous.get(str(j), 0)) + 1 for j in jobs.job_id[:size].tolist()}

    def _choose(
        self, ws: Workspace, jobs: JobQueue, size: int, ages: dict[str, int], compute_leads: bool
    ) -> tuple[tuple[int, ...], Packing] | None:
        if size == 0 or ws.free_count == 0:
            return None
        ids = jobs.job_id[:size].tolist()
        mandatory = frozenset(k for k in range(min(self.depth, size)) if ages[str(ids[k])] > self.max_age)
        pairs = list(zip(jobs.nodes[:size].tolist(), jobs.bb_per_node_mb[:size].tolist(), strict=True))
        # No reservations exist yet, so what is free now stays free: row 0 of the profile.
        checker = SetChecker(ws.free_count, ws.profile.bb[0].tolist(), pairs, self.solver_timeout_s)
        waits = (ws.now - jobs.submit[:size]).tolist()

        def score_of(members: Sequence[int]) -> tuple[float, float, float]:
            nodes = sum(pairs[k][0] for k in members)
            bb = sum(pairs[k][0] * pairs[k][1] for k in members)
            return utilisation_score(nodes, bb, sum(waits[k] for k in members), len(members), compute_leads)

        return best_combination(checker, size, mandatory, score_of)
