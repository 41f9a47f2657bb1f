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
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from harness.cluster.base import ClusterError
from harness.experiments.spec import ExperimentSpec

if TYPE_CHECKING:
    from harness.cluster.containers.capacity import HostLimits
    from harness.experiments.executors import LocalExecutor

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
    spec: ExperimentSpec, exp_dir: Path, jobs: int, limits: HostLimits | None = None
) -> list[Slot]:
    """The ``jobs`` slots of an emulate-mode experiment, or SlotError naming ``-j`` and the limit."""
    from harness.cluster.containers.capacity import clusters_that_fit
    from harness.cluster.containers.ports import take_slot_ports
    from harness.cluster.containers.state_dir import ClusterState
    from harness.platform import load_platform
    from harness.platform.writing import save_platform

    assert spec.emulate is not None
    name, base = spec.emulate.cluster_name, spec.platform
    slots = [Slot(0, name, base)]
    if jobs == 1:
        return slots
    if spec.emulate.cluster != "docker":
        raise SlotError(f'-j {jobs}: [emulate] cluster = "{spec.emulate.cluster}" is one Slurm; only '
                        'cluster = "docker" runs cells side by side; use -j 1')  # fmt: skip
    platform = load_platform(base)
    names = [slot_name(name, k) for k in range(jobs)]
    starting = [n for n in names if not _has_containers(n)]
    fit, limit = clusters_that_fit(platform, limits)
    if len(starting) > fit:
        raise SlotError(f"-j {jobs}: {len(starting)} clusters of {platform.node_count} nodes to start, this "
                        f"host holds {fit}: {limit}")  # fmt: skip
    roots = [ClusterState.for_cluster(n).root for n in names[1:]]
    try:
        shifted = take_slot_ports(platform, roots)
    except ClusterError as exc:
        raise SlotError(f"-j {jobs}: {exc}") from None
    folder = exp_dir / SLOTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for k, slot_platform in enumerate(shifted, start=1):
        path = folder / f"{names[k]}.toml"
        save_platform(slot_platform, path, f"slot {k} of the experiment: {names[k]}")
        slots.append(Slot(k, names[k], str(path)))
    return slots


def slotted_executor(slots: list[Slot]) -> Callable[[Path], LocalExecutor]:
    """The local pool of one worker per slot, each holding its slot (:func:`hold_a_slot`)."""
    from harness.experiments.executors import LocalExecutor

    return lambda exp_dir: LocalExecutor(exp_dir, len(slots), hold_a_slot, (slots, str(exp_dir / SLOTS_DIR)))


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

    Ctrl-C reaches every process of the terminal's group: the worker ignores it and the runner
    stops it with one SIGTERM (the cell then stops its replay and cancels its jobs, and a second
    signal cannot cut that short)."""
    global _held
    signal.signal(signal.SIGINT, signal.SIG_IGN)
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
