"""Commands for a head node, run here or over SSH: addressing (``ssh://user@host:port``),
what a runner does (``LocalRunner`` here; ``harness.cluster.hosts.ssh.SshRunner`` over Fabric), who
runs a command (``runuser``/``sudo``), and the small shell scripts that move files as root."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Protocol
from urllib.parse import urlsplit

from harness.cluster.base import ClusterError, Spawned

SLACK_S = 30.0  # local grace on top of a remote `timeout`, for a slow SSH connection
MISSING_RC = 3  # our read script's "no such file"
ENV_KEY = "HARNESS_SSH_KEY"
ENV_KNOWN_HOSTS = "HARNESS_SSH_KNOWN_HOSTS"


# -- addressing ---------------------------------------------------------------------------
@dataclass(frozen=True)
class SshTarget:
    host: str
    user: str | None = None
    port: int = 22

    @property
    def destination(self) -> str:
        return f"{self.user}@{self.host}" if self.user else self.host

    def __str__(self) -> str:
        return f"ssh://{self.destination}" + ("" if self.port == 22 else f":{self.port}")


def parse_ssh_url(url: str) -> SshTarget:
    """``ssh://[user@]host[:port]`` (IPv6 hosts in brackets)."""
    parts = urlsplit(url)
    if parts.scheme != "ssh":
        raise ClusterError(f"'{url}': expected ssh://user@head[:port]")
    try:
        port = parts.port or 22
    except ValueError:
        raise ClusterError(f"'{url}': the port must be a number in 1-65535") from None
    if not parts.hostname:
        raise ClusterError(f"'{url}': no host")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.password:
        raise ClusterError(f"'{url}': only ssh://user@head[:port] is understood")
    return SshTarget(host=parts.hostname, user=parts.username or None, port=port)


def as_user(argv: list[str], user: str | None, login: str) -> list[str]:
    """``argv`` run as ``user`` (None: root) by someone logged in as ``login``."""
    target = user or "root"
    if target == login:
        return list(argv)
    if login == "root":
        return ["runuser", "-u", target, "--", *argv]
    if target == "root":
        return ["sudo", "-n", "--", *argv]
    return ["sudo", "-n", "-u", target, "--", *argv]


# -- runners: run a head-node argv ----------------------------------------------------------
class DirectRefused(Exception):
    """A runner cannot move this file itself (as its login): move it through a command as root."""


class Runner(Protocol):
    def run(
        self, argv: list[str], data: bytes | None = None, timeout: float | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        """``argv`` on the head node, ``data`` as its stdin; rc 124 when ``timeout`` s passed."""
        ...

    def spawn(self, argv: list[str]) -> Spawned:
        """Start ``argv`` on the head node (stdout and stderr together, as text)."""
        ...

    def get_file(self, path: str, offset: int = 0) -> bytes | None:
        """The file from ``offset`` on, None if absent; DirectRefused: use a command instead."""
        ...

    def put_file(self, root: str, rel: str, data: bytes) -> None:
        """Write ``root/rel`` (parents made sticky world-writable); DirectRefused as above."""
        ...

    def describe(self) -> str: ...


class LocalRunner:
    """The head node is this machine; files move through commands (as root, like the playbook)."""

    def run(
        self, argv: list[str], data: bytes | None = None, timeout: float | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        try:
            return subprocess.run(argv, input=data, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(argv, 124, b"", b"timed out")
        except FileNotFoundError as exc:
            raise ClusterError(f"cannot run {argv[0]}: {exc}") from None

    def spawn(self, argv: list[str]) -> GroupPopen:
        return GroupPopen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )

    def get_file(self, path: str, offset: int = 0) -> bytes | None:
        raise DirectRefused(path)

    def put_file(self, root: str, rel: str, data: bytes) -> None:
        raise DirectRefused(f"{root}/{rel}")

    def describe(self) -> str:
        return "this host"


class GroupPopen(subprocess.Popen):
    """A local spawn in its own session: ``kill`` ends the whole process group (runuser + child)."""

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        super().kill()


# -- small pure helpers --------------------------------------------------------------------
def with_timeout(argv: list[str], timeout: float | None) -> list[str]:
    return ["timeout", f"{timeout:g}", *argv] if timeout else list(argv)


def put_script(shared: str, rel: str) -> list[str]:
    """A command that writes stdin to ``shared/rel``, its parents made world-writable (sticky)
    like the Docker path's shared directory: jobs and the replay run unprivileged."""
    parents = [str(p) for p in reversed(PurePosixPath(rel).parents) if str(p) != "."]
    script = 'set -e; cd "$1"; f="$2"; shift 2; for d; do mkdir -p "$d"; chmod 1777 "$d"; done; cat > "$f"'
    return ["sh", "-c", script, "sh", shared, rel, *parents]


def read_script(path: str, offset: int = 0) -> list[str]:
    """Print ``path`` from byte ``offset`` on (exit MISSING_RC if absent)."""
    script = f'test -f "$1" || exit {MISSING_RC}; exec tail -c +$2 "$1"'
    return ["sh", "-c", script, "sh", path, str(offset + 1)]


def install_script(path: str) -> list[str]:
    """Replace ``path`` with stdin atomically (slurmctld never reads a half-written file)."""
    return ["sh", "-c", 'cat > "$1.tmp" && chmod 0644 "$1.tmp" && mv -f "$1.tmp" "$1"', "sh", path]
