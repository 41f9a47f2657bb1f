"""Per-command latency of the ``--cluster ssh://`` backend against a stand-in VM.

Starts one stand-in (the Ansible tests' sshd container, ``tests/ansible/standin``) on 127.0.0.1,
then times, after one warm-up each:

* ``subprocess``: what the backend ran before Fabric, an ``ssh`` process per command over a
  ControlMaster connection (the command line below is the one the old ``SshRunner`` built);
* ``fabric``: ``harness.cluster.hosts.ssh.SshRunner``, a channel of one persistent Paramiko connection;

for ``true``, for ``sudo -n -- true`` (what every command for root costs on a cloud image) and
for moving 1 MiB each way (old: ``cat`` through the command; new: SFTP).

    python benchmarks/ssh_latency.py [--port 22950] [--name fabric-latency] [--repeat 50]

Results: docs/ansible.md ("Latency of the SSH backend"). The container is removed at the end.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for tests.standin

from harness.cluster.hosts.runners import SshTarget
from harness.cluster.hosts.ssh import SshRunner
from tests.standin import LOGIN, remove_standin, start_standin

MIB = bytes(range(256)) * 4096


def old_ssh(root: Path, port: int, key: Path, argv: list[str], data: bytes | None = None) -> bytes:
    """The pre-Fabric backend's command line: batch mode, ControlMaster, a socket per target."""
    cmd = ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new",
           "-o", "ConnectTimeout=15", "-o", "ServerAliveInterval=15", "-o", "ControlMaster=auto",
           "-o", f"ControlPath={root}/cp-%C", "-o", "ControlPersist=120", "-p", str(port),
           "-i", str(key), "-o", "IdentitiesOnly=yes", "-o", f"UserKnownHostsFile={root}/known_old",
           "-T", f"{LOGIN}@127.0.0.1", "--", shlex.join(argv)]  # fmt: skip
    return subprocess.run(cmd, input=data, capture_output=True, check=True).stdout


def timed(what: Callable[[], object], repeat: int) -> list[float]:
    what()  # warm-up: opens the connection (master socket, Paramiko transport, SFTP session)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        what()
        times.append((time.perf_counter() - start) * 1000)
    return times


def row(label: str, times: list[float]) -> str:
    q = statistics.quantiles(times, n=10)
    return f"| {label} | {statistics.median(times):.1f} | {q[0]:.1f} | {q[-1]:.1f} |"


def measure(root: Path, port: int, key: Path, repeat: int) -> list[str]:
    fab = SshRunner(SshTarget("127.0.0.1", LOGIN, port), str(key), str(root / "known_new"))
    remote = "/tmp/harness-latency.bin"
    cases: list[tuple[str, Callable[[], object]]] = [
        ("subprocess: true", lambda: old_ssh(root, port, key, ["true"])),
        ("fabric: true", lambda: fab.run(["true"])),
        ("subprocess: sudo -n -- true", lambda: old_ssh(root, port, key, ["sudo", "-n", "--", "true"])),
        ("fabric: sudo -n -- true", lambda: fab.run(["sudo", "-n", "--", "true"])),
        ("subprocess: put 1 MiB (cat >)",
         lambda: old_ssh(root, port, key, ["sh", "-c", f"cat > {remote}"], MIB)),
        ("fabric: put 1 MiB (SFTP)", lambda: fab.put_file("/tmp", "harness-latency.bin", MIB)),
        ("subprocess: get 1 MiB (cat)", lambda: old_ssh(root, port, key, ["cat", remote])),
        ("fabric: get 1 MiB (SFTP)", lambda: fab.get_file(remote)),
    ]  # fmt: skip
    lines = ["| operation | median ms | p10 ms | p90 ms |", "| --- | ---: | ---: | ---: |"]
    try:
        for label, what in cases:
            lines.append(row(label, timed(what, repeat)))
            print(lines[-1], flush=True)
    finally:
        fab.close()
        subprocess.run(["ssh", "-o", f"ControlPath={root}/cp-%C", "-p", str(port), "-O", "exit",
                        f"{LOGIN}@127.0.0.1"], capture_output=True)  # fmt: skip
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=22950, help="the stand-in's sshd port on 127.0.0.1")
    parser.add_argument("--name", default="fabric-latency", help="the stand-in container's name")
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lat", dir="/tmp") as tmp:
        root = Path(tmp)
        key = root / "id_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        start_standin(args.name, args.port, key.with_suffix(".pub"), "harness.ssh-latency")
        try:
            lines = measure(root, args.port, key, args.repeat)
        finally:
            remove_standin(args.name)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
