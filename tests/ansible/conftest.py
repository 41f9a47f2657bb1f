"""Ansible deployment onto local stand-in VMs (no mocks).

Three Debian trixie containers with sshd stand in for a head VM and two worker VMs. They use
host networking and listen on 127.0.0.1 only: each "VM" is 127.0.0.1 with its own SSH port
(2201 head, 2202/2203 workers) and its own Slurm ports (tests/ansible/platform.toml:
slurmctld 8817, slurmd 28001-28108). The playbook runs against them from a snapshot of the
checkout taken at session start, so edits made meanwhile cannot make the second run differ.
/shared is one host directory bind-mounted into all three (what NFS does between VMs).

Apt's and pip's downloads are kept in ~/.cache/harness/ansible-test between sessions.
HARNESS_ANSIBLE_KEEP=1 leaves the stand-ins running after the session (for debugging).
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harness.cluster.base import port_in_use
from harness.cluster.hosts.backend import HostCluster
from harness.cluster.hosts.runners import SshTarget
from harness.cluster.hosts.ssh import SshRunner
from harness.model.paths import repo_path
from harness.platform import Platform, load_platform
from tests.standin import standin_image

HERE = Path(__file__).parent
PLATFORM_FILE = HERE / "platform.toml"
LABEL = "harness.ansible-test"
# Inventory names (a host may not share the name of its group 'head'), also the containers'.
HEAD = "head-vm"
WORKERS = ("worker1", "worker2")
SSH_PORTS = {HEAD: 2201, WORKERS[0]: 2202, WORKERS[1]: 2203}
LOGIN = "debian"
CLUSTER_NAME = "bbans"
PLAYBOOK_TIMEOUT_S = 900
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "harness" / "ansible-test"
SNAPSHOT = ("ansible", "harness", "slurm-templates", "sigsleep/sigsleep.c", "sigsleep/vclock.h",
            "sigsleep/Makefile", "pyproject.toml", "README.md")  # fmt: skip
TOOLS = ("ansible-playbook", "ansible-lint", "docker", "ssh", "ssh-keygen")
RECAP_RE = re.compile(
    r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.MULTILINE
)
TIMINGS: dict[str, float] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.ansible)


def pytest_terminal_summary(terminalreporter) -> None:
    if TIMINGS:
        shown = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in TIMINGS.items())
        terminalreporter.write_line(f"ansible stand-in timings: {shown}")


@dataclass
class PlaybookRun:
    rc: int
    output: str
    seconds: float
    recap: dict[str, dict[str, int]] = field(default_factory=dict)

    @classmethod
    def parse(cls, rc: int, output: str, seconds: float) -> PlaybookRun:
        recap = {
            m.group(1): {
                "ok": int(m.group(2)),
                "changed": int(m.group(3)),
                "unreachable": int(m.group(4)),
                "failed": int(m.group(5)),
            }
            for m in RECAP_RE.finditer(output.split("PLAY RECAP", 1)[-1])
        }
        return cls(rc, output, seconds, recap)

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.output.splitlines()[-lines:])

    def changed_tasks(self) -> list[str]:
        """The tasks reported as changed (default callback: 'changed: [host]' after 'TASK [...]')."""
        found, task = [], ""
        for line in self.output.splitlines():
            if line.startswith(("TASK [", "RUNNING HANDLER [")):
                task = line
            elif line.startswith("changed: ["):
                found.append(f"{task} {line}")
        return found


def _run(cmd: list[str], timeout: float = 600, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False, **kw)


class StandIns:
    """The stand-in VMs, the test's SSH key and inventory, and a snapshot of the checkout."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.platform: Platform = load_platform(PLATFORM_FILE)
        self.key = root / "id_ed25519"
        self.known_hosts = root / "known_hosts"
        self.shared = root / "shared"
        self.src = root / "src"
        self.inventory = root / "inventory.yml"
        self.image = ""

    # -- set-up -----------------------------------------------------------------------------
    def check_host(self) -> None:
        missing = [t for t in TOOLS if shutil.which(t) is None]
        if missing:
            pytest.fail(
                f"missing {', '.join(missing)}: run `python3 -m pip install -e '.[dev,ansible]'` "
                "(and `bash containers/setup-host.sh` for Docker)"
            )
        if _run(["docker", "image", "inspect", "debian:trixie-slim"]).returncode != 0:
            pytest.fail("base image debian:trixie-slim missing: run `bash containers/make-base-image.sh`")
        self.remove_containers()
        deployment = self.platform.deployment
        ports = [*SSH_PORTS.values(), deployment.controller_port, *self.platform.ports().values()]
        if deployment.accounting.enabled:
            ports.append(deployment.accounting.port)
        busy = [p for p in ports if port_in_use(p)]
        if busy:
            pytest.fail(f"127.0.0.1 ports the stand-ins need are in use: {busy[:10]}")

    def build_image(self) -> None:
        self.image = standin_image()

    def make_key(self) -> None:
        res = _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "harness-ansible-test", "-f",
                    str(self.key)])  # fmt: skip
        assert res.returncode == 0, res.stderr
        self.known_hosts.touch()

    def snapshot(self) -> None:
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".rendered")
        for rel in SNAPSHOT:
            source, target = repo_path(rel), self.src / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, target, ignore=ignore)
            else:
                shutil.copy2(source, target)

    def start(self) -> None:
        self.shared.mkdir()
        for name, port in SSH_PORTS.items():
            volumes = [f"{self.key}.pub:/home/{LOGIN}/.ssh/authorized_keys:ro", f"{self.shared}:/shared"]
            volumes += self._cache_volumes(name)
            cmd = ["docker", "run", "-d", "--name", f"harness-ansible-{name}", "--label", LABEL,
                   "--network", "host", "--init"]  # fmt: skip
            for volume in volumes:
                cmd += ["-v", volume]
            res = _run([*cmd, self.image, "-p", str(port)])
            assert res.returncode == 0, f"starting stand-in {name} failed: {res.stderr}"
        self._wait_ssh()

    @staticmethod
    def _cache_volumes(name: str) -> list[str]:
        # Per stand-in: concurrent apt runs would fight over one archive directory's lock.
        apt = CACHE / name / "apt"
        (apt / "partial").mkdir(parents=True, exist_ok=True)
        volumes = [f"{apt}:/var/cache/apt/archives"]
        if name == HEAD:
            (CACHE / "pip").mkdir(parents=True, exist_ok=True)
            volumes.append(f"{CACHE / 'pip'}:/root/.cache/pip")
        return volumes

    def _wait_ssh(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        pending = dict(SSH_PORTS)
        while pending and time.monotonic() < deadline:
            for name, port in list(pending.items()):
                if port_in_use(port):
                    pending.pop(name)
            time.sleep(0.2)
        assert not pending, f"sshd of {sorted(pending)} did not listen within {timeout:.0f} s"

    def write_inventory(self) -> None:
        host = {"ansible_host": "127.0.0.1"}
        inventory = {
            "all": {
                "vars": {
                    "ansible_user": LOGIN,
                    "ansible_ssh_private_key_file": str(self.key),
                    "ansible_ssh_common_args": f"-o UserKnownHostsFile={self.known_hosts} "
                    "-o StrictHostKeyChecking=accept-new",
                    # All stand-ins share the host's network: everything is on loopback.
                    "harness_address": "127.0.0.1",
                    "harness_platform": str(PLATFORM_FILE),
                    "harness_cluster_name": CLUSTER_NAME,
                    "harness_shared_fs": "external",
                    "harness_extra_ca_files": sorted(glob.glob("/usr/local/share/ca-certificates/*.crt")),
                },
                "children": {
                    "head": {"hosts": {HEAD: {**host, "ansible_port": SSH_PORTS[HEAD]}}},
                    "workers": {"hosts": {w: {**host, "ansible_port": SSH_PORTS[w]} for w in WORKERS}},
                },
            }
        }
        self.inventory.write_text(json.dumps(inventory, indent=2) + "\n")  # JSON is YAML

    # -- use --------------------------------------------------------------------------------
    def run_playbook(self, label: str) -> PlaybookRun:
        env = os.environ | {
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0",
            "ANSIBLE_SSH_CONTROL_PATH_DIR": str(self.root / "cp"),
            "ANSIBLE_LOCAL_TEMP": str(self.root / "ansible-tmp"),
            "HARNESS_TEMPLATES": str(self.src / "slurm-templates"),
            "PWD": str(self.src),
        }
        start = time.monotonic()
        res = _run(
            ["ansible-playbook", "-i", str(self.inventory), str(self.src / "ansible" / "site.yml")],
            timeout=PLAYBOOK_TIMEOUT_S, cwd=self.src, env=env,
        )  # fmt: skip
        seconds = time.monotonic() - start
        output = res.stdout + res.stderr
        (self.root / f"playbook-{label}.log").write_text(output)
        TIMINGS[f"playbook {label}"] = seconds
        return PlaybookRun.parse(res.returncode, output, seconds)

    def cluster(self) -> HostCluster:
        """The deployment as `harness run --cluster ssh://debian@127.0.0.1:2201` sees it."""
        runner = SshRunner(
            SshTarget("127.0.0.1", LOGIN, SSH_PORTS[HEAD]),
            identity=str(self.key),
            known_hosts=str(self.known_hosts),
        )
        return HostCluster(runner, self.platform, login=LOGIN)

    def ssh_env(self) -> dict[str, str]:
        return os.environ | {
            "HARNESS_SSH_KEY": str(self.key),
            "HARNESS_SSH_KNOWN_HOSTS": str(self.known_hosts),
        }

    def docker_exec(self, name: str, cmd: list[str]) -> subprocess.CompletedProcess[str]:
        return _run(["docker", "exec", f"harness-ansible-{name}", *cmd], timeout=120)

    def remove_containers(self) -> None:
        ids = _run(["docker", "ps", "-aq", "--filter", f"label={LABEL}"]).stdout.split()
        if ids:
            _run(["docker", "rm", "-f", *ids])


@pytest.fixture(scope="session")
def standins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandIns]:
    stand = StandIns(tmp_path_factory.mktemp("ansible"))
    stand.check_host()
    start = time.monotonic()
    stand.build_image()
    stand.make_key()
    stand.snapshot()
    stand.write_inventory()
    try:
        stand.start()
        TIMINGS["stand-ins up"] = time.monotonic() - start
        yield stand
    finally:
        if os.environ.get("HARNESS_ANSIBLE_KEEP"):
            print(f"\nstand-ins kept; inventory {stand.inventory}", file=sys.stderr)
        else:
            stand.remove_containers()


@pytest.fixture(scope="session")
def first_run(standins: StandIns) -> PlaybookRun:
    """The first playbook run onto fresh stand-ins (fails every test that needs the cluster)."""
    run = standins.run_playbook("run 1")
    assert run.rc == 0, f"the playbook failed (exit {run.rc}):\n{run.tail()}"
    return run


@pytest.fixture(scope="session")
def deployed(first_run: PlaybookRun, standins: StandIns) -> HostCluster:
    return standins.cluster()
