"""The host backends (``--cluster local`` and ``ssh://...``): URLs, command construction, file
moves through the same commands on this machine, and ``prepare`` against a fake head node."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from harness.cluster.ansible_render import variables as av
from harness.cluster.base import ClusterError
from harness.cluster.hosts import backend as host
from harness.cluster.hosts import runners
from harness.cluster.hosts.backend import HostCluster
from harness.cluster.hosts.runners import LocalRunner, SshTarget, as_user, parse_ssh_url
from harness.cluster.hosts.ssh import WAKE_S, AcceptNew, SshRunner, collect
from harness.platform import load_platform
from harness.slurm.config import SchedulerConfig
from tests.platforms import platform_toml

SMALL = platform_toml(name="small-8+1", controller_port=8817, slurmd_base_port=28001)


# -- URLs and users --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("url", "target"),
    [
        ("ssh://debian@head.example.org", SshTarget("head.example.org", "debian", 22)),
        ("ssh://debian@127.0.0.1:2201", SshTarget("127.0.0.1", "debian", 2201)),
        ("ssh://head.example.org/", SshTarget("head.example.org", None, 22)),
        ("ssh://root@[::1]:2222", SshTarget("::1", "root", 2222)),
    ],
)
def test_parse_ssh_url(url: str, target: SshTarget) -> None:
    assert parse_ssh_url(url) == target


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://head", "expected ssh://"),
        ("ssh://user@", "no host"),
        ("ssh://head:99999", "port"),
        ("ssh://head:abc", "port"),
        ("ssh://head/some/path", "only ssh://"),
        ("ssh://u:secret@head", "only ssh://"),
    ],
)
def test_bad_ssh_urls(url: str, message: str) -> None:
    with pytest.raises(ClusterError, match=message):
        parse_ssh_url(url)


def test_target_prints_back_as_its_url() -> None:
    assert str(SshTarget("h", "u", 2201)) == "ssh://u@h:2201"
    assert str(SshTarget("h")) == "ssh://h"


@pytest.mark.parametrize(
    ("user", "login", "expected"),
    [
        (None, "root", ["sinfo"]),
        ("root", "root", ["sinfo"]),
        ("emu", "root", ["runuser", "-u", "emu", "--", "sinfo"]),
        (None, "debian", ["sudo", "-n", "--", "sinfo"]),
        ("emu", "debian", ["sudo", "-n", "-u", "emu", "--", "sinfo"]),
        ("emu", "emu", ["sinfo"]),
    ],
)
def test_as_user(user: str | None, login: str, expected: list[str]) -> None:
    assert as_user(["sinfo"], user, login) == expected


# -- the ssh runner (Fabric); against a real sshd in tests/integration/test_ssh_backend.py ----
def test_ssh_identity_and_known_hosts_from_the_environment(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HARNESS_SSH_KEY", "/keys/id_test")
    monkeypatch.setenv("HARNESS_SSH_KNOWN_HOSTS", "/keys/known")
    runner = SshRunner.from_env(SshTarget("h", "u"))
    kwargs = runner.connect_kwargs()
    # only that key (IdentitiesOnly): neither the agent nor ~/.ssh/id_*
    assert kwargs["key_filename"] == ["/keys/id_test"]
    assert kwargs["look_for_keys"] is False and kwargs["allow_agent"] is False
    assert runner.known_hosts_file() == Path("/keys/known")
    monkeypatch.delenv("HARNESS_SSH_KEY")
    monkeypatch.delenv("HARNESS_SSH_KNOWN_HOSTS")
    default = SshRunner.from_env(SshTarget("h"))
    assert "key_filename" not in default.connect_kwargs() and default.connect_kwargs()["allow_agent"]
    assert default.known_hosts_file() == Path.home() / ".ssh" / "known_hosts"


def test_a_new_host_key_is_recorded_in_the_known_hosts_file(tmp_path: Path) -> None:
    import paramiko

    known = tmp_path / "ssh" / "known_hosts"
    key = paramiko.Ed25519Key.from_private_key_file(_host_key(tmp_path))
    client = paramiko.SSHClient()
    AcceptNew(known).missing_host_key(client, "[127.0.0.1]:2201", key)
    assert known.read_text() == f"[127.0.0.1]:2201 ssh-ed25519 {key.get_base64()}\n"
    assert client.get_host_keys().lookup("[127.0.0.1]:2201") is not None
    loaded = paramiko.HostKeys(str(known))  # what the next connection checks against
    assert loaded.check("[127.0.0.1]:2201", key)


def _host_key(tmp_path: Path) -> str:
    path = tmp_path / "host_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return str(path)


def test_unreachable_head_is_a_cluster_error(tmp_path: Path) -> None:
    port = _closed_port()
    runner = SshRunner(SshTarget("127.0.0.1", "nobody", port), known_hosts=str(tmp_path / "known_hosts"))
    cluster = HostCluster(runner, load_platform(), login="nobody")
    with pytest.raises(ClusterError, match=f"ssh to ssh://nobody@127.0.0.1:{port} failed"):
        cluster.exec(["true"])
    assert cluster.is_up() is False


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again when the socket is


def test_pure_command_helpers() -> None:
    assert runners.with_timeout(["sinfo"], 30) == ["timeout", "30", "sinfo"]
    assert runners.with_timeout(["sinfo"], None) == ["sinfo"]
    assert runners.put_script("/shared", "runs/r1/plan.parquet")[-2:] == ["runs", "runs/r1"]
    conf = "# x\nSlurmctldLogFile=/var/log/slurm/ctld.log\njobcomploc=/j.log # comment\n"
    assert host.conf_value(conf, "SlurmctldLogFile") == "/var/log/slurm/ctld.log"
    assert host.conf_value(conf, "JobCompLoc") == "/j.log"
    assert host.conf_value(conf, "Missing") is None


# -- file moves on this machine (the same commands the ssh backend sends) --------------------
@pytest.fixture
def local(tmp_path: Path) -> HostCluster:
    # Logged in as whoever runs the tests: commands for "root" are wrapped only if that differs.
    cluster = host.local_cluster(load_platform())
    cluster._login = "root" if os.geteuid() == 0 else cluster.login
    cluster.shared_dir = str(tmp_path / "shared")
    (tmp_path / "shared").mkdir()
    return cluster


@pytest.mark.skipif(os.geteuid() != 0, reason="commands for root need root (or sudo) on this machine")
def test_put_get_read_text_through_commands(local: HostCluster, tmp_path: Path) -> None:
    src = tmp_path / "plan.parquet"
    src.write_bytes(bytes(range(256)) * 10)
    local.put(src, "runs/r1/plan.parquet")
    shared = Path(local.shared_dir)
    assert (shared / "runs/r1/plan.parquet").read_bytes() == src.read_bytes()
    assert (shared / "runs").stat().st_mode & 0o7777 == 0o1777
    assert (shared / "runs/r1").stat().st_mode & 0o7777 == 0o1777
    out = tmp_path / "back"
    assert local.get("runs/r1/plan.parquet", out) and out.read_bytes() == src.read_bytes()
    assert local.get("runs/r1/none", tmp_path / "none") is False and not (tmp_path / "none").exists()
    (shared / "runs/r1/replay.json").write_text('{"done": true}')
    assert local.read_text("runs/r1/replay.json") == '{"done": true}'
    assert local.read_text("runs/r1/missing.json") is None
    assert local.shared_path("runs/r1") == f"{shared}/runs/r1"
    assert local.read_from("runs/r1/replay.json", 3) == b'one": true}'
    assert local.read_from("runs/r1/replay.json", 14) == b""
    assert local.read_from("runs/r1/missing.json", 0) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="commands for root need root (or sudo) on this machine")
def test_exec_timeout_and_users(local: HostCluster) -> None:
    res = local.exec(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (res.rc, res.stdout, res.stderr) == (3, "out\n", "err\n")
    assert local.exec(["id", "-un"], user="nobody").stdout.strip() == "nobody"
    start = time.monotonic()
    assert local.exec(["sleep", "10"], timeout=0.5).rc == 124
    assert time.monotonic() - start < 5


@pytest.mark.skipif(os.geteuid() != 0, reason="commands for root need root (or sudo) on this machine")
def test_local_spawn_kill_ends_the_whole_process_group(local: HostCluster) -> None:
    proc = local.spawn(["sh", "-c", "sleep 60 & sleep 60 & wait"], user="nobody")
    time.sleep(0.5)
    assert proc.poll() is None
    proc.kill()
    proc.wait(timeout=5)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    pytest.fail("processes of the spawned group survived kill()")


# -- prepare against a fake head node ---------------------------------------------------------
class FakeHead:
    """Answers the commands HostCluster sends, from an in-memory file system."""

    def __init__(self, files: dict[str, bytes], nodes: list[str]) -> None:
        self.files = files
        self.nodes = nodes
        self.commands: list[list[str]] = []

    def __call__(self, argv: list[str], user, timeout=None, data=None, login=None):
        self.commands.append(argv)
        if argv[:2] == ["sh", "-c"] and "exec tail -c" in argv[2]:
            path, first_byte = argv[-2], int(argv[-1])
            if path not in self.files:
                return subprocess.CompletedProcess(argv, runners.MISSING_RC, b"", b"")
            return subprocess.CompletedProcess(argv, 0, self.files[path][first_byte - 1 :], b"")
        if argv[:2] == ["sh", "-c"] and "mv -f" in argv[2]:
            self.files[argv[-1]] = data
            return subprocess.CompletedProcess(argv, 0, b"", b"")
        if argv[0] == "sinfo":
            out = "".join(f"{n} idle\n" for n in self.nodes).encode()
            return subprocess.CompletedProcess(argv, 0, out, b"")
        return subprocess.CompletedProcess(argv, 0, b"", b"")  # scontrol ping, harness-service


def fake_cluster(platform_path: Path | None, deployed_toml: str, tmp: Path):
    """A head node deployed with ``deployed_toml``; the backend given ``platform_path``."""
    deployed_file = tmp / "deployed.toml"
    deployed_file.write_text(deployed_toml)
    deployed = load_platform(deployed_file)
    layout = av.plan_layout(deployed, av.HostSpec("head", "127.0.0.1"), av.even_workers(2))
    files = {
        "/etc/harness/cluster.json": json.dumps(layout.as_dict(deployed, "bbtest")).encode(),
        "/etc/harness/platform.toml": deployed_toml.encode(),
    }
    fake = FakeHead(files, deployed.all_nodes())
    platform = load_platform(platform_path) if platform_path else None
    cluster = HostCluster(LocalRunner(), platform, login="root")
    cluster._call = fake  # type: ignore[method-assign]
    return cluster, fake


def test_prepare_installs_files_restarts_slurmctld_and_waits(tmp_path: Path) -> None:
    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    cluster, fake = fake_cluster(path, SMALL, tmp_path)
    messages: list[str] = []
    sched = SchedulerConfig(reserve_depth=1)
    cluster.prepare(sched, progress=messages.append)
    conf = fake.files["/etc/slurm/slurm.conf"].decode()
    assert "SlurmctldPort=8817" in conf and "bf_job_part_count_reserve=1" in conf
    assert {"/etc/slurm/job_submit.lua", "/etc/slurm/gres.conf", "/etc/slurm/cgroup.conf"} <= set(fake.files)
    assert ["harness-service", "restart", "slurmctld"] in fake.commands
    # The files are in place before slurmctld restarts.
    restart_at = fake.commands.index(["harness-service", "restart", "slurmctld"])
    assert all("mv -f" not in " ".join(c) for c in fake.commands[restart_at:])
    assert cluster.name == "bbtest" and cluster.shared_path("x") == "/shared/x"
    assert any("9 nodes idle" in m for m in messages)


def test_prepare_adopts_the_deployed_platform_over_the_default(tmp_path: Path) -> None:
    cluster, _ = fake_cluster(None, SMALL, tmp_path)
    messages: list[str] = []
    cluster.prepare(SchedulerConfig(), progress=messages.append)
    assert cluster.platform.name == "small-8+1"
    assert any("deployed platform 'small-8+1'" in m for m in messages)


def test_prepare_refuses_another_explicit_platform(tmp_path: Path) -> None:
    other = tmp_path / "other.toml"
    other.write_text(SMALL.replace("8817", "8818"))
    cluster, _ = fake_cluster(other, SMALL, tmp_path)
    with pytest.raises(ClusterError, match="runs platform 'small-8\\+1'"):
        cluster.prepare(SchedulerConfig())


def test_prepare_without_a_deployment_says_what_to_do(tmp_path: Path) -> None:
    cluster = HostCluster(LocalRunner(), load_platform(), login="root")
    cluster._call = FakeHead({}, [])  # type: ignore[method-assign]
    with pytest.raises(ClusterError, match="ansible-playbook"):
        cluster.prepare(SchedulerConfig())


def test_prepare_reports_nodes_that_stay_down(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    cluster, fake = fake_cluster(path, SMALL, tmp_path)
    fake.nodes = fake.nodes[:-1]  # the BB node never registers
    monkeypatch.setattr(host, "IDLE_TIMEOUT_S", 0.3)
    with pytest.raises(ClusterError, match=r"1 of 9 nodes not idle.*sbb1: absent"):
        cluster.prepare(SchedulerConfig())


def test_collect_slurm_files_follows_the_rendered_paths(tmp_path: Path) -> None:
    conf = "SlurmctldLogFile=/var/log/x/ctld.log\nJobCompLoc=/var/log/x/jobcomp.log\n"
    files = {
        "/etc/slurm/slurm.conf": conf.encode(),
        "/etc/slurm/job_submit.lua": b"-- lua",
        "/var/log/x/ctld.log": b"log",
        "/var/log/x/jobcomp.log": b"JobId=1",
    }
    cluster = HostCluster(LocalRunner(), load_platform(), login="root")
    cluster._call = FakeHead(files, [])  # type: ignore[method-assign]
    cluster.collect_slurm_files(tmp_path)
    assert (tmp_path / "etc" / "slurm.conf").read_text() == conf
    assert (tmp_path / "etc" / "job_submit.lua").exists() and not (tmp_path / "etc" / "gres.conf").exists()
    assert (tmp_path / "ctld.log").read_bytes() == b"log"
    assert (tmp_path / "jobcomp.log").read_bytes() == b"JobId=1"


def test_make_backend_builds_host_clusters() -> None:
    from harness.emulation.run.experiment import make_backend
    from harness.emulation.run.specs import ClusterSpec

    ssh = make_backend(ClusterSpec(backend="ssh://debian@127.0.0.1:2201"))
    assert isinstance(ssh, HostCluster) and isinstance(ssh.runner, SshRunner)
    assert ssh.runner.target == SshTarget("127.0.0.1", "debian", 2201) and ssh.login == "debian"
    assert isinstance(make_backend(ClusterSpec(backend="local")).runner, LocalRunner)


class _SilentChannel:
    """A channel whose output arrives without a wake-up on its pipe: paramiko's shared
    stdout/stderr pipe can lose one when its thread sets it while ours clears it."""

    def __init__(self, ready_at: float) -> None:
        self.ready_at = ready_at
        self.read_fd, self.write_fd = os.pipe()  # never written: select never wakes on it
        self.out, self.err = [b"out"], [b"err"]
        self.eof_received = False

    def fileno(self) -> int:
        return self.read_fd

    def recv_ready(self) -> bool:
        return time.monotonic() >= self.ready_at and bool(self.out)

    def recv_stderr_ready(self) -> bool:
        return time.monotonic() >= self.ready_at and bool(self.err)

    def recv(self, _n: int) -> bytes:
        return self.out.pop()

    def recv_stderr(self, _n: int) -> bytes:
        self.eof_received = True
        return self.err.pop()

    def recv_exit_status(self) -> int:
        return 7


def test_ssh_output_without_a_wake_up_is_read_at_once() -> None:
    chan = _SilentChannel(time.monotonic() + 0.2)
    t0 = time.monotonic()
    res = collect(chan, ["cmd"], t0 + 30)  # type: ignore[arg-type]
    took = time.monotonic() - t0
    assert (res.returncode, res.stdout, res.stderr) == (7, b"out", b"err")
    assert 0.2 <= took < 0.2 + WAKE_S + 0.5, took  # not the 30 s deadline
    os.close(chan.read_fd), os.close(chan.write_fd)
