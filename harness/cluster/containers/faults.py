"""Daemon faults injected into a running Docker cluster (the fault-tolerance tests).

- :func:`crash_node`: a node's slurmd and every process of the jobs on it are killed
  (SIGKILL: a node that crashed) and kept down (the container's supervisor waits while
  ``/run/slurm/hold-<node>`` exists); slurmctld notices after ``SlurmdTimeout`` and fails
  or requeues the node's jobs. :func:`revive_node` lets the supervisor start it again.
- :func:`restart_controller`: slurmctld stopped (SIGTERM: it saves its state in
  ``StateSaveLocation`` on the cluster's spool volume), kept down ``down_s`` seconds, and
  started again by the controller container's supervisor; processes beside it (the replay)
  live on.
- :func:`stop_node_container` / :func:`start_node_container`: a node container stopped
  and started again.
"""

from __future__ import annotations

import time

from harness.cluster.base import ClusterError, node_states
from harness.cluster.containers.backend import DockerCluster

CTLD_HOLD = "/run/slurm/ctld-hold"  # the entrypoint keeps slurmctld down while this exists


def node_hold(node: str) -> str:
    return f"/run/slurm/hold-{node}"


def node_container(cluster: DockerCluster, node: str) -> str:
    for index, group in enumerate(cluster.platform.node_groups()):
        if node in group:
            return f"{cluster.name}-nodes{index}"
    raise ClusterError(f"cluster '{cluster.name}' has no node {node}")


def doomed_pids(ps_text: str, node: str, job_ids: list[int]) -> list[int]:
    """From ``ps -eo pid,ppid,args``: the node's slurmd, the step daemons of ``job_ids`` and
    every descendant of those (the jobs' own processes)."""
    parent: dict[int, int] = {}
    roots: set[int] = set()
    steps = tuple(f"slurmstepd: [{j}." for j in job_ids)
    for line in ps_text.splitlines():
        parts = line.split(None, 2)
        if len(parts) < 3 or not parts[0].isdigit():
            continue
        pid, ppid, args = int(parts[0]), int(parts[1]), parts[2].strip()
        parent[pid] = ppid
        words = args.split()
        is_slurmd = words[:1] == ["/usr/sbin/slurmd"] and words[-2:] == ["-N", node]
        if is_slurmd or (steps and args.startswith(steps)):
            roots.add(pid)
    doomed = set(roots)
    grew = True
    while grew:
        new = {pid for pid, ppid in parent.items() if ppid in doomed and pid not in doomed}
        doomed |= new
        grew = bool(new)
    return sorted(doomed)


def _exec(cluster: DockerCluster, container: str, cmd: list[str]) -> str:
    result = cluster.client.containers.get(container).exec_run(cmd, user="root", demux=True)
    out, _ = result.output if result.output else (b"", b"")
    return (out or b"").decode()


def jobs_on_node(cluster: DockerCluster, node: str) -> list[int]:
    res = cluster.exec(["squeue", "--noheader", f"--nodelist={node}", "--format=%i"], timeout=30)
    return [int(x) for x in res.stdout.split() if x.isdigit()]


def crash_node(cluster: DockerCluster, node: str) -> list[int]:
    """Kill ``node``'s slurmd and its jobs' processes, keep it down; returns the jobs it ran."""
    container = node_container(cluster, node)
    jobs = jobs_on_node(cluster, node)
    _exec(cluster, container, ["touch", node_hold(node)])
    pids = doomed_pids(_exec(cluster, container, ["ps", "-eo", "pid,ppid,args"]), node, jobs)
    if not pids:
        raise ClusterError(f"no slurmd of node {node} in {container}")
    _exec(cluster, container, ["kill", "-KILL", *map(str, pids)])
    return jobs


def revive_node(cluster: DockerCluster, node: str) -> None:
    """Let the crashed node's slurmd start again (it registers and returns to service)."""
    _exec(cluster, node_container(cluster, node), ["rm", "-f", node_hold(node)])


def restart_controller(cluster: DockerCluster, down_s: float, timeout: float = 60.0) -> float:
    """Stop slurmctld, keep it down ``down_s`` s, start it; returns the seconds it was down."""
    ctld = cluster.controller_name
    _exec(cluster, ctld, ["touch", CTLD_HOLD])
    pid = _exec(cluster, ctld, ["cat", "/run/slurm/slurmctld.pid"]).strip()
    stopped = time.monotonic()
    _exec(cluster, ctld, ["kill", "-TERM", pid])
    while _exec(cluster, ctld, ["pgrep", "-x", "slurmctld"]).strip():
        if time.monotonic() - stopped > timeout:
            raise ClusterError("slurmctld did not stop")
        time.sleep(0.2)
    time.sleep(max(0.0, down_s - (time.monotonic() - stopped)))
    _exec(cluster, ctld, ["rm", "-f", CTLD_HOLD])
    while not cluster.exec(["scontrol", "ping"], timeout=10).ok:
        if time.monotonic() - stopped > down_s + timeout:
            raise ClusterError("slurmctld did not come back")
        time.sleep(0.2)
    return time.monotonic() - stopped


def stop_node_container(cluster: DockerCluster, index: int) -> list[str]:
    """Stop the ``index``-th node container; returns its nodes."""
    cluster.client.containers.get(f"{cluster.name}-nodes{index}").stop(timeout=5)
    return list(cluster.platform.node_groups()[index])


def start_node_container(cluster: DockerCluster, index: int, timeout: float = 60.0) -> float:
    """Start it again; returns the seconds until its nodes answer slurmctld again."""
    started = time.monotonic()
    cluster.client.containers.get(f"{cluster.name}-nodes{index}").start()
    nodes = cluster.platform.node_groups()[index]
    while time.monotonic() - started < timeout:
        states = node_states(cluster)
        if all(not any(s in states.get(n, "down") for s in ("down", "unknown", "*")) for n in nodes):
            return time.monotonic() - started
        time.sleep(0.5)
    raise ClusterError(f"nodes {nodes} did not come back within {timeout:g} s")
