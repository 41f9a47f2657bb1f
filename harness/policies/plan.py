"""Plan-based scheduling with simulated annealing (Algorithm 8, ``plan-{sum,square,cube,start}-D``).

An execution plan places the queued jobs, in a given order, each at the earliest
time its compute nodes and BB shares are free for its whole walltime (the plan
reserves compute and BB). A permutation's score is the plan's
``sum(wait ** alpha)`` (sum: 1, square: 2, cube: 3) or the latest planned start
(start). The first D jobs start FCFS or are reserved first. Queues of at most 5
jobs are searched exhaustively; longer ones by simulated annealing: the best and
worst of the nine candidate orderings give the start and the initial temperature
``worst - best``; 30 cooling steps (rate 0.9) of 6 swaps each.

``FILLER(P_best)`` of the listing is read as in the thesis's own scheduler: the
jobs that the best plan starts now are started, in plan order. A job that merely
fits now but whose plan start is later (it would delay jobs planned before it) is
not started; this is what makes plan-square-0 fair in practice.

Speed: a swap of positions i < j leaves the plan of positions < i unchanged, so
the profile after each position of the current permutation is kept and a
candidate is planned from position i only. The acceptance test ``u < exp((S - S')
/ T)`` is drawn before planning, which turns it into a bound ``S' < S - T ln u``
past which planning the candidate stops early.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.policies import kernels
from harness.policies.base import Decision, Policy
from harness.policies.fcfs import start_or_reserve_head
from harness.policies.orderings import candidate_orderings
from harness.policies.profile import AvailabilityProfile
from harness.policies.state import ClusterState, JobQueue, QueuedJob
from harness.policies.workspace import Workspace

OBJECTIVES: dict[str, float | None] = {"sum": 1.0, "square": 2.0, "cube": 3.0, "start": None}


@dataclass(frozen=True)
class AnnealingConfig:
    cooling_rate: float = 0.9
    cooling_steps: int = 30  # N
    steps_per_temperature: int = 6  # M
    exhaustive_max: int = 5
    # Wall-clock limit of one search (the thesis uses 20 s); None = no limit. The
    # deterministic ``max_placements`` budget keeps decisions reproducible.
    time_limit_s: float | None = None
    max_placements: int | None = 40_000
    seed: int = 0


class PlanBuilder:
    """Builds execution plans of permutations of some queued jobs on a base profile."""

    def __init__(
        self, base: AvailabilityProfile, jobs: JobQueue, positions: np.ndarray, alpha: float | None
    ) -> None:
        self.base = base
        self.nodes = jobs.nodes[positions].tolist()
        self.share = jobs.bb_per_node_mb[positions].tolist()
        self.walltime = jobs.walltime[positions].tolist()
        self.submit = jobs.submit[positions].tolist()
        self.alpha = alpha
        self.placements = 0
        # Adding jobs to a plan never advances anyone's start, so a job's cost alone
        # on the base profile bounds its cost in any plan from below.
        self.floor = [self.cost(i, self._alone_start(i)) for i in range(len(self.nodes))]

    def _alone_start(self, i: int) -> float:
        k, _ = self.base.earliest_start(self.nodes[i], self.share[i], self.walltime[i])
        return float(self.base.times[k])

    def cost(self, i: int, start: float) -> float:
        if self.alpha is None:
            return start
        wait = max(start - self.submit[i], 0.0)
        return wait if self.alpha == 1.0 else wait**self.alpha

    def combine(self, acc: float, cost: float) -> float:
        return max(acc, cost) if self.alpha is None else acc + cost

    def place(self, prof: AvailabilityProfile, i: int) -> tuple[AvailabilityProfile, float]:
        """Profile with job ``i`` added at its earliest start (a new profile) and that start."""
        self.placements += 1
        return prof.placed(self.nodes[i], self.share[i], self.walltime[i])

    def starts(self, order: Sequence[int]) -> list[float]:
        """Planned start of every job of ``order``."""
        prof, out = self.base, []
        for i in order:
            prof, start = self.place(prof, i)
            out.append(start)
        return out

    def _without(self, rest_floor: float, floor_i: float, order: Sequence[int], pos: int) -> float:
        """Lower bound of the costs after position ``pos`` given the bound through ``pos``."""
        if self.alpha is None:
            return max((self.floor[j] for j in order[pos + 1 :]), default=-math.inf)
        return rest_floor - floor_i

    def total(self, costs: Sequence[float]) -> float:
        if self.alpha is None:
            return max(costs, default=-math.inf)
        return math.fsum(costs)

    def plan(
        self,
        order: Sequence[int],
        first: int = 0,
        ref: PlanTrace | None = None,
        bound: float = math.inf,
        changed_upto: int = -1,
    ) -> tuple[float, PlanTrace] | None:
        """Score of ``order`` and its trace, or ``None`` once the score reaches ``bound``.

        With ``ref`` (the trace of an order equal to this one before ``first``),
        planning resumes at ``first``. Past ``changed_upto`` (the last position
        where the orders differ), once the profile equals ``ref``'s the rest of the
        plan is ``ref``'s: a swap of two jobs often leaves the plan unchanged.
        """
        if ref is None:
            profiles, costs = [self.base], []
        else:
            profiles, costs = ref.profiles[: first + 1], ref.costs[:first]
        acc = self.total(costs) if costs else (-math.inf if self.alpha is None else 0.0)
        prof = profiles[first]
        rest_floor = self.total([self.floor[i] for i in order[first:]]) if bound < math.inf else 0.0
        for pos in range(first, len(order)):
            i = order[pos]
            prof, start = self.place(prof, i)
            cost = self.cost(i, start)
            costs.append(cost)
            acc = self.combine(acc, cost)
            if bound < math.inf:
                rest_floor = self._without(rest_floor, self.floor[i], order, pos)
                if self.combine(acc, rest_floor) >= bound:
                    return None
            profiles.append(prof)
            if ref is not None and pos >= changed_upto and _same(prof, ref.profiles[pos + 1]):
                costs.extend(ref.costs[pos + 1 :])
                profiles.extend(ref.profiles[pos + 2 :])
                acc = self.total(costs)
                return (acc, PlanTrace(profiles, costs)) if acc < bound else None
        return acc, PlanTrace(profiles, costs)


@dataclass
class PlanTrace:
    """A planned order: the profile before each position (and after the last), and each job's cost."""

    profiles: list[AvailabilityProfile]
    costs: list[float]


