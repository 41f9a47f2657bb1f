"""A Docker cluster's virtual clock (harness.model.clock): its page and libfaketime's file in
the cluster's shared directory, made before any daemon starts, and the mode a running cluster
was started in (its rendered configuration holds the daemons' preload, or not)."""

from __future__ import annotations

import time

import docker
import docker.errors

from harness.cluster.base import ClusterError
from harness.cluster.containers.state_dir import ClusterState
from harness.model.clock import VirtualClock, faketime_line, preload_env, write_faketime
from harness.model.rundir import CLOCK_PAGE, FAKETIME_FILE, SHARED
from harness.slurm.config import CLOCK_ENV


def start_clock(state: ClusterState) -> None:
    """The clock page and libfaketime's file: the virtual clock reads the real time and goes at
    its pace until a run sets its speed."""
    page = state.shared / CLOCK_PAGE
    page.parent.mkdir(parents=True, exist_ok=True)
    clock = VirtualClock.create(page, start=time.time(), rate=1.0)
    write_faketime(state.shared / FAKETIME_FILE, faketime_line(clock.reading(), time.time()))
    clock.close()


def open_clock(state: ClusterState) -> VirtualClock:
    """The cluster's clock, writable: this host is its controller, and moves the daemons'
    faketime file with the page (the daemons first)."""
    return VirtualClock(state.shared / CLOCK_PAGE, writable=True, faketime=state.shared / FAKETIME_FILE)


def clock_mode(state: ClusterState) -> str:
    """``virtual`` when the cluster's daemons were started on the virtual clock, else ``wall``."""
    return "virtual" if (state.etc / CLOCK_ENV).exists() else "wall"


def on_the_clusters_clock(state: ClusterState, command: list[str]) -> list[str]:
    """``command`` as run beside slurmctld on the cluster's clock: on the virtual clock a Slurm
    client (sacct, squeue) then reads the cluster's now, and sacct's default window (up to now)
    covers the jobs of a run that went ahead of the host's clock."""
    if clock_mode(state) != "virtual":
        return command
    env = preload_env(f"{SHARED}/{FAKETIME_FILE}")
    return ["env", *(f"{key}={value}" for key, value in env.items()), *command]


def running_clock(name: str) -> str | None:
    """The clock of the Docker cluster ``name`` if its controller container runs, else None
    (no such cluster, or no Docker engine answering)."""
    try:
        controller = docker.from_env(timeout=30).containers.get(f"{name}-ctld")
    except (docker.errors.DockerException, OSError):
        return None
    return clock_mode(ClusterState.for_cluster(name)) if controller.status == "running" else None


def check_clock_mode(state: ClusterState, name: str, wanted: str) -> None:
    """Refuse to run on a cluster started on the other clock (its daemons' preload is fixed)."""
    running = clock_mode(state)
    if running != wanted:
        raise ClusterError(
            f"cluster '{name}' runs on the {running} clock and this run needs the {wanted} clock: "
            f"`harness cluster down --name {name}` first, or use another --name"
        )
