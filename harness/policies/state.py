"""What a policy sees: the machine's topology, the running jobs, and the waiting queue.

Everything here is plain immutable data so that the simulator and the live Slurm
hook can build it from their own records and hand it to the same policy code.
Node indices are 0-based: compute node ``i`` is ``platform.compute_name(i)``,
BB node ``b`` is ``platform.bb.name(b + 1)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np

from harness.platform import Machine


@dataclass(frozen=True, slots=True)
class QueuedJob:
    """A waiting job as a policy may know it: no runtime, only the user's walltime."""

    job_id: int
    submit: float
    walltime: float
    nodes: int
    bb_per_node_mb: int

    @property
    def bb_total_mb(self) -> int:
        return self.nodes * self.bb_per_node_mb


@dataclass(frozen=True, slots=True)
class Allocation:
    """Concrete resources of one job: ``bb[k]`` holds the BB share of compute node ``compute[k]``."""

    compute: tuple[int, ...]
    bb: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.compute) != len(self.bb):
            raise ValueError("an allocation needs one BB node per compute node")

    def bb_usage_mb(self, bb_per_node_mb: int, bb_count: int) -> list[int]:
        """MB taken on every BB node."""
        usage = [0] * bb_count
        for b in self.bb:
            usage[b] += bb_per_node_mb
        return usage


@dataclass(frozen=True, slots=True)
class RunningJob:
    """A started job; ``expected_end`` is start + walltime, the only end a policy may assume."""

    job_id: int
    start: float
    expected_end: float
    bb_per_node_mb: int
    allocation: Allocation

    @property
    def nodes(self) -> int:
        return len(self.allocation.compute)


