"""Emulate-mode experiments with ``-j N``: the slots' cluster names and ports (hand-computed), the
refusals before anything starts, and one slot per worker process for its whole life."""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import pytest

from harness.cluster.base import ClusterError
from harness.cluster.containers.capacity import HostLimits, clusters_that_fit
from harness.cluster.containers.ports import SLOT_PORTS_FILE, take_slot_ports
from harness.experiments.emulate_slots import (
    Slot,
    SlotError,
    hold_a_slot,
    left_up_line,
    plan_slots,
    slot_name,
    worker_slot,
)
from harness.experiments.spec import load_spec
from harness.platform import load_platform
from tests.platforms import platform_toml

# 8 compute nodes and 1 BB node: 9 slurmd ports from 32101
NINE_NODES = platform_toml(name="emuj-8+1", controller_port=7800, slurmd_base_port=32101)
HOST = HostLimits(
    available_mb=3_100.0, pid_max=32_768, threads_now=1_000, file_max=1_000_000, files_now=2_000
)
SPEC = """
[experiment]
mode = "emulate"
[workload]
trace = "bundled"
first_n = 4
[platform]
file = "platform.toml"
[policies]
names = ["slurm-fcfs"]
[emulate]
cluster = "{cluster}"
cluster_name = "emujunit"
{clock}"""


def nine_nodes(tmp_path: Path):
    path = tmp_path / "platform.toml"
    path.write_text(NINE_NODES)
    return load_platform(path)


def spec(tmp_path: Path, cluster: str = "docker"):
    nine_nodes(tmp_path)
    clock = "" if cluster == "docker" else "shrink = [0.99]\n"  # the virtual clocks need Docker
    (tmp_path / "exp.toml").write_text(SPEC.format(cluster=cluster, clock=clock))
    return load_spec(tmp_path / "exp.toml")


def test_slot_zero_keeps_the_experiments_cluster_and_the_others_are_numbered() -> None:
    assert [slot_name("emuj", k) for k in range(3)] == ["emuj", "emuj-1", "emuj-2"]
    slots = [Slot(0, "emuj", "default"), Slot(1, "emuj-1", "p.toml")]
    assert left_up_line(slots) == (
        "clusters left up: emuj, emuj-1 "
        "(harness cluster down --name emuj; harness cluster down --name emuj-1)"
    )


def test_slot_ports_shift_past_the_base_and_a_busy_port(tmp_path: Path) -> None:
    base = nine_nodes(tmp_path)
    roots = [tmp_path / "state" / "emuj-1", tmp_path / "state" / "emuj-2"]
    # shift 1: 7801 and 32110-32118; shift 2 would take 7802, which is busy: shift 3, 7803 and 32128-32136
    one, two = take_slot_ports(base, roots, in_use=lambda port: port == 7802, ephemeral=range(32768, 61000))
    assert (one.deployment.controller_port, one.deployment.slurmd_base_port) == (7801, 32110)
    assert (two.deployment.controller_port, two.deployment.slurmd_base_port) == (7803, 32128)
    assert list(two.ports().values())[-1] == 32136
    assert (roots[1] / SLOT_PORTS_FILE).read_text() == "7803 32128 9\n"
    # recorded: the same ports again, even though the slots' own clusters now listen on them
    again = take_slot_ports(base, roots, in_use=lambda port: True, ephemeral=range(32768, 61000))
    assert [p.deployment.controller_port for p in again] == [7801, 7803]


def test_slot_ports_avoid_those_another_cluster_records(tmp_path: Path) -> None:
    base = nine_nodes(tmp_path)
    other = tmp_path / "state" / "someone-else"
    other.mkdir(parents=True)
    (other / SLOT_PORTS_FILE).write_text("7900 32112 3\n")  # 32112-32114: in shift 1's 32110-32118
    (slot,) = take_slot_ports(base, [tmp_path / "state" / "emuj-1"], in_use=lambda port: False)
    assert (slot.deployment.controller_port, slot.deployment.slurmd_base_port) == (7802, 32119)


def test_no_slot_ports_reach_the_ephemeral_range_and_none_are_recorded(tmp_path: Path) -> None:
    base = nine_nodes(tmp_path)
    roots = [tmp_path / "state" / "emuj-1", tmp_path / "state" / "emuj-2"]
    # slot 2 needs shift 3 (7802 busy), whose slurmd ports end at 32136 >= 32130
    with pytest.raises(
        ClusterError, match=r"ephemeral range 32130-60999 .*: the next would take up to 32136;"
    ):
        take_slot_ports(base, roots, in_use=lambda port: port == 7802, ephemeral=range(32130, 61000))
    assert not (roots[0] / SLOT_PORTS_FILE).exists()


