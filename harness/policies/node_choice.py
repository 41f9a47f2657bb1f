"""Concrete compute nodes as Slurm's select/cons_tres picks them, and reservations held on them.

Slurm 24.11's cons_tres without a topology plugin (``_eval_nodes_consec``, every node of the
same weight and size) cuts the usable nodes into runs of consecutive indices and takes the
*best fit*: the shortest run that holds the whole remaining request (the lowest-indexed among
equal ones), from its start; while no run holds it, the longest run (the lowest-indexed among
equal ones) whole, and again for the rest. Checked on the emulated node lists of
`slurm-backfill-1` runs (docs/virtual-time.md): it gives the nodes of 195 of 200 starts of
the bundled slice and 1,736 of 1,766 of a whole KTH period; most of the others are jobs kept
off a reservation's nodes. Backfill's reservation for the blocked top job is the same choice
among the nodes free at its start, and a later job that would run until that start or past it
may not use them (:class:`NodeReservation`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


def consecutive_runs(nodes: Iterable[int]) -> list[list[int]]:
    """``nodes`` (any order) as runs of consecutive indices, ascending."""
    runs: list[list[int]] = []
    for node in sorted(nodes):
        if runs and node == runs[-1][-1] + 1:
            runs[-1].append(node)
        else:
            runs.append([node])
    return runs


def best_fit_nodes(usable: Iterable[int], count: int) -> list[int] | None:
    """The ``count`` nodes cons_tres gives a whole-node job among ``usable`` (ascending), or
    None if there are too few."""
    runs = consecutive_runs(usable)
    if count <= 0 or sum(len(r) for r in runs) < count:
        return None if count > 0 else []
    chosen: list[int] = []
    while len(chosen) < count:
        left = count - len(chosen)
        holding = [r for r in runs if len(r) >= left]
        if holding:  # the tightest run that holds the rest; min() keeps the first of equal ones
            run = min(holding, key=len)
            chosen.extend(run[:left])
            break
        run = max(runs, key=len)  # nothing holds the rest: the longest run, whole
        runs.remove(run)
        chosen.extend(run)
    return sorted(chosen)


@dataclass(frozen=True)
class NodeReservation:
    """Nodes held for a reserved job from ``start``: a job running past ``start`` may not use them."""

    start: float
    end: float
    nodes: frozenset[int]

    def blocks(self, begin: float, end: float) -> bool:
        """Whether a job from ``begin`` to ``end`` overlaps the reservation's window: as in
        Slurm's backfill (``node_space[j].begin_time <= end_time``), a job ending just as the
        reservation begins does."""
        return begin < self.end and end >= self.start


def usable_nodes(free: Iterable[int], held: Sequence[NodeReservation], begin: float, end: float) -> list[int]:
    """The nodes of ``free`` that a job from ``begin`` to ``end`` may take (none of a reservation
    it overlaps), ascending."""
    blocked: set[int] = set()
    for reservation in held:
        if reservation.blocks(begin, end):
            blocked |= reservation.nodes
    return sorted(n for n in free if n not in blocked)
