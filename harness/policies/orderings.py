"""Shared pieces of the search-based policies (maxutil, window, plan).

* the nine candidate orderings of Section 3.2 that seed the permutation searches;
* the queue loads and the lexicographic utilisation objective of Sections 3.2-3.3.
"""

from __future__ import annotations

import numpy as np

from harness.policies.state import JobQueue, Topology


def candidate_orderings(queue: JobQueue, positions: np.ndarray) -> list[np.ndarray]:
    """The nine initial permutations of ``positions``, each a stable sort (ties by arrival).

    FCFS; ascending and descending requested nodes; ascending and descending BB per
    node; ascending and descending ratio of BB per node to nodes; ascending and
    descending walltime.
    """
    nodes = queue.nodes[positions].astype(np.float64)
    share = queue.bb_per_node_mb[positions].astype(np.float64)
    keys = (nodes, share, share / nodes, queue.walltime[positions])
    orders = [positions.copy()]
    for key in keys:
        asc = np.argsort(key, kind="stable")
        desc = np.argsort(-key, kind="stable")
        orders.append(positions[asc])
        orders.append(positions[desc])
    return orders


def compute_first(queue: JobQueue, topology: Topology, beta: float) -> bool:
    """Whether compute leads the objective: storage load in the queue <= beta * compute load."""
    compute_load = float(queue.nodes.sum()) / topology.compute_count
    storage_load = float((queue.nodes * queue.bb_per_node_mb).sum()) / topology.bb_total_mb
    return storage_load <= beta * compute_load


def utilisation_score(
    nodes: int, bb_mb: int, wait_sum: float, count: int, compute_leads: bool
) -> tuple[float, float, float]:
    """Lexicographic objective of launching a set of jobs: (compute, storage, mean wait) or swapped."""
    mean_wait = wait_sum / count if count else 0.0
    if compute_leads:
        return (float(nodes), float(bb_mb), mean_wait)
    return (float(bb_mb), float(nodes), mean_wait)
