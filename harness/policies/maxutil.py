"""Maximising system utilisation by permutation search (Algorithm 6, ``maxutil-BETA-D``).

The first D jobs start FCFS or get reservations; for the rest, a permutation is
searched whose greedy filling maximises, lexicographically, (compute, storage, mean
wait) of the jobs started now, or (storage, compute, mean wait) when the queue's
storage load exceeds beta times its compute load. Queues of at most 6 jobs are
searched exhaustively; longer ones by hill climbing over swaps (at most 5000 steps)
from the best of the nine candidate orderings. The chosen permutation is then
filled for real.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from harness.policies.base import Decision, Policy
from harness.policies.fcfs import start_or_reserve_head
from harness.policies.orderings import candidate_orderings, compute_first, utilisation_score
from harness.policies.state import ClusterState, JobQueue, QueuedJob
from harness.policies.workspace import Workspace

Score = tuple[float, float, float]


class FillSimulation:
    """Which jobs of a permutation greedy filling would start now, on resource counts.

    Each job's room is the minimum over its walltime of the profile (free compute
    and per-BB-node MB), less what jobs started before it in this simulation take.
    Exact without reservations (the room then only grows with time); with them it
    may reject a job that fits, which only costs search quality: the final filling
    is done on the real workspace. Started jobs take BB shares from the BB nodes
    with the most room first.
    """

    def __init__(self, ws: Workspace, queue: JobQueue, positions: np.ndarray, compute_leads: bool) -> None:
        prof = ws.profile
        last = np.searchsorted(prof.times, ws.now + queue.walltime[positions], side="left") - 1
        np.maximum(last, 0, out=last)
        low = prof.prefix_minima()[last]
        self.compute_room = low[:, 0].tolist()
        self.bb_room = low[:, 1:].tolist()
        self.nodes = queue.nodes[positions].tolist()
        self.share = queue.bb_per_node_mb[positions].tolist()
        self.wait = (ws.now - queue.submit[positions]).tolist()
        self.free = ws.free_count
        self.bb_count = ws.topology.bb_count
        self.compute_leads = compute_leads

    def fits_alone(self) -> list[bool]:
        return [self._bb_take(i, [0] * self.bb_count, 0) is not None for i in range(len(self.nodes))]

    def run(self, order: Sequence[int]) -> tuple[Score, int]:
        """Score of filling ``order`` (local indices) and the position of its last started job."""
        used_nodes, used_bb = 0, [0] * self.bb_count
        nodes_sum = bb_sum = 0
        wait_sum, count, last = 0.0, 0, -1
        for pos, i in enumerate(order):
            take = self._bb_take(i, used_bb, used_nodes)
            if take is None:
                continue
            for b, mb in take:
                used_bb[b] += mb
            n = self.nodes[i]
            used_nodes += n
            nodes_sum += n
            bb_sum += n * self.share[i]
            wait_sum += self.wait[i]
            count += 1
            last = pos
            if used_nodes >= self.free:
                break
        return utilisation_score(nodes_sum, bb_sum, wait_sum, count, self.compute_leads), last

    def _bb_take(self, i: int, used_bb: list[int], used_nodes: int) -> list[tuple[int, int]] | None:
        n = self.nodes[i]
        if self.compute_room[i] - used_nodes < n:
            return None
        s = self.share[i]
        if s <= 0:
            return []
        room = [r - u for r, u in zip(self.bb_room[i], used_bb, strict=True)]
        if sum(r // s for r in room if r > 0) < n:
            return None
        take, left = [], n
        for b in sorted(range(len(room)), key=lambda b: -room[b]):
            k = min(left, room[b] // s)
            if k > 0:
                take.append((b, k * s))
                left -= k
            if left == 0:
                return take
        return None


def hill_climb(sim: FillSimulation, start: list[int], max_steps: int) -> list[int]:
    """Algorithm 6, lines 16-31: swaps of growing distance, restarted after each improvement."""
    perm = list(start)
    best, last = sim.run(perm)
    steps = 0
    size = len(perm)
    while True:
        improved = False
        for distance in range(1, size):
            for index in range(min(last, size - distance - 1) + 1):
                steps += 1
                if steps > max_steps:
                    return perm
                j = index + distance
                perm[index], perm[j] = perm[j], perm[index]
                score, new_last = sim.run(perm)
                if score > best:
                    best, last, improved = score, new_last, True
                    break
                perm[index], perm[j] = perm[j], perm[index]
            if improved:
                break
        if not improved:
            return perm


def best_of(sim: FillSimulation, orders: Sequence[Sequence[int]]) -> list[int]:
    """The first order with the highest score (ties keep the earlier one)."""
    best_order, best_score = list(orders[0]), sim.run(orders[0])[0]
    for order in orders[1:]:
        score = sim.run(order)[0]
        if score > best_score:
            best_order, best_score = list(order), score
    return best_order


class MaxUtil(Policy):
    description = "maximise compute/BB utilisation by permutation search (hill climbing), balance beta"

    def __init__(
        self, name: str, beta: float, depth: int, max_steps: int = 5000, exhaustive_max: int = 6
    ) -> None:
        super().__init__(name)
        self.beta = beta
        self.depth = depth
        self.max_steps = max_steps
        self.exhaustive_max = exhaustive_max

    def decide(self, state: ClusterState, queue: Sequence[QueuedJob], now: float) -> Decision:
        jobs = JobQueue.of(queue)
        ws = Workspace(state, now)
        leads = compute_first(jobs, state.topology, self.beta)
        head = start_or_reserve_head(ws, jobs, self.depth)
        rest = np.arange(head, len(jobs))
        order = self._search(ws, jobs, rest, leads) if ws.free_count else rest
        ws.fill(jobs, order)
        planned = jobs.job_id[:head].tolist() + jobs.job_id[order].tolist()
        return ws.decision(planned_order=planned)

    def _search(self, ws: Workspace, jobs: JobQueue, rest: np.ndarray, leads: bool) -> np.ndarray:
        if len(rest) <= 1:
            return rest
        sim = FillSimulation(ws, jobs, rest, leads)
        if not any(sim.fits_alone()):
            return rest
        if len(rest) <= self.exhaustive_max:
            local = best_of(sim, list(itertools.permutations(range(len(rest)))))
        else:
            pos_of = {int(p): i for i, p in enumerate(rest)}
            seeds = [[pos_of[int(p)] for p in o] for o in candidate_orderings(jobs, rest)]
            local = hill_climb(sim, best_of(sim, seeds), self.max_steps)
        return rest[np.asarray(local, dtype=np.int64)]
