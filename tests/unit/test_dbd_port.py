"""slurmdbd's port when the platform leaves it open: the cluster's recorded one, else the
first free one of a band above the ephemeral range that no other cluster records and the
platform's own daemons do not use, recorded at once."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from harness.cluster.base import ClusterError
from harness.cluster.containers.ports import (
    DBD_PORT_FILE,
    dbd_ports,
    recorded_dbd_port,
    take_dbd_port,
    with_recorded_dbd_port,
)
from harness.platform import Platform, platform_from_dict
from tests.platforms import platform_toml


def platform(controller_port: int = 6819, table: str = "") -> Platform:
    text = platform_toml(
        name="p", controller_port=controller_port, slurmd_base_port=22001, accounting_off=False
    )
    return platform_from_dict(tomllib.loads(text + table))


def record(root: Path, cluster: str, port: int) -> Path:
    (root / cluster).mkdir(parents=True)
    (root / cluster / DBD_PORT_FILE).write_text(f"{port}\n")
    return root / cluster


def port_of(p: Platform) -> int | None:
    return p.deployment.accounting.dbd_port


EPHEMERAL = range(32768, 61000)  # the kernel's default


def test_the_band_lies_just_above_the_ephemeral_range_or_below_it_when_that_runs_to_the_top() -> None:
    assert dbd_ports(EPHEMERAL) == range(61000, 61500)
    assert dbd_ports(range(10000, 65536)) == range(9500, 10000)


def test_the_first_port_skips_other_clusters_own_ports_and_busy_ones(tmp_path: Path) -> None:
    record(tmp_path, "other", 61000)
    busy = {61001}
    # this platform's controller on 61002 (outside the checks here), 61000 another's, 61001 taken
    got = take_dbd_port(
        platform(controller_port=61002), tmp_path / "mine", in_use=busy.__contains__, ephemeral=EPHEMERAL
    )
    assert port_of(got) == 61003
    assert recorded_dbd_port(tmp_path / "mine") == 61003  # taken at once: the next cluster skips it
    again = take_dbd_port(platform(6900), tmp_path / "next", in_use=lambda _p: False, ephemeral=EPHEMERAL)
    assert port_of(again) == 61001  # free now, and neither 61000 nor 61003 (recorded)


def test_a_cluster_keeps_the_port_its_state_recorded(tmp_path: Path) -> None:
    mine = record(tmp_path, "mine", 61030)
    assert port_of(take_dbd_port(platform(6900), mine, in_use=lambda _p: True, ephemeral=EPHEMERAL)) == 61030
    assert port_of(with_recorded_dbd_port(platform(6900), mine)) == 61030
    assert port_of(with_recorded_dbd_port(platform(6900), tmp_path / "never-up")) is None


def test_a_port_written_in_the_platform_or_accounting_off_is_left_alone(tmp_path: Path) -> None:
    fixed = platform(6900, "[deployment.accounting]\ndbd_port = 7150\n")
    assert take_dbd_port(fixed, tmp_path / "m", in_use=lambda _p: False, ephemeral=EPHEMERAL) is fixed
    off = platform(6900, "[deployment.accounting]\nenabled = false\n")
    assert take_dbd_port(off, tmp_path / "m", in_use=lambda _p: False, ephemeral=EPHEMERAL) is off
    assert not (tmp_path / "m" / DBD_PORT_FILE).exists()


def test_no_free_port_names_the_key_to_set(tmp_path: Path) -> None:
    message = r"no free port for slurmdbd in 61000-61499: set \[deployment.accounting\]"
    with pytest.raises(ClusterError, match=message):
        take_dbd_port(platform(6900), tmp_path / "m", in_use=lambda _p: True, ephemeral=EPHEMERAL)


def test_no_accounting_writes_the_same_machine_without_slurmdbd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.cli.sizing import sized_platform_file
    from harness.platform import load_platform

    monkeypatch.setenv("HARNESS_STATE_DIR", str(tmp_path))
    options = {"compute_nodes": None, "bb_nodes": None, "nodes_per_chassis": None, "no_accounting": True}
    path = sized_platform_file("default", options)
    plain, off = load_platform("default"), load_platform(path)
    assert plain.deployment.accounting.enabled and not off.deployment.accounting.enabled
    assert off.name == "kth-bb-108-noacct" and path == str(tmp_path / "platforms" / "kth-bb-108-noacct.toml")
    assert off.all_nodes() == plain.all_nodes() and off.deployment.controller_port == 6817
    options = {"compute_nodes": None, "bb_nodes": None, "nodes_per_chassis": None, "no_accounting": False}
    assert sized_platform_file("default", options) == "default"  # nothing asked: the file itself


def test_a_port_taken_before_is_taken_again_once_the_state_is_gone(tmp_path: Path) -> None:
    """An object that took a port keeps it in its platform; the state removed meanwhile
    (another object's ``down``), its next render takes and records one again."""
    first = take_dbd_port(platform(6900), tmp_path / "c", in_use=lambda _p: False, ephemeral=EPHEMERAL)
    (tmp_path / "c" / DBD_PORT_FILE).unlink()
    record(tmp_path, "other", 61000)  # the port went to another cluster meanwhile
    again = take_dbd_port(first, tmp_path / "c", left_open=True, in_use=lambda _p: False, ephemeral=EPHEMERAL)
    assert (port_of(first), port_of(again), recorded_dbd_port(tmp_path / "c")) == (61000, 61001, 61001)
    assert take_dbd_port(first, tmp_path / "c", in_use=lambda _p: False, ephemeral=EPHEMERAL) is first
