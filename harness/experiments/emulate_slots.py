"""Emulated cells side by side: ``harness experiment run -j N`` on N Docker clusters.

Slot 0 is the experiment's own cluster (``[emulate] cluster_name``, the platform as written), so
``-j 1`` is the one-cluster case; slot k >= 1 is cluster ``<cluster_name>-<k>`` on the platform
with its controller port and slurmd range shifted (:func:`take_slot_ports`, recorded in the
cluster's state directory, so a later run finds its cluster on the same ports). The runner
checks, before anything starts, that the host holds the N clusters and finds their ports; each
worker process of the pool then holds one slot for its whole life (a lock on the slot), so a
cluster replays one cell at a time and a worker's cells all go to the same cluster.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from harness.cluster.base import ClusterError, port_in_use
from harness.experiments.spec import ExperimentSpec

if TYPE_CHECKING:
    from harness.cluster.containers.capacity import HostLimits
    from harness.platform import Platform

SLOTS_DIR = ".slots"  # in the experiment directory: the slots' platforms and locks
SLOT_WAIT_S = 60.0  # a worker of a replaced pool waits this long for its predecessor's slot


class SlotError(ValueError):
    """The host cannot hold the clusters ``-j`` asks for."""


@dataclass(frozen=True)
class Slot:
    index: int
    cluster_name: str
    platform: str  # as a cell's ``platform`` input: "default" or a TOML file


def slot_name(cluster_name: str, index: int) -> str:
    """Slot 0 keeps the experiment's cluster; the others are numbered after it."""
    return cluster_name if index == 0 else f"{cluster_name}-{index}"


def plan_slots(
    spec: ExperimentSpec,
    exp_dir: Path,
    jobs: int,
    limits: HostLimits | None = None,
    is_running: Callable[[str], bool] | None = None,
    in_use: Callable[[int], bool] = port_in_use,
) -> list[Slot]:
    """The ``jobs`` slots of an emulate-mode experiment, or SlotError naming ``-j`` and the limit
    (``limits``: the host's, read from /proc by default; ``is_running``: whether a cluster has
    containers, asked of Docker by default; ``in_use``: whether a port is taken, by a bind)."""
    from harness.platform import load_platform

    assert spec.emulate is not None
    names = [slot_name(spec.emulate.cluster_name, k) for k in range(jobs)]
    if jobs == 1:
        return [Slot(0, names[0], spec.platform)]
    if spec.emulate.cluster != "docker":
        raise SlotError(f'-j {jobs}: [emulate] cluster = "{spec.emulate.cluster}" is one Slurm; only '
                        'cluster = "docker" runs cells side by side; use -j 1')  # fmt: skip
    platform, folder = load_platform(spec.platform), exp_dir / SLOTS_DIR
    try:
        running = {n for n in names if (is_running or _has_containers)(n)}
        _check_room(platform, len(names) - len(running), limits)
        shifted = _take_ports(platform, names[1:], running, folder, in_use)
    except (SlotError, ClusterError) as exc:
        raise SlotError(f"-j {jobs}: {exc}") from None
    return [Slot(0, names[0], spec.platform), *_saved(shifted, names[1:], folder)]


def _check_room(platform: Platform, starting: int, limits: HostLimits | None) -> None:
    """The clusters to start (those up already hold their memory) against what the host holds."""
    from harness.cluster.containers.capacity import clusters_that_fit

    fit, limit = clusters_that_fit(platform, limits)
    if starting > fit:
        raise SlotError(f"{starting} clusters of {platform.node_count} nodes to start, this host holds "
                        f"{fit}: {limit}")  # fmt: skip


def _take_ports(
    platform: Platform, names: list[str], running: set[str], folder: Path, in_use: Callable[[int], bool]
) -> list[Platform]:
    """The slots' platforms. A slot cluster that a run recreated (its image older than the
    sources, or on the other clock) lost the record with its state directory but runs on the
    platform this experiment wrote for it: recorded again first, so it keeps its ports."""
    from harness.cluster.containers.ports import record_slot_ports, take_slot_ports
    from harness.cluster.containers.state_dir import ClusterState
    from harness.platform import load_platform

    roots = [ClusterState.for_cluster(n).root for n in names]
    for name, root in zip(names, roots, strict=True):
        written = folder / f"{name}.toml"
        if name in running and written.exists():
            record_slot_ports(load_platform(written), root)
    return take_slot_ports(platform, roots, in_use)


def _saved(platforms: list[Platform], names: list[str], folder: Path) -> list[Slot]:
    """Slots 1, 2, ... on their platforms, written where the workers read them."""
    from harness.platform.writing import save_platform

    folder.mkdir(parents=True, exist_ok=True)
    slots = []
    for k, (name, platform) in enumerate(zip(names, platforms, strict=True), start=1):
        path = folder / f"{name}.toml"
        save_platform(platform, path, f"slot {k} of the experiment: cluster {name}")
        slots.append(Slot(k, name, str(path)))
    return slots


def build_image_once(slots: list[Slot], say: Callable[[str], None]) -> None:
    """The cluster image of the current sources, built here when missing: the slots' clusters
    start side by side and would each build it at the same time. Nothing to do for one slot
    or none: the runner of a simulated grid may run where there is no Docker (a Slurm job)."""
    if len(slots) <= 1:
        return
    from harness.cluster.containers.backend import DockerCluster

    try:
        DockerCluster(name=slots[0].cluster_name).ensure_image(say)
    except ClusterError as exc:  # no Docker engine: one line, as the runs would say it
        raise SlotError(str(exc)) from None


def left_up_line(slots: list[Slot]) -> str:
    """What the summary says of the clusters, left up as after ``harness run``."""
    names = [s.cluster_name for s in slots]
    down = "; ".join(f"harness cluster down --name {n}" for n in names)
    return f"cluster{'s' if len(names) > 1 else ''} left up: {', '.join(names)} ({down})"


def _has_containers(name: str) -> bool:
    from harness.cluster.containers.backend import DockerCluster

    return bool(DockerCluster(name=name).containers())


# -- in a worker process --------------------------------------------------------------------
_held: tuple[Slot, IO[str]] | None = None  # this worker's slot and its lock (open for its life)


def hold_a_slot(slots: list[Slot], lock_dir: str) -> None:
    """The pool's initializer: take the first slot no other worker holds, for this worker's life.

    The worker leaves the terminal's process group: Ctrl-C would otherwise reach it and its
    ``docker exec`` children (the replay's connection) at once, and the runner's SIGTERM then cut
    short the cell's cleanup. The runner alone stops it, with one SIGTERM: the cell stops its
    replay and cancels its jobs (``emulate_cell.sigterm_stops_the_run``)."""
    global _held
    os.setpgrp()
    deadline = time.monotonic() + SLOT_WAIT_S
    while _held is None:
        _held = _try_slots(slots, Path(lock_dir))
        if _held is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no free slot among {[s.cluster_name for s in slots]} in {lock_dir}")
            time.sleep(0.2)  # a worker of the pool this one replaces is still stopping


def _try_slots(slots: list[Slot], lock_dir: Path) -> tuple[Slot, IO[str]] | None:
    lock_dir.mkdir(parents=True, exist_ok=True)
    for slot in slots:
        handle = open(lock_dir / f"{slot.cluster_name}.lock", "a")  # noqa: SIM115 (held for the process's life)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        return slot, handle
    return None


def worker_slot() -> Slot | None:
    """The slot this worker holds; None outside a slotted pool (a test, ``--executor slurm``)."""
    return None if _held is None else _held[0]
