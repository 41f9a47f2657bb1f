"""Slurm deployed on hosts (by ``ansible/site.yml``), driven by commands: on this machine
(``--cluster local``) or on a head node over SSH (``--cluster ssh://user@head[:port]``).

Everything goes through one command runner, so both backends share every code path: a
command for the head node is wrapped for the right user (``runuser``/``sudo -n``), then
either run here or sent over SSH (``harness.cluster.hosts.ssh``: one persistent Fabric/Paramiko
connection, a channel per command, SFTP for files the login user may move itself).

The playbook leaves a description of the cluster on the head node (``/etc/harness``):
``cluster.json`` (head, workers, which worker runs which node) and ``platform.toml``.
``prepare`` renders the Slurm files for the run's scheduler settings from that layout, puts
them in the head's ``/etc/slurm``, restarts slurmctld and waits until every node is idle.
Like the Docker path, only slurmctld restarts: the workers' slurmd keep the playbook's files,
whose node part does not depend on the scheduler settings.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import subprocess
import tomllib
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from harness.cluster.ansible_render.variables import (
    CLUSTER_JSON,
    PLATFORM_TOML,
    SHARED_DIR,
    Layout,
    LayoutError,
    controller_files,
)
from harness.cluster.ansible_render.variables import render_cluster_files as render_for_layout
from harness.cluster.base import ClusterError, Spawned, wait_for_idle
from harness.cluster.hosts.runners import (
    MISSING_RC,
    SLACK_S,
    DirectRefused,
    LocalRunner,
    Runner,
    as_user,
    install_script,
    parse_ssh_url,
    put_script,
    read_script,
    with_timeout,
)
from harness.cluster.start_progress import IdleProgress
from harness.model.atomic import atomic_write_bytes
from harness.model.clock import VirtualClock
from harness.model.commands import CommandResult
from harness.model.polling import poll_until
from harness.platform import Platform, PlatformError, load_platform, platform_from_dict
from harness.slurm.config import SLURM_FILES, SchedulerConfig

Progress = Callable[[str], None]

HARNESS_ETC = "/etc/harness"
SLURM_ETC = "/etc/slurm"
SERVICE_COMMAND = "harness-service"  # installed by the playbook; systemd or pid files
IDLE_TIMEOUT_S = 120.0
CTLD_TIMEOUT_S = 30.0
# Where the rendered slurm.conf puts the logs a run collects (read from it; these if absent).
DEFAULT_LOGS = {
    "SlurmctldLogFile": "/var/log/slurm/slurmctld.log",
    "JobCompLoc": "/var/log/slurm/jobcomp.log",
}


def _quiet(_: str) -> None:
    pass


# -- slurm.conf and platforms on the head node -----------------------------------------------
def conf_value(conf: str, key: str) -> str | None:
    """The value of ``key=`` in slurm.conf text (first occurrence, case-insensitive key)."""
    for line in conf.splitlines():
        name, sep, value = line.strip().partition("=")
        if sep and name.lower() == key.lower():
            return value.split("#", 1)[0].strip()
    return None


def comparable(platform: Platform) -> Platform:
    """The platform without what only the Docker path uses (how many node containers)."""
    return platform.redeployed(node_containers=1)


# -- the backend ---------------------------------------------------------------------------
class HostCluster:
    """A ClusterBackend over a command runner; see the module docstring."""

    def __init__(self, runner: Runner, platform: Platform | None = None, login: str | None = None) -> None:
        self.runner = runner
        self.platform = platform or load_platform()
        self.name = runner.describe()
        self.shared_dir = SHARED_DIR
        self._login = login
        self._files: dict[str, str] = {}

    # -- commands -------------------------------------------------------------------------
    @property
    def login(self) -> str:
        """Who the runner logs in as (asked once when the URL names no user)."""
        if self._login is None:
            res = self._call(["id", "-un"], user=None, login="root", timeout=30)
            if res.returncode != 0 or not res.stdout.strip():
                raise ClusterError(f"cannot run commands on {self.runner.describe()}: {res.stderr.decode()}")
            self._login = res.stdout.decode().strip()
        return self._login

    def _call(
        self,
        argv: list[str],
        user: str | None,
        timeout: float | None = None,
        data: bytes | None = None,
        login: str | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        wrapped = as_user(with_timeout(argv, timeout), user, login or self.login)
        return self.runner.run(wrapped, data, (timeout + SLACK_S) if timeout else None)

    def _check(self, res: subprocess.CompletedProcess[bytes], what: str) -> None:
        if res.returncode != 0:
            raise ClusterError(
                f"{what} on {self.runner.describe()}: {res.stderr.decode(errors='replace').strip()}"
            )

    def exec(self, cmd: list[str], user: str | None = None, timeout: float | None = None) -> CommandResult:
        res = self._call(cmd, user, timeout)
        return CommandResult(
            res.returncode, res.stdout.decode(errors="replace"), res.stderr.decode(errors="replace")
        )

    def spawn(self, cmd: list[str], user: str | None = None) -> Spawned:
        return self.runner.spawn(as_user(cmd, user, self.login))

    def is_up(self) -> bool:
        try:
            return self.exec(["scontrol", "ping"], timeout=10).ok
        except ClusterError:
            return False

    def revive(self, progress: Progress = _quiet) -> None:
        """The daemons of a deployed cluster are the hosts' services: a resumed run needs them
        answering, it does not start them."""
        if not self.is_up():
            raise ClusterError(
                f"slurmctld of {self.name} does not answer: start it (systemctl start slurmctld), "
                "then resume the run"
            )

    # -- files ------------------------------------------------------------------------------
    def read_bytes(self, path: str, offset: int = 0) -> bytes | None:
        """A head-node file's bytes from ``offset`` on (as root if the login may not), None if absent."""
        with contextlib.suppress(DirectRefused):
            return self.runner.get_file(path, offset)
        res = self._call(read_script(path, offset), user=None, timeout=300)
        if res.returncode == MISSING_RC:
            return None
        self._check(res, f"cannot read {path}")
        return res.stdout

    def install(self, path: str, data: bytes) -> None:
        self._check(
            self._call(install_script(path), user=None, timeout=60, data=data), f"cannot write {path}"
        )

    def shared_path(self, rel: str) -> str:
        return f"{self.shared_dir}/{rel}"

    def put(self, local: Path, rel: str) -> None:
        with contextlib.suppress(DirectRefused):
            return self.runner.put_file(self.shared_dir, rel, local.read_bytes())
        res = self._call(put_script(self.shared_dir, rel), user=None, timeout=300, data=local.read_bytes())
        self._check(res, f"cannot copy {local} to {self.shared_path(rel)}")

    def get(self, rel: str, local: Path) -> bool:
        data = self.read_bytes(self.shared_path(rel))
        if data is None:
            return False
        atomic_write_bytes(local, data)
        return True

    def read_text(self, rel: str) -> str | None:
        data = self.read_bytes(self.shared_path(rel))
        return None if data is None else data.decode(errors="replace")

    def read_from(self, rel: str, offset: int) -> bytes | None:
        return self.read_bytes(self.shared_path(rel), offset)

    def collect_slurm_files(self, target: Path) -> None:
        (target / "etc").mkdir(parents=True, exist_ok=True)
        for name in SLURM_FILES:
            data = self.read_bytes(f"{SLURM_ETC}/{name}")
            if data is not None:
                atomic_write_bytes(target / "etc" / name, data)
        conf = (target / "etc" / "slurm.conf").read_text() if (target / "etc" / "slurm.conf").exists() else ""
        for key, default in DEFAULT_LOGS.items():
            path = conf_value(conf, key) or default
            data = self.read_bytes(path)
            if data is not None:
                atomic_write_bytes(target / PurePosixPath(path).name, data)

    # -- prepare ----------------------------------------------------------------------------
    def describe_cluster(self) -> dict:
        """The head node's /etc/harness/cluster.json, as the playbook left it."""
        raw = self.read_bytes(f"{HARNESS_ETC}/{CLUSTER_JSON}")
        if raw is None:
            raise ClusterError(
                f"{self.runner.describe()} has no {HARNESS_ETC}/{CLUSTER_JSON}: deploy the cluster first "
                "(ansible-playbook -i inventory.ini ansible/site.yml, see docs/ansible.md)"
            )
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ClusterError(f"{HARNESS_ETC}/{CLUSTER_JSON}: {exc}") from None

    def head_platform(self) -> Platform:
        raw = self.read_bytes(f"{HARNESS_ETC}/{PLATFORM_TOML}")
        if raw is None:
            raise ClusterError(f"{self.runner.describe()} has no {HARNESS_ETC}/{PLATFORM_TOML}")
        where = f"{self.runner.describe()}:{HARNESS_ETC}/{PLATFORM_TOML}"
        try:
            return platform_from_dict(tomllib.loads(raw.decode()), source=where)
        except (tomllib.TOMLDecodeError, PlatformError) as exc:
            raise ClusterError(f"{where}: {exc}") from None

    def _match_platform(self, progress: Progress) -> None:
        """The deployed platform wins over the built-in default; any other mismatch is an error."""
        deployed = self.head_platform()
        if comparable(deployed) == comparable(self.platform):
            return
        if self.platform.source == "<built-in default>":
            progress(f"using the deployed platform '{deployed.name}' ({deployed.node_count} nodes)")
            self.platform = deployed
            return
        raise ClusterError(
            f"the cluster runs platform '{deployed.name}' ({deployed.node_count} nodes) but --platform gave "
            f"'{self.platform.name}' ({self.platform.node_count} nodes): pass the deployed platform or "
            "re-run the playbook with harness_platform set to it"
        )

    def virtual_clock(self) -> VirtualClock | None:
        return None  # hosts deployed by Ansible run on their own clocks (docs/virtual-time.md)

    def prepare(self, sched: SchedulerConfig, progress: Progress = _quiet) -> None:
        if sched.clock != "wall":
            raise ClusterError(
                "the virtual clock (--speedup, --clock events) runs on the local Docker cluster only: "
                "hosts deployed by Ansible have a clock each and no shared page (docs/virtual-time.md)"
            )
        progress(f"using the deployed cluster on {self.runner.describe()}")
        desc = self.describe_cluster()
        self._match_platform(progress)
        try:
            layout = Layout.from_dict(desc)
        except LayoutError as exc:
            raise ClusterError(f"{HARNESS_ETC}/{CLUSTER_JSON}: {exc}") from None
        if sorted(layout.node_addresses()) != sorted(self.platform.all_nodes()):
            raise ClusterError(f"{HARNESS_ETC}/{CLUSTER_JSON} does not list the platform's nodes")
        self.name = str(desc.get("cluster_name", self.name))
        self.shared_dir = str(desc.get("shared_dir", SHARED_DIR))
        self._files = controller_files(render_for_layout(self.platform, sched, layout, self.name))
        for file_name, text in self._files.items():
            self.install(f"{SLURM_ETC}/{file_name}", text.encode())
        progress(f"restarting slurmctld with scheduler {sched.mode} ({sched.scheduler_parameters})")
        res = self.exec([SERVICE_COMMAND, "restart", "slurmctld"], timeout=120)
        if not res.ok:
            raise ClusterError(f"restarting slurmctld failed: {(res.stderr or res.stdout).strip()}")
        self._wait_controller(CTLD_TIMEOUT_S)
        self._wait_idle(IDLE_TIMEOUT_S, progress)

    def _wait_controller(self, timeout: float) -> None:
        if poll_until(self.is_up, timeout, interval=0.2):
            return
        raise ClusterError(f"slurmctld did not answer within {timeout:.0f} s:\n{self._ctld_log_tail()}")

    def _wait_idle(self, timeout: float, progress: Progress) -> None:
        nodes = self.platform.all_nodes()
        waited, missing = wait_for_idle(self, nodes, timeout, IdleProgress(len(nodes), progress).update)
        if missing:
            names = sorted(missing)
            shown = ", ".join(f"{n}: {missing[n]}" for n in names[:10])
            raise ClusterError(
                f"{len(missing)} of {len(nodes)} nodes not idle after {timeout:.0f} s ({shown}"
                f"{' ...' if len(names) > 10 else ''}):\n{self._ctld_log_tail()}"
            )
        progress(f"{len(nodes)} nodes idle after {waited:.1f} s")

    def _ctld_log_tail(self) -> str:
        key = "SlurmctldLogFile"
        path = conf_value(self._files.get("slurm.conf", ""), key) or DEFAULT_LOGS[key]
        res = self.exec(["tail", "-n", "15", path], timeout=30)
        return res.stdout or res.stderr


def local_cluster(platform: Platform | None = None) -> HostCluster:
    """Slurm deployed on this machine (the playbook run with ``ansible_connection=local``)."""
    return HostCluster(LocalRunner(), platform, login=pwd.getpwuid(os.geteuid()).pw_name)


def ssh_cluster(url: str, platform: Platform | None = None) -> HostCluster:
    """The head node at ``ssh://[user@]head[:port]``; ``$HARNESS_SSH_KEY`` names an identity file,
    ``$HARNESS_SSH_KNOWN_HOSTS`` a known-hosts file."""
    from harness.cluster.hosts.ssh import SshRunner  # Fabric and Paramiko load only for ssh://

    target = parse_ssh_url(url)
    return HostCluster(SshRunner.from_env(target), platform, login=target.user)
