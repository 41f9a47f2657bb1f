"""The I/O hierarchy a scheduler can reason about (Herbein et al., Section 3.3).

Compute nodes hang off edge switches; above the switches a chain of shared links
(Herbein: the core-switch pool, then the parallel file system) carries every node's
I/O. Each link has a bandwidth; a job placed on ``n`` nodes with a per-node rate ``b``
(its burst buffers' drain rate) takes ``b`` on each of its nodes' links, ``b`` times
its nodes under a switch on that switch, and ``n b`` on every link of the chain.

:class:`Bandwidth` is the bandwidth in use plus the free nodes, as numpy arrays so
that "how many nodes can this job get" is one vectorised expression over the
switches: per switch ``min(free nodes, floor(room / b))``, summed, capped by the
chain's ``floor(room / b)``. Nodes are taken switch by switch in index order, the
lowest free nodes first, which is Herbein's node-by-node walk.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

# Herbein Section 4.1 (CTS-1): 3,888 nodes in 24 scalable units, 216 GB/s per edge
# switch, 432 GB/s of core-switch pool, 70 GB/s of PFS when perfectly provisioned,
# 18 MB/s per node (a checkpoint of half of 128 GB every hour). The node link is
# not given; 4x EDR InfiniBand is 100 Gbit/s.
HERBEIN_NODES = 3_888
HERBEIN_UNITS = 24
HERBEIN_SWITCH_MB_S = 216_000.0
HERBEIN_CORE_MB_S = 432_000.0
HERBEIN_PFS_MB_S = 70_000.0
HERBEIN_NODE_RATE_MB_S = 18.0
EDR_NODE_MB_S = 12_500.0
_EPS = 1e-9


@dataclass(frozen=True)
class IoTree:
    """Links and where each compute node hangs."""

    switch_of_node: tuple[int, ...]
    node_mb_s: float
    switch_mb_s: tuple[float, ...]
    chain: tuple[tuple[str, float], ...]  # (name, MB/s) from the switches up to the PFS

    def __post_init__(self) -> None:
        if not self.switch_of_node or min(self.switch_of_node) < 0:
            raise ValueError("every compute node needs a switch")
        if max(self.switch_of_node) >= len(self.switch_mb_s):
            raise ValueError("a compute node hangs off a switch that has no bandwidth")
        rates = [self.node_mb_s, *self.switch_mb_s, *(bw for _, bw in self.chain)]
        if min(rates) <= 0:
            raise ValueError("link bandwidths must be positive MB/s")

    @classmethod
    def uniform(
        cls,
        switch_of_node: Sequence[int],
        node_mb_s: float,
        switch_mb_s: float,
        chain: Sequence[tuple[str, float]],
    ) -> IoTree:
        switches = max(switch_of_node) + 1
        return cls(tuple(int(s) for s in switch_of_node), node_mb_s, (switch_mb_s,) * switches, tuple(chain))

    @classmethod
    def herbein(
        cls, underprovision: float = 0.0, nodes: int = HERBEIN_NODES, units: int = HERBEIN_UNITS
    ) -> IoTree:
        """CTS-1 with the PFS bandwidth cut by ``underprovision`` (0.1 = 10 %)."""
        if not 0.0 <= underprovision < 1.0:
            raise ValueError(f"PFS underprovisioning must be in [0, 1), got {underprovision}")
        per_unit = -(-nodes // units)
        chain = (("core", HERBEIN_CORE_MB_S), ("pfs", HERBEIN_PFS_MB_S * (1.0 - underprovision)))
        return cls.uniform([c // per_unit for c in range(nodes)], EDR_NODE_MB_S, HERBEIN_SWITCH_MB_S, chain)

    @property
    def nodes(self) -> int:
        return len(self.switch_of_node)

    @property
    def switches(self) -> int:
        return len(self.switch_mb_s)

    def link_names(self) -> list[str]:
        return [f"switch{s}" for s in range(self.switches)] + [name for name, _ in self.chain]


class Bandwidth:
    """Free nodes and bandwidth in use at one moment; placements update it in place."""

    __slots__ = ("chain_bw", "chain_used", "free", "switch", "switch_bw", "switch_used", "tree")

    def __init__(self, tree: IoTree) -> None:
        self.tree = tree
        # The tree's tuples as arrays, made once: converting them on every query costs
        # more than the query on a machine of thousands of nodes.
        self.switch = np.asarray(tree.switch_of_node, dtype=np.int64)
        self.switch_bw = np.asarray(tree.switch_mb_s, dtype=np.float64)
        self.chain_bw = np.array([bw for _, bw in tree.chain], dtype=np.float64)
        self.free = np.ones(tree.nodes, dtype=bool)
        self.switch_used = np.zeros(tree.switches)
        self.chain_used = np.zeros(len(tree.chain))

    def copy(self) -> Bandwidth:
        other = Bandwidth.__new__(Bandwidth)
        other.tree = self.tree
        other.switch, other.switch_bw, other.chain_bw = self.switch, self.switch_bw, self.chain_bw
        other.free = self.free.copy()
        other.switch_used = self.switch_used.copy()
        other.chain_used = self.chain_used.copy()
        return other

    # -- queries ----------------------------------------------------------------------
    def room(self, rate: float, allowed: np.ndarray | None = None) -> np.ndarray:
        """Nodes a job of per-node ``rate`` can get under each switch (``allowed``: extra node mask)."""
        tree = self.tree
        usable = self.free if allowed is None else self.free & allowed
        counts = np.bincount(self.switch[usable], minlength=tree.switches)
        if rate <= 0:
            return counts
        if rate > tree.node_mb_s + _EPS:
            return np.zeros(tree.switches, dtype=np.int64)
        spare = self.switch_bw - self.switch_used
        by_switch = np.floor((spare + _EPS) / rate).astype(np.int64)
        return np.minimum(counts, np.maximum(by_switch, 0))

    def chain_room(self, rate: float) -> int:
        """Nodes of per-node ``rate`` the chain above the switches can still carry."""
        if rate <= 0 or not len(self.chain_used):
            return 1 << 40
        spare = self.chain_bw - self.chain_used
        return int(max(np.floor((spare.min() + _EPS) / rate), 0))

    def fits(self, nodes: int, rate: float) -> bool:
        return min(int(self.room(rate).sum()), self.chain_room(rate)) >= nodes

    def overloaded_links(self, tol: float = 1e-6) -> list[str]:
        """Links whose use exceeds their bandwidth (what an I/O-aware schedule never shows)."""
        names = self.tree.link_names()
        used = np.concatenate((self.switch_used, self.chain_used))
        caps = np.concatenate((self.switch_bw, self.chain_bw))
        return [names[i] for i in np.flatnonzero(used > caps * (1 + tol) + tol)]

    # -- updates ----------------------------------------------------------------------
    def pick(self, nodes: int, per_switch: np.ndarray, allowed: np.ndarray | None = None) -> list[int] | None:
        """The lowest free nodes, switch by switch, at most ``per_switch[s]`` under switch ``s``."""
        usable = self.free if allowed is None else self.free & allowed
        chosen: list[int] = []
        for s in np.flatnonzero(per_switch > 0).tolist():
            take = min(int(per_switch[s]), nodes - len(chosen))
            chosen.extend(np.flatnonzero(usable & (self.switch == s))[:take].tolist())
            if len(chosen) == nodes:
                return chosen
        return None

    def take(self, compute: Sequence[int], rate: float) -> None:
        self._apply(compute, rate, +1)

    def release(self, compute: Sequence[int], rate: float) -> None:
        self._apply(compute, rate, -1)

    def _apply(self, compute: Sequence[int], rate: float, sign: int) -> None:
        idx = np.asarray(compute, dtype=np.int64)
        if sign > 0 and not self.free[idx].all():
            raise ValueError("a node given to a job is not free")
        self.free[idx] = sign < 0
        np.add.at(self.switch_used, self.switch[idx], sign * rate)
        self.chain_used += sign * rate * len(idx)


def link_use(tree: IoTree, placements: Iterable[tuple[Sequence[int], float]]) -> dict[str, float]:
    """MB/s in use on every switch and chain link by jobs on these (nodes, per-node rate)."""
    bw = Bandwidth(tree)
    for nodes, rate in placements:
        bw.take(nodes, rate)
    return dict(zip(tree.link_names(), [*bw.switch_used.tolist(), *bw.chain_used.tolist()], strict=True))


def peak_link_use(
    tree: IoTree, jobs: Iterable[tuple[float, float, Sequence[int], float]]
) -> dict[str, float]:
    """The highest MB/s each link carried over a schedule of (start, end, nodes, rate): a job
    holds its rate over [start, end), so one ending when another starts never overlaps it."""
    jobs_list = [job for job in jobs if job[1] > job[0]]  # a job of no duration holds nothing
    # ends (kind 0) before starts (kind 1) at one instant
    events = sorted(
        (t, kind, k) for k, (start, end, _, _) in enumerate(jobs_list) for t, kind in ((end, 0), (start, 1))
    )
    bw = Bandwidth(tree)
    peak = np.zeros(tree.switches + len(tree.chain))
    for _, kind, k in events:
        _, _, nodes, rate = jobs_list[k]
        if kind:
            bw.take(nodes, rate)
            peak = np.maximum(peak, np.concatenate((bw.switch_used, bw.chain_used)))
        else:
            bw.release(nodes, rate)
    return dict(zip(tree.link_names(), peak.tolist(), strict=True))


def over_allocated(tree: IoTree, use: dict[str, float], tol: float = 1e-6) -> list[str]:
    """The links of ``use`` above their bandwidth."""
    caps = dict(zip(tree.link_names(), [*tree.switch_mb_s, *(bw for _, bw in tree.chain)], strict=True))
    return [name for name, mb_s in use.items() if mb_s > caps[name] * (1 + tol) + tol]
