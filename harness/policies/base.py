"""The policy interface shared by the simulator and the live Slurm hook."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

from harness.policies.state import Allocation, ClusterState, QueuedJob


@dataclass(frozen=True, slots=True)
class Start:
    """Start job ``job_id`` now on ``allocation``."""

    job_id: int
    allocation: Allocation


@dataclass(frozen=True)
class Decision:
    """What a policy wants done now.

    ``starts`` are in the order the policy chose them. ``planned_order`` is the
    policy's priority order of the jobs it leaves waiting (``None`` if it has none
    beyond the queue order), and ``reservations`` the future start it reserved for
    some of them. ``memo`` is handed back in the next :class:`ClusterState`.
    """

    starts: tuple[Start, ...] = ()
    planned_order: tuple[int, ...] | None = None
    reservations: tuple[tuple[int, float], ...] = ()
    memo: Mapping[str, Any] | None = None


class Policy(ABC):
    """A scheduling policy: a pure function of the cluster state, the queue and the time.

    Implementations know nothing of Slurm or of the simulator; they may only use the
    walltime of jobs, never their runtime. Randomness comes from a seed in the
    policy's own configuration, so the same inputs give the same decision.
    """

    description: ClassVar[str] = ""
    # Whether the policy must see every submission/completion batch, even when no
    # queued job fits the free resources (the caller may skip those otherwise).
    needs_every_event: ClassVar[bool] = False

    def __init__(self, name: str) -> None:
        self.name = name

    @abstractmethod
    def decide(self, state: ClusterState, queue: Sequence[QueuedJob], now: float) -> Decision:
        """Jobs to start now (with their allocation) given ``queue`` in submission order."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


@runtime_checkable
class SelectsStagedRuns(Protocol):
    """A policy that also chooses which staged-in jobs run (Cerberus's ``Q_R``).

    Where a start only begins the stage-in (``ClusterState.staged_apart``), the simulator
    asks it, whenever staged-in jobs wait and nodes may have been freed, which of them
    take compute nodes now; a policy without it leaves them first come, first served.
    """

    def select_staged(self, state: ClusterState, staged: Sequence[QueuedJob], now: float) -> list[int]:
        """Ids of the ``staged`` jobs (in staging order) to start running now, in start order."""
        ...
