"""The head node over SSH with Fabric (Paramiko underneath): one persistent connection per
host, opened on first use; each command is a channel of it (bytes in, bytes out, exit status),
a spawned process is a channel with a pseudo-terminal (streamed output; closing it hangs the
remote terminal up, so the remote process group gets SIGHUP), and files move over SFTP.

Keys and host keys come from where ``ssh`` takes them: ``~/.ssh/config`` (through Fabric),
the SSH agent and ``~/.ssh/id_*``, ``~/.ssh/known_hosts``; ``$HARNESS_SSH_KEY`` names the only
identity to offer, ``$HARNESS_SSH_KNOWN_HOSTS`` the known-hosts file. A host seen for the first
time is accepted and recorded there (OpenSSH's ``StrictHostKeyChecking=accept-new``); a
changed key is refused.
"""

from __future__ import annotations

import errno
import math
import os
import select
import shlex
import socket
import subprocess
import threading
import time
from pathlib import Path, PurePosixPath
from typing import IO, Any

import paramiko
from fabric import Config, Connection

from harness.cluster.base import ClusterError
from harness.cluster.hosts.runners import ENV_KEY, ENV_KNOWN_HOSTS, DirectRefused, SshTarget
from harness.model.polling import poll_until

CONNECT_TIMEOUT_S = 15.0
KEEPALIVE_S = 15
CHUNK = 1 << 16
WAKE_S = 0.05  # the longest a command's output may wait unread (see collect)
DEFAULT_KNOWN_HOSTS = Path("~/.ssh/known_hosts")


class AcceptNew(paramiko.MissingHostKeyPolicy):
    """Accept an unknown host key and append it to the known-hosts file."""

    def __init__(self, known_hosts: Path) -> None:
        self.known_hosts = known_hosts

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        client.get_host_keys().add(hostname, key.get_name(), key)
        self.known_hosts.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with open(self.known_hosts, "a") as out:
            out.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")


