"""The host check before a cluster starts (harness.cluster.containers.capacity): the measured
cost per node against the host's memory, pid_max and open files, with hand-computed needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cluster.base import ClusterError
from harness.cluster.containers.capacity import HostLimits, check_capacity, memory_mb, slurmd_kb
from harness.platform import load_platform

ROOMY = HostLimits(
    available_mb=20_000.0, pid_max=4_194_304, threads_now=500, file_max=1_000_000, files_now=2_000
)


def test_limits_are_read_from_proc(tmp_path: Path) -> None:
    (tmp_path / "sys/kernel").mkdir(parents=True)
    (tmp_path / "sys/fs").mkdir(parents=True)
    (tmp_path / "meminfo").write_text("MemTotal:  24000000 kB\nMemAvailable:   2048000 kB\n")
    (tmp_path / "sys/kernel/pid_max").write_text("32768\n")
    (tmp_path / "loadavg").write_text("0.50 0.40 0.30 2/913 4242\n")
    (tmp_path / "sys/fs/file-max").write_text("100000\n")
    (tmp_path / "sys/fs/file-nr").write_text("2745\t0\t100000\n")
    assert HostLimits.read(tmp_path) == HostLimits(2000.0, 32768, 913, 100000, 2745)


def test_cts1_fits_own_node_and_not_shared() -> None:
    cts1 = load_platform("cts1")  # 4,320 nodes, own-node
    assert slurmd_kb(cts1) == pytest.approx(1_031.31)  # 1,030 + 1.31 for its own node
    # (4,320 x 1,031.31 kB = 4,455,259.2 kB = 4,350.84 MB, + 400 MB) x 1.25 = 5,938.55 MB
    assert memory_mb(cts1) == pytest.approx(5_938.55, abs=0.01)
    check_capacity(cts1, ROOMY)
    shared = cts1.redeployed(slurmd_conf="shared")
    assert slurmd_kb(shared) == pytest.approx(1_030 + 1.31 * 4_320)  # every slurmd holds every node
    # (4,320 x 6,689.2 kB / 1,024 + 400) x 1.25 = 35,775.08 MB
    with pytest.raises(ClusterError, match=r"needs about 35,775 MB of memory, the host has 20,000 MB.*"
                                           r'slurmd_conf = "own-node" needs 5,939 MB'):  # fmt: skip
        check_capacity(shared, ROOMY)


def test_pid_max_and_open_files_are_named_with_the_way_to_raise_them() -> None:
    cts1 = load_platform("cts1")
    few_pids = HostLimits(20_000.0, 32_768, 12_000, 1_000_000, 2_000)
    # 4,320 x 5 = 21,600 threads + 12,000 running + 2,000 kept > 32,768
    with pytest.raises(ClusterError, match=r"21,600 threads, and 12,000 run already .* pid_max of 32,768: "
                                           r"raise it \(sysctl -w kernel.pid_max=4194304\)"):  # fmt: skip
        check_capacity(cts1, few_pids)
    few_files = HostLimits(20_000.0, 4_194_304, 500, 50_000, 2_000)
    # 4,320 x 13 = 56,160 files + 2,000 open > 50,000
    with pytest.raises(ClusterError, match=r"56,160 open files.*fs.file-max=116320"):
        check_capacity(cts1, few_files)


def test_the_default_machine_fits_a_small_host() -> None:
    small = HostLimits(
        available_mb=2_000.0, pid_max=32_768, threads_now=900, file_max=100_000, files_now=3_000
    )
    check_capacity(load_platform(), small)  # 108 nodes: about 650 MB
