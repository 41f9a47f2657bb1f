"""Ports of a local cluster (free, below the ephemeral range) and the node supervisor,
with real sockets and real processes."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from harness.cluster.base import ClusterError
from harness.cluster.containers.ports import check_ports, ephemeral_ports, listen_ports
from harness.platform import Platform, platform_from_dict
from tests.platforms import platform_toml


def small(base: int, controller: int = 6905) -> Platform:
    text = platform_toml(name="small-8+1", controller_port=controller, slurmd_base_port=base)
    return platform_from_dict(tomllib.loads(text), source="small.toml")


def test_ephemeral_range_is_read_from_the_kernel_file(tmp_path: Path) -> None:
    f = tmp_path / "range"
    f.write_text("32768\t60999\n")
    assert ephemeral_ports(f) == range(32768, 61000)
    assert ephemeral_ports(tmp_path / "absent") == range(32768, 61000)


def test_listen_ports_are_the_controller_then_one_per_node() -> None:
    assert listen_ports(small(12901)) == [6905, *range(12901, 12910)]


def test_a_slurmd_port_in_the_ephemeral_range_is_refused_with_the_file_named() -> None:
    with pytest.raises(ClusterError) as err:
        check_ports(small(47001), ephemeral=range(32768, 61000))
    message = str(err.value)
    assert message.startswith("small.toml: ports [47001, 47002")
    assert "ephemeral range 32768-60999" in message and "end below 32768" in message
    # the last slurmd port just below the range is fine
    check_ports(small(32768 - 9), ephemeral=range(32768, 61000))


def test_a_port_in_use_is_refused() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(ClusterError, match=rf"ports already in use: \[{port}\]"):
            check_ports(small(12901, controller=port), ephemeral=range(60000, 60001))


FAKE_SLURMD = """#!/bin/sh
# records each start; the first start of node n1 exits at once (a crash)
echo "$3" >> "{log}"
if [ "$3" = n1 ] && [ ! -e "{log}.crashed" ]; then touch "{log}.crashed"; exit 3; fi
exec sleep 60
"""


def test_supervisor_starts_every_node_restarts_a_crash_and_stops_on_sigterm(tmp_path: Path) -> None:
    log = tmp_path / "starts"
    fake = tmp_path / "slurmd"
    fake.write_text(FAKE_SLURMD.format(log=log))
    fake.chmod(0o755)
    argv = [sys.executable, "-m", "harness.cluster.node.supervisor", "n1,n2,n3", "--command", str(fake),
            "--spool", str(tmp_path / "spool")]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 90  # a loaded host starts processes slowly (30 s was short at load 14)
    while time.monotonic() < deadline and (not log.exists() or len(log.read_text().split()) < 4):
        time.sleep(0.1)
    assert sorted(log.read_text().split()) == ["n1", "n1", "n2", "n3"]
    assert sorted(p.name for p in (tmp_path / "spool").iterdir()) == ["n1", "n2", "n3"]
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=15)
    assert proc.returncode == 0
    assert "n1 exited (status 768); restart 1 in 1 s" in out
    assert "all daemons stopped" in out


def test_a_node_with_its_own_conf_gets_it_and_the_others_the_shared_one(tmp_path: Path) -> None:
    from harness.cluster.node.supervisor import Supervisor

    args = tmp_path / "args"
    fake = tmp_path / "slurmd"
    fake.write_text(f'#!/bin/sh\necho "$*" >> {args}\n')
    fake.chmod(0o755)
    confs = tmp_path / "nodes"
    confs.mkdir()
    (confs / "slurm-n1.conf").write_text("NodeName=n1\n")
    sup = Supervisor(["n1", "n2"], str(fake), spool=None, conf_dir=confs)
    for node in ("n1", "n2"):
        sup.start(node)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (not args.exists() or len(args.read_text().splitlines()) < 2):
        time.sleep(0.05)
    assert sorted(args.read_text().splitlines()) == [f"-D -N n1 -f {confs / 'slurm-n1.conf'}", "-D -N n2"]
