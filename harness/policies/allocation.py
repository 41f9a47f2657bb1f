"""Choosing concrete compute nodes and BB nodes for a job that starts now (Sections 2.2, 3.1).

Model: a job asks for ``nodes`` compute nodes and ``share`` MB of burst buffer per
compute node. Each compute node's share lives whole on one BB node (never split),
so BB node ``b`` can host ``avail[b] // share`` shares. Any compute node may use any
BB node; the allocator keeps shares near their compute node: the BB node of the
same chassis first (the machine's ``bb_per_chassis`` of them), then the nearest by
dragonfly distance.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.policies.state import Allocation, Topology


def bb_slots(avail_bb_mb: Sequence[int], share_mb: int) -> list[int]:
    """How many per-node shares of ``share_mb`` each BB node can still host."""
    if share_mb <= 0:
        return [1 << 30] * len(avail_bb_mb)
    return [a // share_mb if a > 0 else 0 for a in avail_bb_mb]


def fits(free_compute: int, avail_bb_mb: Sequence[int], nodes: int, share_mb: int) -> bool:
    """Whether a job has room: enough free compute nodes and enough whole shares."""
    if nodes > free_compute:
        return False
    return share_mb <= 0 or sum(bb_slots(avail_bb_mb, share_mb)) >= nodes


def choose_allocation(
    topology: Topology,
    free_by_chassis: Sequence[Sequence[int]],
    avail_bb_mb: Sequence[int],
    nodes: int,
    share_mb: int,
    bb_counts: Sequence[int] | None = None,
) -> Allocation | None:
    """Pick compute nodes and a BB node for each, or ``None`` if the job does not fit.

    ``free_by_chassis[c]`` lists the free compute nodes of chassis ``c`` (ascending);
    ``avail_bb_mb[b]`` is what BB node ``b`` can give for the job's whole run.
    ``bb_counts``, if given, fixes how many shares go to each BB node (a packing
    found for several jobs at once); compute nodes are then matched to them.
    """
    slots = bb_slots(avail_bb_mb, share_mb)
    if bb_counts is not None:
        if sum(bb_counts) != nodes or any(k > s for k, s in zip(bb_counts, slots, strict=True)):
            return None
        slots = list(bb_counts)
    free_total = sum(len(c) for c in free_by_chassis)
    if free_total < nodes or sum(slots) < nodes:
        return None
    chosen = _pick_compute(topology, free_by_chassis, slots, nodes)
    return _place_shares(topology, chosen, slots)


def _pick_compute(
    topology: Topology, free_by_chassis: Sequence[Sequence[int]], slots: Sequence[int], nodes: int
) -> list[int]:
    # Chassis that can keep most shares local (on their own BB nodes) go first.
    def local_room(c: int) -> tuple[int, int, int]:
        free = len(free_by_chassis[c])
        return (-min(free, sum(slots[b] for b in topology.bbs_of_chassis[c])), -free, c)

    chosen: list[int] = []
    for c in sorted(range(len(free_by_chassis)), key=local_room):
        take = min(nodes - len(chosen), len(free_by_chassis[c]))
        chosen.extend(free_by_chassis[c][:take])
        if len(chosen) == nodes:
            break
    return chosen


def _place_shares(topology: Topology, chosen: list[int], slots: Sequence[int]) -> Allocation:
    left = list(slots)
    bb_of: dict[int, int] = {}
    # First pass gives every node a BB node of its own chassis while room lasts, so that
    # an early node cannot take the last local slot of a later node's chassis.
    for c in chosen:
        own = next((b for b in topology.bbs_of_chassis[topology.chassis_of_compute[c]] if left[b] > 0), None)
        if own is not None:
            left[own] -= 1
            bb_of[c] = own
    for c in chosen:
        if c in bb_of:
            continue
        for b in topology.bb_preference[c]:
            if left[b] > 0:
                left[b] -= 1
                bb_of[c] = b
                break
    ordered = sorted(chosen)
    return Allocation(tuple(ordered), tuple(bb_of[c] for c in ordered))