def _same(a: AvailabilityProfile, b: AvailabilityProfile) -> bool:
    if a is b:
        return True
    if a.times.shape != b.times.shape:
        return False
    if kernels.AVAILABLE:
        return bool(kernels.same(a.times, a.res, b.times, b.res))
    return np.array_equal(a.times, b.times) and np.array_equal(a.res, b.res)


class _Budget:
    def __init__(self, builder: PlanBuilder, cfg: AnnealingConfig) -> None:
        self.builder = builder
        self.cfg = cfg
        self.deadline = time.perf_counter() + cfg.time_limit_s if cfg.time_limit_s else math.inf

    def exhausted(self) -> bool:
        cap = self.cfg.max_placements
        over_budget = cap is not None and self.builder.placements >= cap
        return over_budget or time.perf_counter() > self.deadline


def exhaustive_best(builder: PlanBuilder, count: int) -> list[int]:
    """Lowest-score permutation of ``count`` jobs, by depth-first search with pruning."""
    best_score, best_order = math.inf, list(range(count))
    start_acc = 0.0 if builder.alpha is not None else -math.inf

    def dfs(prof: AvailabilityProfile, acc: float, order: list[int], left: list[int]) -> None:
        nonlocal best_score, best_order
        if not left:
            if acc < best_score:
                best_score, best_order = acc, list(order)
            return
        for i in left:
            nxt, start = builder.place(prof, i)
            new_acc = builder.combine(acc, builder.cost(i, start))
            if new_acc < best_score:  # costs never decrease the score: prune
                order.append(i)
                dfs(nxt, new_acc, order, [j for j in left if j != i])
                order.pop()

    dfs(builder.base, start_acc, [], list(range(count)))
    return best_order