@dataclass(frozen=True)
class Topology:
    """The part of a :class:`Machine` that scheduling needs, precomputed once."""

    compute_count: int
    bb_count: int
    bb_capacity_mb: int
    chassis_of_compute: tuple[int, ...]
    bb_preference: tuple[tuple[int, ...], ...]
    # the BB nodes in each chassis (distance 0); by default the study's rule: BB node c in chassis c
    bbs_of_chassis: tuple[tuple[int, ...], ...] = ()

    def __post_init__(self) -> None:
        if not self.bbs_of_chassis:
            chassis = max(self.chassis_of_compute, default=-1) + 1
            one_each = tuple((c,) if c < self.bb_count else () for c in range(chassis))
            object.__setattr__(self, "bbs_of_chassis", one_each)

    @classmethod
    def from_platform(cls, platform: Machine) -> Topology:
        n = platform.compute_count
        return cls(
            compute_count=n,
            bb_count=platform.bb_count,
            bb_capacity_mb=platform.bb_capacity_mb,
            chassis_of_compute=tuple(platform.chassis_of_compute(i) for i in range(n)),
            bb_preference=tuple(tuple(platform.bb_preference(i)) for i in range(n)),
            bbs_of_chassis=tuple(tuple(platform.bbs_of_chassis(c)) for c in range(platform.chassis)),
        )

    @property
    def bb_total_mb(self) -> int:
        return self.bb_count * self.bb_capacity_mb

    def can_ever_run(self, nodes: int, bb_per_node_mb: int) -> bool:
        """Whether the job fits on the empty machine (a share cannot be split between BB nodes)."""
        if nodes < 1 or nodes > self.compute_count or bb_per_node_mb > self.bb_capacity_mb:
            return False
        if bb_per_node_mb <= 0:
            return True
        return self.bb_count * (self.bb_capacity_mb // bb_per_node_mb) >= nodes


class JobQueue(Sequence[QueuedJob]):
    """The waiting queue in submission order, also as numpy columns for vectorised checks.

    Policies treat it as a plain ``Sequence[QueuedJob]``; the columns spare them from
    rebuilding arrays on every decision when the queue holds thousands of jobs.
    """

    __slots__ = ("bb_per_node_mb", "job_id", "nodes", "submit", "walltime")

    def __init__(
        self,
        job_id: np.ndarray,
        submit: np.ndarray,
        walltime: np.ndarray,
        nodes: np.ndarray,
        bb_per_node_mb: np.ndarray,
    ) -> None:
        self.job_id = np.asarray(job_id, dtype=np.int64)
        self.submit = np.asarray(submit, dtype=np.float64)
        self.walltime = np.asarray(walltime, dtype=np.float64)
        self.nodes = np.asarray(nodes, dtype=np.int64)
        self.bb_per_node_mb = np.asarray(bb_per_node_mb, dtype=np.int64)

    @classmethod
    def of(cls, jobs: Iterable[QueuedJob]) -> JobQueue:
        if isinstance(jobs, JobQueue):
            return jobs
        items = list(jobs)
        return cls(
            np.array([j.job_id for j in items], dtype=np.int64),
            np.array([j.submit for j in items], dtype=np.float64),
            np.array([j.walltime for j in items], dtype=np.float64),
            np.array([j.nodes for j in items], dtype=np.int64),
            np.array([j.bb_per_node_mb for j in items], dtype=np.int64),
        )

    def __len__(self) -> int:
        return len(self.job_id)

    @overload
    def __getitem__(self, index: int) -> QueuedJob: ...
    @overload
    def __getitem__(self, index: slice) -> list[QueuedJob]: ...
    def __getitem__(self, index: int | slice) -> QueuedJob | list[QueuedJob]:
        if isinstance(index, slice):
            return [self._job(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._job(index)

    def __iter__(self) -> Iterator[QueuedJob]:
        # Built lazily: FCFS usually looks at the first job or two of a long queue.
        return (self._job(i) for i in range(len(self)))

    def _job(self, i: int) -> QueuedJob:
        return QueuedJob(
            int(self.job_id[i]),
            float(self.submit[i]),
            float(self.walltime[i]),
            int(self.nodes[i]),
            int(self.bb_per_node_mb[i]),
        )


@dataclass(frozen=True)
class ClusterState:
    """Running jobs and what they leave free. Build it with :meth:`from_running`.

    ``memo`` is the opaque memory a policy handed back in its previous
    :class:`~harness.policies.base.Decision` (e.g. job ages of the window policy);
    the caller passes it back unchanged, which keeps policies pure functions.
    """

    topology: Topology
    running: tuple[RunningJob, ...]
    free_compute: tuple[int, ...]
    free_bb_mb: tuple[int, ...]
    memo: Mapping[str, Any] = field(default_factory=dict)
    # Jobs staging outside the allocation (the simulator's ``--staging outside``): they hold
    # their BB shares (``allocation.bb``, counted out of ``free_bb_mb``) but none of the
    # nodes of ``allocation.compute``, and are assumed to release the BB at ``expected_end``.
    holding_bb: tuple[RunningJob, ...] = ()
    # Whether a start takes only the BB shares (stage-in begins) and the compute nodes are
    # taken once staged in (the simulator's staging off the allocation): a three-phase
    # policy then selects stage-ins and runs apart. False: a start takes both at once.
    staged_apart: bool = False

    @classmethod
    def from_running(
        cls,
        topology: Topology,
        running: Iterable[RunningJob],
        memo: Mapping[str, Any] | None = None,
        holding_bb: Iterable[RunningJob] = (),
    ) -> ClusterState:
        """The state with ``running`` on their compute nodes and BB shares, and
        ``holding_bb`` (e.g. jobs staging out) on their BB shares only."""
        jobs, holding = tuple(running), tuple(holding_bb)
        busy = [False] * topology.compute_count
        free_bb = [topology.bb_capacity_mb] * topology.bb_count
        for job in jobs:
            for c in job.allocation.compute:
                if busy[c]:
                    raise ValueError(f"compute node {c} is allocated twice (job {job.job_id})")
                busy[c] = True
        for job in jobs + holding:
            for b in job.allocation.bb:
                free_bb[b] -= job.bb_per_node_mb
        if min(free_bb, default=0) < 0:
            raise ValueError("running and BB-holding jobs exceed the capacity of a BB node")
        free = tuple(i for i, taken in enumerate(busy) if not taken)
        return cls(topology, jobs, free, tuple(free_bb), dict(memo or {}), holding)

    @classmethod
    def idle(cls, topology: Topology) -> ClusterState:
        return cls.from_running(topology, ())
