"""The local Docker cluster: one slurmctld container and a few node-group containers,
each running its share of the slurmd daemons (multiple-slurmd mode), host networking only."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import docker
import docker.errors
from docker.models.containers import Container

from harness.cluster.base import ClusterError, wait_for_idle
from harness.cluster.containers.accounting import accounting_enabled, start_dbd
from harness.cluster.containers.capacity import check_capacity
from harness.cluster.containers.clock import check_clock_mode, clock_mode, open_clock, start_clock
from harness.cluster.containers.diagnostics import node_container_output, stopped_in_start_order
from harness.cluster.containers.image import ensure_image, image_tag
from harness.cluster.containers.ports import check_ports, take_dbd_port, with_recorded_dbd_port
from harness.cluster.containers.state_dir import (
    CONTROLLER_CPU_SHARES,
    SUBMIT_USER,
    ClusterState,
    render_compose,
)
from harness.cluster.containers.waves import WAVE_SLURMD, engine_error, plan_waves
from harness.cluster.start_progress import IdleProgress
from harness.model.atomic import atomic_write_text
from harness.model.clock import VirtualClock
from harness.model.commands import CommandResult
from harness.model.polling import poll_until
from harness.model.rundir import SHARED
from harness.platform import Platform, load_platform
from harness.slurm.config import SchedulerConfig

LABEL = "harness.cluster"
IDLE_TIMEOUT_S = 120.0
IDLE_S_PER_NODE = 0.15
# A busy Docker engine sometimes garbles a multiplexed exec stream: retried this often.
EXEC_ATTEMPTS = 3

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def _docker_client() -> docker.DockerClient:
    try:
        client = docker.from_env(timeout=300)
        client.ping()
    except docker.errors.DockerException as exc:
        raise ClusterError(
            f"no Docker engine answers ({exc}). Start one, e.g. "
            "`dockerd --bridge=none --iptables=false --ip-masq=false &`"
        ) from None
    return client


@dataclass
class UpResult:
    already_up: bool
    seconds_to_idle: float = 0.0
    built_image: bool = False
    notes: list[str] = field(default_factory=list)


class DockerCluster:
    """A Slurm cluster in local containers, named ``name`` (containers ``<name>-ctld``, ``<name>-nodesK``)."""

    def __init__(
        self,
        name: str = "bbemu",
        platform: Platform | None = None,
        sched: SchedulerConfig | None = None,
        state_dir: Path | None = None,
        wave_slurmd: int = WAVE_SLURMD,
    ) -> None:
        self.name = name
        self.wave_slurmd = wave_slurmd  # slurmd started together (waves.py); a benchmark may vary it
        self.sched = sched or SchedulerConfig()
        self.state = ClusterState.for_cluster(name, state_dir)
        given = platform or load_platform()
        # slurmdbd's port left open: taken (again) whenever this cluster renders its files
        self._dbd_port_open = given.deployment.accounting.dbd_port is None
        self.platform = with_recorded_dbd_port(given, self.state.root)
        self._client: docker.DockerClient | None = None

    # -- docker plumbing --------------------------------------------------------
    @property
    def client(self) -> docker.DockerClient:
        if self._client is None:
            self._client = _docker_client()
        return self._client

    @property
    def controller_name(self) -> str:
        return f"{self.name}-ctld"

    def containers(self) -> list[Container]:
        return self.client.containers.list(all=True, filters={"label": f"{LABEL}={self.name}"})

    def _controller(self) -> Container:
        try:
            return self.client.containers.get(self.controller_name)
        except docker.errors.NotFound:
            raise ClusterError(
                f"cluster '{self.name}' is not up (no container {self.controller_name})"
            ) from None

    def is_up(self) -> bool:
        running = [c for c in self.containers() if c.status == "running"]
        expected = 1 + len(self.platform.node_groups()) + accounting_enabled(self)
        return len(running) == expected and self._ctld_answers()

    def _ctld_answers(self) -> bool:
        try:
            return self.exec(["scontrol", "ping"], timeout=10).ok
        except ClusterError:
            return False

    # -- commands ---------------------------------------------------------------
    def exec(self, cmd: list[str], user: str | None = None, timeout: float | None = None) -> CommandResult:
        argv = ["timeout", f"{timeout:g}", *cmd] if timeout else cmd
        controller = self._controller()
        for attempt in range(EXEC_ATTEMPTS):
            try:
                result = controller.exec_run(argv, user=user or "root", demux=True)
                break
            except docker.errors.APIError as exc:  # stopped, or restarting: the head node is away
                raise ClusterError(
                    f"cluster '{self.name}': {self.controller_name}: {exc.explanation}"
                ) from None
            except ValueError:  # docker-py misread the stream's framing ("10 is not a valid stream")
                if attempt == EXEC_ATTEMPTS - 1:
                    raise ClusterError(f"`{' '.join(cmd)}`: the Docker engine garbled its output") from None
        out, err = result.output if result.output else (b"", b"")
        return CommandResult(result.exit_code or 0, (out or b"").decode(), (err or b"").decode())

    def spawn(self, cmd: list[str], user: str | None = None) -> subprocess.Popen:
        """Start ``cmd`` in the controller container without waiting (stdout/stderr piped)."""
        argv = ["docker", "exec", "--user", user or "root", self.controller_name, *cmd]
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def open_shell(self) -> subprocess.Popen:
        """A shell in the controller container reading its lines from a pipe (bytes)."""
        argv = ["docker", "exec", "-i", self.controller_name, "sh"]
        return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    # -- ClusterBackend: the shared directory is a host directory mounted as /shared ------
    def prepare(self, sched: SchedulerConfig, progress: Progress = _quiet) -> None:
        if self.containers() and self.is_up() and not self.image_is_current():
            progress("the running cluster's image is older than the sources: recreating it")
            self.down()
        if self.containers() and self.is_up():
            check_clock_mode(self.state, self.name, sched.clock)
        if not (self.containers() and self.is_up()):
            self.sched = sched  # the configuration is final before any slurmd starts
        result = self.up(progress=progress)
        if result.already_up:
            progress(f"cluster '{self.name}' is up")
            self.reconfigure(sched, progress=progress)
        else:
            progress(f"cluster '{self.name}' up in {result.seconds_to_idle:.1f} s")

    def shared_path(self, rel: str) -> str:
        return f"{SHARED}/{rel}"

    def shared_dir(self, rel: str) -> Path:  # this host's path of ``rel`` (the bind mount's source)
        return self.state.shared / rel

    def put(self, local: Path, rel: str) -> None:
        target = self.state.shared / rel
        for parent in reversed(target.relative_to(self.state.shared).parents[:-1]):
            (self.state.shared / parent).mkdir(exist_ok=True)
            (self.state.shared / parent).chmod(0o1777)  # jobs and the replay run unprivileged
        shutil.copyfile(local, target)

    def get(self, rel: str, local: Path) -> bool:
        source = self.state.shared / rel
        if not source.exists():
            return False
        shutil.copyfile(source, local)
        return True

    def read_text(self, rel: str) -> str | None:
        try:
            return (self.state.shared / rel).read_text()
        except FileNotFoundError:
            return None

    def read_from(self, rel: str, offset: int) -> bytes | None:
        try:
            with open(self.state.shared / rel, "rb") as handle:
                handle.seek(offset)
                return handle.read()
        except FileNotFoundError:
            return None

    def collect_slurm_files(self, target: Path) -> None:
        shutil.copytree(self.state.etc, target / "etc", dirs_exist_ok=True)
        for name in ("slurmctld.log", "jobcomp.log", "slurmdbd.log"):
            if (self.state.log / name).exists():
                shutil.copyfile(self.state.log / name, target / name)

    def image_is_current(self) -> bool:
        """False when the sources changed since the running cluster's image was built."""
        return image_tag() in self._controller().image.tags

    # -- image ------------------------------------------------------------------
    def ensure_image(self, progress: Progress = _quiet, rebuild: bool = False) -> tuple[str, bool]:
        """The image's tag, and whether it was built now (image.py)."""
        return ensure_image(self.client, progress, rebuild)

    # -- lifecycle --------------------------------------------------------------
    def up(self, progress: Progress = _quiet, rebuild: bool = False) -> UpResult:
        existing = self.containers()
        if existing and self.is_up():
            return UpResult(already_up=True)
        if existing:
            progress(f"removing {len(existing)} leftover container(s) of a broken cluster")
            self._remove_containers(existing)
        check_capacity(self.platform)  # before the image build: nothing done for a cluster that cannot start
        tag, built = self.ensure_image(progress, rebuild)
        self.platform = take_dbd_port(self.platform, self.state.root, self._dbd_port_open)
        check_ports(self.platform)
        self._prepare_state(tag)
        start = time.monotonic()
        if accounting_enabled(self):
            start_dbd(self, tag, SUBMIT_USER)
        self._start_controller(tag)
        self._wait_controller(timeout=30)
        progress(f"waiting for {self.platform.node_count} nodes to become idle")
        self._start_node_groups(tag, progress)
        return UpResult(already_up=False, seconds_to_idle=time.monotonic() - start, built_image=built)

    def _prepare_state(self, tag: str) -> None:
        self.state.clear()
        self.state.create()
        self.state.render(self.platform, self.sched)
        if self.sched.clock == "virtual":
            start_clock(self.state)
        atomic_write_text(
            self.state.root / "compose.yaml",
            render_compose(self.platform, self.name, tag, str(self.state.root)),
        )

    def virtual_clock(self) -> VirtualClock | None:
        """The cluster's virtual clock, read and moved from this host (None: the wall clock)."""
        return open_clock(self.state) if clock_mode(self.state) == "virtual" else None

    def run_container(
        self, tag: str, name: str, command: list[str], mounts: dict[str, str] | None = None
    ) -> Container:
        """A container of this cluster; the controller and dbd get the CPU weight of a head node."""
        ro = ("/etc/slurm", "/cluster/munge", "/cluster/etc", "/cluster/dbd")
        return self.client.containers.run(
            tag,
            command=command,
            name=name,
            detach=True,
            network_mode="host",
            init=True,
            labels={LABEL: self.name},
            cpu_shares=CONTROLLER_CPU_SHARES if command[0] in ("controller", "dbd") else None,
            volumes={
                host: {"bind": ctr, "mode": "ro" if ctr in ro else "rw"}
                for host, ctr in (mounts or self.state.mounts()).items()
            },
        )

    def _start_controller(self, tag: str) -> None:
        self.run_container(tag, self.controller_name, ["controller"])

    def _start_node_groups(self, tag: str, progress: Progress = _quiet) -> None:
        """Start the node containers in waves (waves.py) and return once every node is idle:
        each wave waits for the nodes started before it, all within one :attr:`idle_timeout`;
        the Docker engine must answer between waves. Progress lines cover the whole cluster."""
        groups = self.platform.node_groups()
        waves = plan_waves([len(g) for g in groups], self.wave_slurmd)
        tracker = IdleProgress(self.platform.node_count, progress)
        deadline = time.monotonic() + self.idle_timeout
        started: list[str] = []
        for number, wave in enumerate(waves, start=1):
            if number > 1:
                self._require_engine(f"before wave {number} of {len(waves)}")
            if len(waves) > 1:
                size = sum(len(groups[i]) for i in wave)
                progress(f"starting wave {number} of {len(waves)}: {size:,} nodes")
            for index in wave:
                self.run_container(tag, f"{self.name}-nodes{index}", ["nodes", ",".join(groups[index])])
                started += groups[index]
            self._wait_nodes_idle(started, tracker.update, deadline)

    def _require_engine(self, when: str) -> None:
        """A ClusterError naming the Docker engine if it no longer answers (a wedged or dead
        engine would otherwise show as nodes that never come up)."""
        error = engine_error(self.client)
        if error is not None:
            raise ClusterError(
                f"cluster '{self.name}': the Docker engine stopped answering {when} ({error}); "
                "check `docker info` and the engine's log, then `harness cluster down` and up again"
            )

    def _wait_controller(self, timeout: float) -> None:
        if poll_until(self._ctld_answers_or_exited, timeout) == "answers":
            return
        raise ClusterError(
            f"slurmctld did not answer within {timeout:.0f} s. Last log lines:\n"
            + self.tail(self.state.log / "slurmctld.log", 15)
            + "\nContainer output:\n"
            + self._controller().logs(tail=15).decode(errors="replace")
        )

    def _ctld_answers_or_exited(self) -> str | None:
        if self._ctld_answers():
            return "answers"
        ctr = self._controller()
        ctr.reload()
        return "exited" if ctr.status == "exited" else None

    @property
    def idle_timeout(self) -> float:
        """120 s, or 0.15 s per node on bigger platforms (1,134 slurmd start on two cores)."""
        return max(IDLE_TIMEOUT_S, IDLE_S_PER_NODE * self.platform.node_count)

    def _wait_nodes_idle(
        self, nodes: list[str] | None = None, on_poll: Callable[[int], None] | None = None,
        deadline: float | None = None,
    ) -> None:  # fmt: skip
        """Return once ``nodes`` (all by default) are idle; a ClusterError at ``deadline``
        (time.monotonic(); by default :attr:`idle_timeout` from now)."""
        nodes = nodes or self.platform.all_nodes()
        end = time.monotonic() + self.idle_timeout if deadline is None else deadline
        _, missing = wait_for_idle(self, nodes, max(0.0, end - time.monotonic()), on_poll)
        if not missing:
            return
        names = sorted(missing)
        details = [f"{n}: {missing[n]}" for n in names[:10]]
        logs = "\n".join(
            f"--- slurmd-{n}.log\n{self.tail(self.state.log / f'slurmd-{n}.log', 5)}" for n in names[:3]
        )
        raise ClusterError(
            f"{len(missing)} of {len(nodes)} nodes not idle after {self.idle_timeout:.0f} s "
            f"({', '.join(details)}{' ...' if len(names) > 10 else ''}).\n{logs}\n"
            f"--- slurmctld.log\n{self.tail(self.state.log / 'slurmctld.log', 10)}\n"
            + node_container_output(self, names[:3])
        )

    @staticmethod
    def tail(path: Path, lines: int) -> str:
        try:
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return f"(no {path.name})"

    def reconfigure(self, sched: SchedulerConfig, progress: Progress = _quiet) -> None:
        """Re-render the Slurm files for ``sched``; if slurm.conf changed, ``scontrol reconfigure``
        (slurmctld and every slurmd re-read it, so no node runs with a different slurm.conf)."""
        conf = self.state.etc / "slurm.conf"
        before = conf.read_text() if conf.exists() else ""
        self.sched = sched
        self.platform = take_dbd_port(self.platform, self.state.root, self._dbd_port_open)
        files = self.state.render(self.platform, sched)
        if files.get("slurm.conf") == before:
            return
        progress(f"reconfiguring Slurm: scheduler {sched.mode} ({sched.scheduler_parameters})")
        res = self.exec(["scontrol", "reconfigure"], timeout=60)
        if not res.ok:
            raise ClusterError(f"scontrol reconfigure failed: {(res.stderr or res.stdout).strip()}")
        self._wait_controller(timeout=30)
        self._wait_nodes_idle()

    def revive(self, progress: Progress = _quiet) -> None:
        """Start the stopped containers again, Slurm's state and the shared files kept (a host
        reboot, a dead controller container): a resumed run finds its jobs."""
        for ctr in stopped_in_start_order(self.containers(), self.name):
            progress(f"starting the stopped container {ctr.name}")
            ctr.start()
        self._wait_controller(timeout=60)  # slurmctld reads its saved state first

    def down(self, keep_state: bool = False) -> int:
        """Remove every container of the cluster (and its state unless ``keep_state``); idempotent."""
        containers = self.containers()
        self._remove_containers(containers)
        if not keep_state:
            self.state.remove()
        return len(containers)

    @staticmethod
    def _remove_containers(containers: list[Container]) -> None:
        for ctr in containers:
            with contextlib.suppress(docker.errors.NotFound):
                ctr.remove(force=True)