class SshRunner:
    """Commands, spawned processes and files on ``target`` over one Fabric connection."""

    def __init__(
        self, target: SshTarget, identity: str | None = None, known_hosts: str | None = None
    ) -> None:
        self.target = target
        self.identity = identity
        self.known_hosts = known_hosts
        self._conn: Connection | None = None
        self._sftp: paramiko.SFTPClient | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_env(cls, target: SshTarget) -> SshRunner:
        return cls(target, os.environ.get(ENV_KEY) or None, os.environ.get(ENV_KNOWN_HOSTS) or None)

    def describe(self) -> str:
        return str(self.target)

    # -- the connection ---------------------------------------------------------------------
    def connect_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"allow_agent": self.identity is None, "banner_timeout": CONNECT_TIMEOUT_S}
        if self.identity:
            kwargs |= {"key_filename": [os.path.expanduser(self.identity)], "look_for_keys": False}
        return kwargs

    def known_hosts_file(self) -> Path:
        return Path(os.path.expanduser(self.known_hosts or DEFAULT_KNOWN_HOSTS))

    def _open(self) -> Connection:
        conn = Connection(
            self.target.host,
            user=self.target.user,
            port=self.target.port,
            connect_timeout=CONNECT_TIMEOUT_S,
            connect_kwargs=self.connect_kwargs(),
            config=Config(overrides={"load_ssh_configs": True}),
        )
        client = conn.client
        known = self.known_hosts_file()
        if self.known_hosts is None:
            client.load_system_host_keys()
        if known.exists():
            client.load_host_keys(str(known))
        client.set_missing_host_key_policy(AcceptNew(known))
        try:
            conn.open()
        except (paramiko.SSHException, OSError, EOFError) as exc:
            conn.close()
            raise ClusterError(f"ssh to {self.describe()} failed: {exc or type(exc).__name__}") from None
        transport = conn.client.get_transport()
        if transport is not None:
            transport.set_keepalive(KEEPALIVE_S)
            # Small request/answer packets: without this, Nagle + delayed ACKs add ~40 ms a command.
            transport.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def transport(self) -> paramiko.Transport:
        """The connection's transport, (re)opened when there is none or it dropped."""
        with self._lock:
            transport = self._conn.client.get_transport() if self._conn else None
            if transport is None or not transport.is_active():
                self.close_quietly()
                self._conn = self._open()
                transport = self._conn.client.get_transport()
            assert transport is not None
            return transport

    def channel(self) -> paramiko.Channel:
        try:
            return self.transport().open_session(timeout=CONNECT_TIMEOUT_S)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise ClusterError(f"ssh to {self.describe()} failed: {exc or type(exc).__name__}") from None

    def sftp(self) -> paramiko.SFTPClient:
        transport = self.transport()
        with self._lock:
            if self._sftp is None or self._sftp.get_channel() is None or self._sftp.sock.closed:
                self._sftp = paramiko.SFTPClient.from_transport(transport)
            assert self._sftp is not None
            return self._sftp

    def close_quietly(self) -> None:
        if self._sftp is not None:
            self._sftp.close()
            self._sftp = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def close(self) -> None:
        with self._lock:
            self.close_quietly()

    # -- commands ---------------------------------------------------------------------------
    def run(
        self, argv: list[str], data: bytes | None = None, timeout: float | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        """``argv`` on the head (``timeout``: give up locally after that many seconds, rc 124)."""
        chan = self.channel()
        try:
            chan.exec_command(shlex.join(argv))
            # stdin is fed beside the reading: a command that answers as it reads (tee) would
            # otherwise fill the channel's window while we still send, and both would wait
            feeder = threading.Thread(target=_feed, args=(chan, data), daemon=True)
            feeder.start()
            return collect(chan, argv, None if timeout is None else time.monotonic() + timeout)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise ClusterError(f"ssh to {self.describe()} failed: {exc or type(exc).__name__}") from None
        finally:
            chan.close()

    def spawn(self, argv: list[str]) -> RemoteProcess:
        chan = self.channel()
        chan.get_pty(width=200)
        chan.exec_command(shlex.join(argv))
        return RemoteProcess(argv, chan)

    # -- files ------------------------------------------------------------------------------
    def get_file(self, path: str, offset: int = 0) -> bytes | None:
        """``path`` from ``offset`` on, None if absent; DirectRefused if the login may not read it."""
        try:
            with self.sftp().open(path, "rb") as remote:
                remote.seek(offset)
                remote.prefetch()
                return remote.read()
        except OSError as exc:
            _sftp_error(exc, path)
            return None

    def put_file(self, root: str, rel: str, data: bytes) -> None:
        """``data`` into ``root/rel``; missing parents below ``root`` made world-writable (sticky)."""
        sftp = self.sftp()
        try:
            for parent in reversed(PurePosixPath(rel).parents):
                if str(parent) != ".":
                    _mkdir_sticky(sftp, f"{root}/{parent}")
            with sftp.open(f"{root}/{rel}", "wb") as remote:
                remote.set_pipelined(True)
                remote.write(data)
        except OSError as exc:  # a missing root too: the command as root then says why
            raise DirectRefused(f"{root}/{rel}: {exc}") from None


def _feed(chan: paramiko.Channel, data: bytes | None) -> None:
    """``data`` to the command's stdin, then end of file (a closed channel ends it early)."""
    try:
        if data:
            chan.sendall(data)
        chan.shutdown_write()
    except (paramiko.SSHException, OSError, EOFError):
        pass  # the command ended or the channel closed: collect reports what happened


def _mkdir_sticky(sftp: paramiko.SFTPClient, path: str) -> None:
    try:
        sftp.stat(path)
    except FileNotFoundError:
        sftp.mkdir(path)
        sftp.chmod(path, 0o1777)


def _sftp_error(exc: OSError, path: str) -> None:
    if isinstance(exc, FileNotFoundError) or exc.errno == errno.ENOENT:
        return None
    raise DirectRefused(f"{path}: {exc}") from None


def collect(
    chan: paramiko.Channel, argv: list[str], deadline: float | None
) -> subprocess.CompletedProcess[bytes]:
    """Read a command's stdout and stderr as they come (either may fill up first) until EOF."""
    out, err = bytearray(), bytearray()
    while True:
        while chan.recv_ready():
            out += chan.recv(CHUNK)
        while chan.recv_stderr_ready():
            err += chan.recv_stderr(CHUNK)
        if chan.eof_received and not chan.recv_ready() and not chan.recv_stderr_ready():
            break
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return subprocess.CompletedProcess(argv, 124, bytes(out), b"timed out")
        # Paramiko's one wake-up pipe for stdout and stderr can lose a wake-up (OrPipe's set and
        # clear race between its thread and ours): never sleep long on it, or data could sit
        # unread, the window close and the command wait for us as we wait for it.
        select.select([chan], [], [], WAKE_S if left is None else min(left, WAKE_S))
    return subprocess.CompletedProcess(argv, chan.recv_exit_status(), bytes(out), bytes(err))


class RemoteProcess:
    """A spawned command, shaped like the ``subprocess.Popen`` it replaces: its output (stdout and
    stderr through the pseudo-terminal) streams into a local pipe, ``stdout``, as text."""

    def __init__(self, args: list[str], chan: paramiko.Channel) -> None:
        self.args: Any = args
        self.chan = chan
        self.returncode: int | None = None
        read_fd, self._write_fd = os.pipe()
        self.stdout: IO[str] | None = os.fdopen(read_fd, "r", errors="replace")
        self._pump = threading.Thread(target=self._forward, daemon=True)
        self._pump.start()

    def _forward(self) -> None:
        try:
            while data := self.chan.recv(CHUNK):
                os.write(self._write_fd, data)
        except OSError:
            pass  # the reader closed its end, or the channel went away
        finally:
            os.close(self._write_fd)

    def poll(self) -> int | None:
        if self.returncode is None and self.chan.exit_status_ready():
            self.returncode = self.chan.recv_exit_status()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if poll_until(lambda: self.poll() is not None, math.inf if timeout is None else timeout, 0.05):
            assert self.returncode is not None
            return self.returncode
        raise subprocess.TimeoutExpired(self.args, timeout or 0.0)

    def kill(self) -> None:
        """Close the channel: the remote terminal hangs up and its process group gets SIGHUP."""
        if self.poll() is None:
            self.returncode = -9
        self.chan.close()
