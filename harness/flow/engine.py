"""Flows that progress over time: rates are recomputed only when a flow starts or finishes.

Between two changes of the set of flows every rate is constant, so a flow's end
is ``now + remaining / rate``; a caller (the simulator, a live contention service)
adds and removes flows, asks for the next completion, and advances the clock to
it. Recomputation is lazy: any number of additions and removals at one instant
cost one max-min solve, done when a rate is next needed.

Bookkeeping for the metrics comes with it: bytes carried per link, and per *group*
(a job) the time it had a flow active and the time one of its flows got less than
it would alone (Herbein's interference factor I < 1).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Generic, TypeVar

import numpy as np

from harness.flow.maxmin import NO_LINK, FlowError, max_min_rates, sort_and_share

# A flow is done when this little is left: the end time is computed from the rate,
# and remaining -= rate * (end - now) leaves a few ulps of the size.
DONE_REL = 1e-9
DONE_ABS = 1e-3  # bytes
UNCONTENDED = 1 - 1e-9  # rate / solo rate above this: the flow got what it would alone


K = TypeVar("K", bound=Hashable)  # what names an entry: any hashable the caller picks


class FlowEngine(Generic[K]):
    """Flows over a fixed set of links (capacities in bytes/s; sizes in bytes)."""

    def __init__(self, capacities: Sequence[float], *, max_route: int = 4, slots: int = 64) -> None:
        self.capacities = np.asarray(capacities, dtype=np.float64)
        if np.any(self.capacities <= 0) or not np.all(np.isfinite(self.capacities)):
            raise FlowError("link capacities must be finite and positive")
        self.now = 0.0
        self.max_route = max_route
        self._route = np.full((slots, max_route), NO_LINK, dtype=np.int64)
        self._size = np.zeros(slots)
        self._left = np.zeros(slots)
        self._weight = np.ones(slots)
        self._cap = np.full(slots, np.inf)
        self._solo = np.zeros(slots)
        self._rate = np.zeros(slots)
        self._group = np.full(slots, -1, dtype=np.int64)
        self._active = np.zeros(slots, dtype=bool)
        self._key: dict[int, K] = {}  # slot -> key of the flow in it
        self._slot: dict[K, int] = {}
        self._free = list(range(slots - 1, -1, -1))
        self._dirty = False
        self.link_bytes = np.zeros(len(self.capacities))
        self.group_io_s = np.zeros(0)
        self.group_contended_s = np.zeros(0)
        self.recomputes = 0

    # -- flows ----------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._slot)

    def __contains__(self, key: K) -> bool:
        return key in self._slot

    def add(
        self,
        key: K,
        route: Sequence[int],
        size: float,
        *,
        weight: float = 1.0,
        cap: float = np.inf,
        group: int = -1,
    ) -> None:
        """Start a flow of ``size`` bytes now (a flow of size 0 finishes at once)."""
        if key in self._slot:
            raise FlowError(f"flow {key!r} already exists")
        if size < 0 or weight <= 0 or cap <= 0:
            raise FlowError(f"flow {key!r}: need size >= 0, weight > 0, cap > 0")
        if len(route) > self.max_route or any(not 0 <= x < len(self.capacities) for x in route):
            raise FlowError(f"flow {key!r}: bad route {list(route)}")
        if not route and not np.isfinite(cap):
            raise FlowError(f"flow {key!r}: a flow with no link needs a finite cap")
        s = self._take_slot()
        self._route[s] = NO_LINK
        self._route[s, : len(route)] = route
        self._size[s] = self._left[s] = size
        self._weight[s], self._cap[s], self._group[s] = weight, cap, group
        self._solo[s] = min(cap, float(self.capacities[list(route)].min(initial=np.inf)))
        self._active[s] = True
        self._key[s] = key
        self._slot[key] = s
        self._grow_groups(group)
        self._dirty = True

    def remove(self, key: K) -> float:
        """Stop a flow (finished or cancelled); returns the bytes it had left."""
        s = self._slot.pop(key)
        left = float(self._left[s])
        self._active[s] = False
        self._rate[s] = 0.0
        del self._key[s]
        self._free.append(s)
        self._dirty = True
        return left

    def rate(self, key: K) -> float:
        self._solve()
        return float(self._rate[self._slot[key]])

    def remaining(self, key: K) -> float:
        return float(self._left[self._slot[key]])

    def keys(self) -> list[K]:
        return list(self._slot)

    # -- time -----------------------------------------------------------------
    def next_completion(self) -> tuple[float, K] | None:
        """(time, key) of the flow that ends first at the current rates, or None."""
        self._solve()
        idx = np.flatnonzero(self._active)
        if not len(idx):
            return None
        with np.errstate(divide="ignore"):
            ends = np.where(self._rate[idx] > 0, self._left[idx] / self._rate[idx], np.inf)
        ends = np.where(self._left[idx] <= self._done_below(idx), 0.0, ends)
        i = int(np.argmin(ends))
        if not np.isfinite(ends[i]):
            return None
        return self.now + float(ends[i]), self._key[int(idx[i])]

    def advance(self, t: float) -> None:
        """Move the clock to ``t``, every flow progressing at its current rate."""
        dt = t - self.now
        if dt < 0:
            raise FlowError(f"time goes backwards: {t} < {self.now}")
        if dt > 0 and self._slot:
            self._solve()
            idx = np.flatnonzero(self._active)
            moved = self._rate[idx] * dt
            self._left[idx] = np.maximum(self._left[idx] - moved, 0.0)
            self._carry(idx, moved)
            self._account_groups(idx, dt)
        self.now = t

    def finished(self) -> list[K]:
        """Keys of the flows with (almost) nothing left, to be removed by the caller."""
        self._solve()
        idx = np.flatnonzero(self._active)
        left, rate = self._left[idx], self._rate[idx]
        with np.errstate(divide="ignore"):
            # also done: what is left takes less time than the clock can tell apart
            # from now (at t = 1e7 s, one ulp is 2e-9 s)
            unseen = self.now + np.where(rate > 0, left / rate, np.inf) <= self.now
        done = idx[(left <= self._done_below(idx)) | unseen]
        return [self._key[int(s)] for s in done]

    def link_load(self) -> np.ndarray:
        """Bytes/s crossing every link at the current rates."""
        self._solve()
        idx = np.flatnonzero(self._active)
        return self._loads(idx, self._rate[idx])

    # -- internals ------------------------------------------------------------
    def _done_below(self, idx: np.ndarray) -> np.ndarray:
        return self._size[idx] * DONE_REL + DONE_ABS

    def _solve(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        self.recomputes += 1
        idx = np.flatnonzero(self._active)
        if not len(idx):
            return
        routes = self._route[idx]
        w, cap = self._weight[idx], self._cap[idx]
        if routes.shape[1] == 1 or np.all(routes[:, 1:] == NO_LINK):
            self._rate[idx] = self._single_link_rates(routes[:, 0], w, cap)
        else:
            self._rate[idx] = max_min_rates(routes, self.capacities, w, cap)

    def _single_link_rates(self, link: np.ndarray, w: np.ndarray, cap: np.ndarray) -> np.ndarray:
        """Fast path: every flow crosses one link, so max-min is sort-and-share per link."""
        out = cap.copy()
        for lk in np.unique(link[link != NO_LINK]):
            on = link == lk
            peak = float(self.capacities[lk])
            out[on] = sort_and_share(np.minimum(cap[on], peak), peak, w[on])
        return out

    def _loads(self, idx: np.ndarray, amount: np.ndarray) -> np.ndarray:
        routes = self._route[idx]
        used = routes != NO_LINK
        links = len(self.capacities)
        per = np.broadcast_to(amount[:, None], routes.shape)[used]
        return np.bincount(routes[used], weights=per, minlength=links)[:links]

    def _carry(self, idx: np.ndarray, moved: np.ndarray) -> None:
        self.link_bytes += self._loads(idx, moved)

    def _account_groups(self, idx: np.ndarray, dt: float) -> None:
        groups = self._group[idx]
        mine = groups >= 0
        if not mine.any():
            return
        g = groups[mine]
        contended = self._rate[idx][mine] < self._solo[idx][mine] * UNCONTENDED
        # few groups are active at once: touch only them, not every group ever seen
        self.group_io_s[np.unique(g)] += dt
        self.group_contended_s[np.unique(g[contended])] += dt

    def _grow_groups(self, group: int) -> None:
        if group >= len(self.group_io_s):
            size = max(group + 1, 2 * len(self.group_io_s))
            self.group_io_s = np.concatenate((self.group_io_s, np.zeros(size - len(self.group_io_s))))
            self.group_contended_s = np.concatenate(
                (self.group_contended_s, np.zeros(size - len(self.group_contended_s)))
            )

    def _take_slot(self) -> int:
        if not self._free:
            self._grow()
        return self._free.pop()

    def _grow(self) -> None:
        old = len(self._size)
        new = 2 * old
        self._route = np.vstack((self._route, np.full((old, self.max_route), NO_LINK, dtype=np.int64)))
        for name in ("_size", "_left", "_solo", "_rate"):
            setattr(self, name, np.concatenate((getattr(self, name), np.zeros(old))))
        self._weight = np.concatenate((self._weight, np.ones(old)))
        self._cap = np.concatenate((self._cap, np.full(old, np.inf)))
        self._group = np.concatenate((self._group, np.full(old, -1, dtype=np.int64)))
        self._active = np.concatenate((self._active, np.zeros(old, dtype=bool)))
        self._free.extend(range(new - 1, old - 1, -1))
