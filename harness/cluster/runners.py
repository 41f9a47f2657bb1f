"""Commands for a head node, run here or over SSH: addressing (``ssh://user@host:port``),
the runners that turn a head-node argv into a local one (for the right user, with a
timeout), and the small shell scripts that move files through them."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol
from urllib.parse import urlsplit

from harness.cluster.base import ClusterError

SLACK_S = 30.0  # local grace on top of a remote `timeout`, for a slow SSH connection
MISSING_RC = 3  # our read script's "no such file"
SSH_FAILED_RC = 255
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


# -- runners: turn a head-node argv into a local argv ------------------------------------
class Runner(Protocol):
    def command(self, argv: list[str], tty: bool = False) -> list[str]:
        """The local argv that runs ``argv`` on the head node."""
        ...

    def describe(self) -> str: ...


class LocalRunner:
    """The head node is this machine."""

    def command(self, argv: list[str], tty: bool = False) -> list[str]:
        return list(argv)

    def describe(self) -> str:
        return "this host"


class SshRunner:
    """The head node over SSH: batch mode, one multiplexed connection, new host keys accepted."""

    def __init__(
        self,
        target: SshTarget,
        identity: str | None = None,
        known_hosts: str | None = None,
        control_dir: Path | None = None,
    ) -> None:
        self.target = target
        self.identity = identity
        self.known_hosts = known_hosts
        default = Path(tempfile.gettempdir()) / f"harness-ssh-{os.getuid()}"
        # A socket path holds at most 107 bytes: ssh adds "/" + %C (40) + a 17-byte temporary
        # suffix while it sets the master up, so a deep directory silently breaks multiplexing.
        too_long = control_dir is not None and len(str(control_dir)) + 58 > 107
        self.control_dir = default if control_dir is None or too_long else control_dir

    @classmethod
    def from_env(cls, target: SshTarget) -> SshRunner:
        return cls(target, os.environ.get(ENV_KEY) or None, os.environ.get(ENV_KNOWN_HOSTS) or None)

    def options(self) -> list[str]:
        opts = [
            "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=accept-new",
            "-o", "ConnectTimeout=15",
            "-o", "ServerAliveInterval=15",
            "-o", "ControlMaster=auto",
            # %C: a hash of host, port and user, short enough for a socket path.
            "-o", f"ControlPath={self.control_dir}/%C",
            "-o", "ControlPersist=120",
            "-p", str(self.target.port),
        ]  # fmt: skip
        if self.identity:
            opts += ["-i", self.identity, "-o", "IdentitiesOnly=yes"]
        if self.known_hosts:
            opts += ["-o", f"UserKnownHostsFile={self.known_hosts}"]
        return opts

    def command(self, argv: list[str], tty: bool = False) -> list[str]:
        # -tt for spawned processes: when the local ssh dies, the remote pty hangs up and the
        # remote process group gets SIGHUP, so nothing is left running on the head node.
        self.control_dir.mkdir(mode=0o700, exist_ok=True)
        return [
            "ssh",
            *self.options(),
            "-tt" if tty else "-T",
            self.target.destination,
            "--",
            shlex.join(argv),
        ]

    def describe(self) -> str:
        return str(self.target)


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