def test_how_many_clusters_fit_memory_then_pids(tmp_path: Path) -> None:
    platform = nine_nodes(tmp_path)  # without accounting
    # a slurmd: 1,030 + 1.31 x 9 = 1,041.79 kB; a cluster: (9 x 1,041.79 / 1,024 + 400) x 1.25 = 511.4 MB;
    # (3,100 - 1,024) / 511.4 = 4.06; threads: (32,768 - 1,000 - 2,000) / 45 = 661
    fit, limit = clusters_that_fit(platform, HOST)
    assert fit == 4 and limit.startswith(
        "3,100 MB available (1024 MB kept for the host), about 511 MB a cluster"
    )
    accounted = platform.redeployed(accounting=platform.deployment.accounting.__class__(enabled=True))
    assert clusters_that_fit(accounted, HOST)[0] == 3  # + 104 x 1.25 = 641.4 MB: 2,076 / 641.4 = 3.24
    crowded = HostLimits(20_000.0, 32_768, 30_700, 1_000_000, 2_000)  # (32,768 - 30,700 - 2,000) / 45 = 1.5
    assert clusters_that_fit(platform, crowded) == (
        1,
        "30,700 threads run against pid_max 32,768 (2,000 kept), about 45 a cluster",
    )


def test_plan_slots_refuses_what_the_host_cannot_hold(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HARNESS_STATE_DIR", str(tmp_path / "state"))
    s = spec(tmp_path)
    with pytest.raises(
        SlotError, match=r"^-j 5: 5 clusters of 9 nodes to start, this host holds 4: 3,100 MB "
    ):
        plan_slots(s, tmp_path / "out", 5, HOST, is_running=lambda name: False)
    with pytest.raises(SlotError, match=r'^-j 2: \[emulate\] cluster = "local" is one Slurm; .*use -j 1$'):
        plan_slots(spec(tmp_path, "local"), tmp_path / "out", 2, HOST)
    assert not (tmp_path / "state").exists() and not (tmp_path / "out").exists()  # nothing taken


def test_plan_slots_counts_the_clusters_up_already_and_writes_the_slots_platforms(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("HARNESS_STATE_DIR", str(tmp_path / "state"))
    up = {"emujunit", "emujunit-1"}  # their memory is taken already: three start, four fit
    slots = plan_slots(spec(tmp_path), tmp_path / "out", 5, HOST, up.__contains__, in_use=lambda port: False)
    assert [(s.index, s.cluster_name) for s in slots][:2] == [(0, "emujunit"), (1, "emujunit-1")]
    assert slots[0].platform == str(tmp_path / "platform.toml")  # slot 0: the experiment's own
    four = load_platform(slots[4].platform)  # shift 4: 7804 and 32101 + 4 x 9 = 32137
    assert (four.deployment.controller_port, four.deployment.slurmd_base_port) == (7804, 32137)
    assert slots[4].platform == str(tmp_path / "out" / ".slots" / "emujunit-4.toml")
    assert (tmp_path / "state" / "emujunit-4" / SLOT_PORTS_FILE).read_text() == "7804 32137 9\n"
    assert plan_slots(spec(tmp_path), tmp_path / "out", 1) == [slots[0]]  # -j 1: the one cluster


def _slot_of_this_worker(_: int) -> tuple[int, str, bool]:
    time.sleep(0.3)  # long enough that both workers take cells
    slot = worker_slot()
    return os.getpid(), slot.cluster_name if slot else "", os.getpgrp() == os.getpid()


def test_each_worker_holds_one_slot_for_its_life(tmp_path: Path) -> None:
    slots = [Slot(0, "emuj", "default"), Slot(1, "emuj-1", "p.toml")]
    context = get_context("forkserver")
    with ProcessPoolExecutor(
        2, mp_context=context, initializer=hold_a_slot, initargs=(slots, str(tmp_path))
    ) as pool:
        seen = set(pool.map(_slot_of_this_worker, range(6)))
    by_worker: dict[int, set[str]] = {}
    for pid, name, own_group in seen:
        by_worker.setdefault(pid, set()).add(name)
        assert own_group  # out of the terminal's group: Ctrl-C reaches the runner only
    assert sorted(by_worker.values(), key=sorted) == [{"emuj"}, {"emuj-1"}]


def test_a_slot_cluster_recreated_by_a_run_keeps_its_ports(tmp_path: Path, monkeypatch) -> None:
    """A run that recreates its cluster (stale image, other clock) removes the state directory
    and the record with it; the cluster still runs on the platform the experiment wrote."""
    monkeypatch.setenv("HARNESS_STATE_DIR", str(tmp_path / "state"))
    up = {"emujunit", "emujunit-1"}.__contains__
    plan_slots(spec(tmp_path), tmp_path / "out", 2, HOST, up, in_use=lambda port: False)  # 7801, 32110
    (tmp_path / "state" / "emujunit-1" / SLOT_PORTS_FILE).unlink()
    # its own ports are bound now (by itself): without the record it would move to shift 2, 7802
    itself = {7801, *range(32110, 32119)}.__contains__
    again = plan_slots(spec(tmp_path), tmp_path / "out", 2, HOST, up, in_use=itself)
    assert load_platform(again[1].platform).deployment.controller_port == 7801
    assert (tmp_path / "state" / "emujunit-1" / SLOT_PORTS_FILE).read_text() == "7801 32110 9\n"
