"""The ``ssh://`` backend (Fabric/Paramiko) against a real sshd: one stand-in VM container
(``tests/standin.py``, no Slurm) on 127.0.0.1:22951, logged in as 'debian' with sudo, as on a
cloud image. Commands, stdin, timeouts, SFTP moves with the root fallback, a spawned process's
streamed output and hang-up, host keys. A few seconds in all."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cluster.base import ClusterError
from harness.cluster.hosts.backend import HostCluster
from harness.cluster.hosts.runners import SshTarget
from harness.cluster.hosts.ssh import SshRunner
from harness.platform import load_platform
from tests.standin import LOGIN, remove_standin, start_standin

NAME = "harness-ssh-backend-standin"
PORT = 22951
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def standin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("sshd")
    key = root / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    try:
        start_standin(NAME, PORT, key.with_suffix(".pub"), "harness.ssh-backend-test")
        yield root
    finally:
        remove_standin(NAME)


@pytest.fixture(scope="module")
def head(standin: Path) -> Iterator[HostCluster]:
    runner = SshRunner(
        SshTarget("127.0.0.1", LOGIN, PORT), str(standin / "id_ed25519"), str(standin / "known_hosts")
    )
    cluster = HostCluster(runner, load_platform(), login=LOGIN)
    cluster.shared_dir = "/tmp/shared"
    assert cluster.exec(["install", "-d", "-m", "1777", cluster.shared_dir]).ok  # as the playbook does
    yield cluster
    runner.close()


def test_commands_quoting_stdin_rc_and_users(head: HostCluster) -> None:
    res = head.exec(["sh", "-c", 'echo "$1"; echo err >&2; exit 3', "sh", "a b; rm -rf /"])
    assert (res.rc, res.stdout, res.stderr) == (3, "a b; rm -rf /\n", "err\n")  # nothing injected
    assert head.exec(["id", "-un"]).stdout == "root\n"  # as root through sudo -n
    assert head.exec(["id", "-un"], user=LOGIN).stdout == f"{LOGIN}\n"
    big = bytes(range(256)) * 8192  # 2 MiB each way, stdout and stderr at once: no deadlock
    echo = head._call(["sh", "-c", "tee /dev/stderr"], user=LOGIN, timeout=60, data=big)
    assert echo.returncode == 0 and echo.stdout == big and echo.stderr == big
    start = time.monotonic()
    assert head.exec(["sleep", "20"], timeout=0.5).rc == 124
    assert time.monotonic() - start < 5


def test_one_persistent_connection(head: HostCluster) -> None:
    runner = head.runner
    assert isinstance(runner, SshRunner)
    transport = runner.transport()
    for _ in range(5):
        head.exec(["true"], user=LOGIN)
    assert runner.transport() is transport
    established = subprocess.run(
        ["ss", "-Htn", "state", "established", f"( dport = :{PORT} )"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert len(established.splitlines()) == 1, established


def test_files_over_sftp_and_as_root(head: HostCluster, tmp_path: Path) -> None:
    src = tmp_path / "plan.parquet"
    src.write_bytes(bytes(range(256)) * 1000)
    head.put(src, "runs/r1/plan.parquet")
    modes = head.exec(["stat", "-c", "%a %U", "/tmp/shared/runs", "/tmp/shared/runs/r1"]).stdout
    assert modes.split("\n")[:2] == ["1777 debian", "1777 debian"]
    back = tmp_path / "back"
    assert head.get("runs/r1/plan.parquet", back) and back.read_bytes() == src.read_bytes()
    assert head.read_from("runs/r1/plan.parquet", 255_990) == bytes(range(246, 256))
    assert head.read_text("runs/r1/missing") is None
    # Only root may read /etc/shadow: SFTP (as debian) is refused, the command as root reads it.
    assert (head.read_bytes("/etc/shadow") or b"").startswith(b"root:")
    head.install("/etc/harness-test.conf", b"A=1\n")
    assert head.exec(["stat", "-c", "%a %U", "/etc/harness-test.conf"]).stdout == "644 root\n"


def test_spawn_streams_output_and_kill_hangs_up(head: HostCluster) -> None:
    proc = head.spawn(["sh", "-c", "echo one; sleep 0.3; echo two >&2; exit 4"], user=LOGIN)
    assert proc.wait(timeout=10) == 4
    assert proc.stdout is not None and proc.stdout.read().split() == ["one", "two"]
    proc.stdout.close()
    proc = head.spawn(["sleep", "300"], user=LOGIN)
    time.sleep(0.5)
    assert proc.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=0.2)
    proc.kill()
    assert proc.wait(timeout=5) == -9
    deadline = time.monotonic() + 5
    while head.exec(["pgrep", "-x", "sleep"]).rc == 0:  # SIGHUP from the closed terminal
        assert time.monotonic() < deadline, "the spawned process outlived kill()"
        time.sleep(0.1)


def test_host_keys_accept_new_then_refuse_a_changed_one(standin: Path, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    runner = SshRunner(SshTarget("127.0.0.1", LOGIN, PORT), str(standin / "id_ed25519"), str(known))
    assert runner.run(["true"]).returncode == 0
    runner.close()
    line = known.read_text().split()
    assert line[0] == f"[127.0.0.1]:{PORT}" and line[1] == "ssh-ed25519"
    other = standin / "other_host_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    known.write_text(f"{line[0]} {other.with_suffix('.pub').read_text().split()[0]} "
                     f"{other.with_suffix('.pub').read_text().split()[1]}\n")  # fmt: skip
    with pytest.raises(ClusterError, match=f"ssh to ssh://{LOGIN}@127.0.0.1:{PORT} failed"):
        runner.run(["true"])