def anneal(
    builder: PlanBuilder, seeds: list[list[int]], cfg: AnnealingConfig, rng: random.Random
) -> list[int]:
    """Simulated annealing over permutations (Algorithm 8, lines 10-31).

    Near convergence most proposals are swaps already tried from the same current
    permutation; a cache of exact scores and lower bounds (from stopped plans)
    answers them without planning again, leaving the trajectory unchanged.
    """
    budget = _Budget(builder, cfg)
    known: dict[tuple[int, ...], float] = {}  # order -> its score, or a lower bound of it
    scored: list[tuple[float, PlanTrace, Sequence[int]]] = []
    for order in seeds:
        if scored and budget.exhausted():  # a tight time limit may not even cover the seeds
            break
        planned = builder.plan(order)
        assert planned is not None  # without a bound a plan is never stopped early
        score, trace = planned
        known[tuple(order)] = score
        scored.append((score, trace, order))
    best_score, best_trace, best = min(scored, key=lambda x: x[0])
    worst_score = max(s for s, _, _ in scored)
    if best_score == worst_score:
        return list(best)
    temperature = worst_score - best_score
    current, cur_score, cur_trace = list(best), best_score, best_trace
    best = list(best)
    size = len(current)
    for _ in range(cfg.cooling_steps):
        for _ in range(cfg.steps_per_temperature):
            if budget.exhausted():
                return best
            a, b = rng.sample(range(size), 2)
            u = 1.0 - rng.random()  # in (0, 1]: log is finite
            bound = cur_score - temperature * math.log(u)
            cand = list(current)
            cand[a], cand[b] = cand[b], cand[a]
            key = tuple(cand)
            if known.get(key, -math.inf) >= bound:  # its score or a lower bound is already too high
                continue
            res = builder.plan(cand, min(a, b), cur_trace, bound, changed_upto=max(a, b))
            if res is None:
                known[key] = bound
                continue
            cur_score, cur_trace = res
            known[key] = cur_score
            current = cand
            if cur_score < best_score:
                best_score, best = cur_score, list(cand)
        temperature *= cfg.cooling_rate
    return best


class PlanPolicy(Policy):
    description = "plan-based: simulated annealing over job orders scored by the execution plan"

    def __init__(self, name: str, objective: str, depth: int, config: AnnealingConfig | None = None) -> None:
        super().__init__(name)
        if objective not in OBJECTIVES:
            raise ValueError(f"unknown plan objective {objective!r}; choose from {sorted(OBJECTIVES)}")
        self.objective = objective
        self.alpha = OBJECTIVES[objective]
        self.depth = depth
        self.config = config or AnnealingConfig()

    def decide(self, state: ClusterState, queue: Sequence[QueuedJob], now: float) -> Decision:
        jobs = JobQueue.of(queue)
        ws = Workspace(state, now)
        head = start_or_reserve_head(ws, jobs, self.depth)
        rest = np.arange(head, len(jobs))
        found = self._search(ws, jobs, rest) if ws.free_count else None
        if found is None:
            return ws.decision(planned_order=jobs.job_id.tolist())
        builder, local = found
        # Start what the best plan starts now, in plan order. (The plan's BB nodes
        # may differ from the allocator's; a job that then no longer fits waits.)
        for i, start in zip(local, builder.starts(local), strict=True):
            if start <= now:
                ws.try_start(jobs[int(rest[i])])
        order = rest[np.asarray(local, dtype=np.int64)]
        return ws.decision(planned_order=jobs.job_id[:head].tolist() + jobs.job_id[order].tolist())

    def _search(
        self, ws: Workspace, jobs: JobQueue, rest: np.ndarray
    ) -> tuple[PlanBuilder, list[int]] | None:
        """The plan builder of ``rest`` and its best order (indices into ``rest``).

        ``None`` when no job of ``rest`` could start now anyway.
        """
        if len(_fitting_now(ws, jobs, rest)) == 0:
            return None
        builder = PlanBuilder(ws.profile, jobs, rest, self.alpha)
        if len(rest) <= self.config.exhaustive_max:
            return builder, exhaustive_best(builder, len(rest))
        pos_of = {int(p): i for i, p in enumerate(rest)}
        seeds = [[pos_of[int(p)] for p in o] for o in candidate_orderings(jobs, rest)]
        return builder, anneal(builder, seeds, self.config, annealing_rng(self.config.seed, jobs))


def annealing_rng(seed: int, jobs: JobQueue) -> random.Random:
    """The annealing's draws for a decision on ``jobs``: from the policy's seed and the queue,
    not the instant. Seeded by the instant, any shift of a decision (an emulation's instants
    differ by milliseconds from run to run) drew another search, and 0-2 s of jitter on the
    submissions moved the twin's mean wait by an RSD of 2-19 % (docs/virtual-time.md)."""
    return random.Random(f"{seed}:{len(jobs)}:{int(jobs.job_id[0])}")


def _fitting_now(ws: Workspace, jobs: JobQueue, positions: np.ndarray) -> np.ndarray:
    """Positions whose job alone fits now and for its walltime (given reservations)."""
    prof = ws.profile
    last = np.searchsorted(prof.times, ws.now + jobs.walltime[positions], side="left") - 1
    np.maximum(last, 0, out=last)
    nodes = jobs.nodes[positions]
    shares = jobs.bb_per_node_mb[positions]
    low = prof.prefix_minima()[last]
    compute_ok = low[:, 0] >= nodes
    bb_min = low[:, 1:]
    slots = (bb_min // np.maximum(shares, 1)[:, None]).sum(axis=1)
    return positions[compute_ok & ((shares <= 0) | (slots >= nodes))]
