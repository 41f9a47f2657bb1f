"""0-1 knapsacks by dynamic programming with backtracking (Cerberus's selections).

Cerberus (Yan et al.) selects, at each phase, the subset of a queue that maximises a
sum under capacity limits:

* stage-in / stage-out: ``max sum bb_i x_i`` s.t. ``sum bb_i x_i <= BB_free`` (the
  value of an item is its own weight: the burst-buffer volume moved);
* run: ``max sum p_i x_i`` s.t. ``sum c_i x_i <= CN_free`` and ``sum bb_i x_i <= BB_free``.

Both are solved exactly in pseudo-polynomial time, ``dp(i, w)`` and ``dp(i, c, w)``
as in the poster, one numpy pass per item over the whole capacity table, keeping
one "taken" bit per item and cell for the backtracking.

Capacities must be small integers for the table to stay small: burst-buffer sizes
are counted in *units* (see :func:`to_units`); a weight is rounded **up** and a
capacity **down**, so a selection that fits in units also fits in megabytes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class KnapsackError(ValueError):
    """Negative weights or capacities, or mismatched lengths."""


def to_units(mb: int | Sequence[int], unit_mb: int, round_up: bool) -> np.ndarray:
    """Megabytes -> whole units of ``unit_mb`` (up for demands, down for capacities)."""
    if unit_mb <= 0:
        raise KnapsackError(f"capacity unit must be positive, got {unit_mb} MB")
    values = np.asarray(mb, dtype=np.int64)
    if np.any(values < 0):
        raise KnapsackError("burst-buffer amounts must be >= 0")
    return -(-values // unit_mb) if round_up else values // unit_mb


def _check(weights: np.ndarray, capacity: int, name: str) -> None:
    if capacity < 0:
        raise KnapsackError(f"{name} capacity must be >= 0, got {capacity}")
    if np.any(weights < 0):
        raise KnapsackError(f"{name} weights must be >= 0")


def subset_sum(weights: Sequence[int] | np.ndarray, capacity: int) -> list[int]:
    """Indices (ascending) of the subset with the largest total weight ``<= capacity``.

    Among optimal subsets the DP keeps the earlier items when a later item does not
    strictly improve the best sum, so ties favour the front of the queue.
    """
    w = np.asarray(weights, dtype=np.int64)
    _check(w, capacity, "knapsack")
    n = len(w)
    best = np.zeros(capacity + 1, dtype=np.int64)  # best[x]: max sum with total <= x
    taken = np.zeros((n, capacity + 1), dtype=bool)
    for i in range(n):
        wi = int(w[i])
        if wi > capacity:
            continue
        cand = np.full(capacity + 1, -1, dtype=np.int64)
        cand[wi:] = best[: capacity + 1 - wi] + wi
        take = cand > best
        taken[i] = take
        best = np.where(take, cand, best)
    return _backtrack_1d(taken, w, capacity)


def _backtrack_1d(taken: np.ndarray, w: np.ndarray, capacity: int) -> list[int]:
    chosen: list[int] = []
    x = capacity
    for i in range(len(w) - 1, -1, -1):
        if taken[i, x]:
            chosen.append(i)
            x -= int(w[i])
    return sorted(chosen)


def two_constraint(
    nodes: Sequence[int] | np.ndarray,
    bb: Sequence[int] | np.ndarray,
    profit: Sequence[float] | np.ndarray,
    node_capacity: int,
    bb_capacity: int,
) -> list[int]:
    """Indices (ascending) maximising ``sum profit`` with nodes and BB within capacity.

    Items of zero or negative profit are never worth taking and are skipped. The table
    has ``(node_capacity + 1) x (bb_capacity + 1)`` cells per item.
    """
    c = np.asarray(nodes, dtype=np.int64)
    w = np.asarray(bb, dtype=np.int64)
    p = np.asarray(profit, dtype=np.float64)
    if not len(c) == len(w) == len(p):
        raise KnapsackError("nodes, bb and profit must have the same length")
    _check(c, node_capacity, "node")
    _check(w, bb_capacity, "burst-buffer")
    shape = (node_capacity + 1, bb_capacity + 1)
    best = np.zeros(shape, dtype=np.float64)
    taken = np.zeros((len(c), *shape), dtype=bool)
    for i in range(len(c)):
        ci, wi, pi = int(c[i]), int(w[i]), float(p[i])
        if pi <= 0 or ci > node_capacity or wi > bb_capacity:
            continue
        cand = np.full(shape, -np.inf)
        cand[ci:, wi:] = best[: shape[0] - ci, : shape[1] - wi] + pi
        take = cand > best
        taken[i] = take
        best = np.where(take, cand, best)
    chosen: list[int] = []
    x, y = node_capacity, bb_capacity
    for i in range(len(c) - 1, -1, -1):
        if taken[i, x, y]:
            chosen.append(i)
            x -= int(c[i])
            y -= int(w[i])
    return sorted(chosen)
