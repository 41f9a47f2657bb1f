"""What every cluster backend offers: run Slurm commands next to slurmctld, move files."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Protocol

from harness.model.clock import VirtualClock
from harness.model.commands import CommandResult
from harness.platform import Platform
from harness.slurm.config import SchedulerConfig

# the unprivileged user the emulated jobs are submitted as (the image and the Ansible role create it;
# burst-buffer jobs of root are refused)
SUBMIT_USER = "emu"


class ClusterError(RuntimeError):
    """The cluster could not be brought up, reached or used; the message says why."""


class Spawned(Protocol):
    """A started head-node command: ``subprocess.Popen`` here, a channel over SSH."""

    args: Any
    returncode: int | None
    stdout: IO[str] | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def kill(self) -> None: ...


class Cluster(Protocol):
    name: str

    def exec(self, cmd: list[str], user: str | None = None, timeout: float | None = None) -> CommandResult:
        """Run ``cmd`` on the head node (beside slurmctld)."""
        ...

    def is_up(self) -> bool: ...


class ClusterBackend(Cluster, Protocol):
    """What ``harness run`` needs from wherever the emulated Slurm runs (docker, ssh, local).

    The *shared directory* is seen by the head node and every job (``/shared`` in the
    containers); ``rel`` paths below are relative to it.
    """

    platform: Platform

    def prepare(self, sched: SchedulerConfig, progress: Callable[[str], None]) -> None:
        """Bring the cluster up if needed, apply ``sched``, return when every node is idle."""
        ...

    def revive(self, progress: Callable[[str], None]) -> None:
        """Before a resumed replay: start again what stopped since (containers), keeping
        Slurm's state; a ClusterError when that state is gone or the daemons cannot be started."""
        ...

    def spawn(self, cmd: list[str], user: str | None = None) -> Spawned:
        """Start ``cmd`` on the head node without waiting (stdout and stderr piped)."""
        ...

    def shared_path(self, rel: str) -> str:
        """The head node's path of ``rel`` in the shared directory."""
        ...

    def put(self, local: Path, rel: str) -> None:
        """Copy a local file into the shared directory (parents created, world-writable dirs)."""
        ...

    def get(self, rel: str, local: Path) -> bool:
        """Copy a shared file to ``local``; False if it does not exist."""
        ...

    def read_text(self, rel: str) -> str | None:
        """A small shared file's content (progress polling), None if absent."""
        ...

    def read_from(self, rel: str, offset: int) -> bytes | None:
        """A shared file's bytes from ``offset`` on (growing logs are read incrementally), None if absent."""
        ...

    def collect_slurm_files(self, target: Path) -> None:
        """Copy the rendered Slurm files (``target/etc``), slurmctld.log and jobcomp.log."""
        ...

    def virtual_clock(self) -> VirtualClock | None:
        """The cluster's virtual clock as this host reads and moves it; None on the wall clock."""
        ...


def node_states(cluster: Cluster) -> dict[str, str]:
    """Node name -> lower-case Slurm state, from ``sinfo`` on the head node."""
    res = cluster.exec(["sinfo", "--noheader", "--Node", "--format=%N %T"], timeout=30)
    if not res.ok:
        return {}
    states: dict[str, str] = {}
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2:
            states[parts[0]] = parts[1].lower()
    return states


IDLE_POLL_S, IDLE_POLL_BIG_S, IDLE_POLL_NODES = 0.2, 1.0, 200


def wait_for_idle(
    cluster: Cluster, nodes: list[str], timeout: float, on_poll: Callable[[int], None] | None = None
) -> tuple[float, dict[str, str]]:
    """Wait until every node is idle; returns (seconds waited, states of nodes not idle).
    ``on_poll`` is told the number of ``nodes`` idle after every look (progress lines).

    Asks sinfo every 0.2 s, or every second above 200 nodes: each look is a process in the
    controller container (a Docker exec) and a full node listing, and 1,000 starting slurmd
    already keep both cores busy."""
    pause = IDLE_POLL_S if len(nodes) <= IDLE_POLL_NODES else IDLE_POLL_BIG_S
    start = time.monotonic()
    not_idle: dict[str, str] = {n: "unknown" for n in nodes}
    while time.monotonic() - start < timeout:
        states = node_states(cluster)
        not_idle = {n: states.get(n, "absent") for n in nodes if states.get(n) != "idle"}
        if on_poll is not None:
            on_poll(len(nodes) - len(not_idle))
        if not not_idle:
            return time.monotonic() - start, {}
        time.sleep(pause)
    return time.monotonic() - start, not_idle


def port_in_use(port: int) -> bool:
    """Whether something already listens on (or holds) 127.0.0.1:``port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False
