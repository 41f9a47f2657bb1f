"""slurmdbd's port when the platform leaves it open: the cluster's recorded one, else the
first free one that no other cluster records and the platform's own daemons do not use."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from harness.cluster.base import ClusterError
from harness.cluster.containers.ports import DBD_PORTS, recorded_dbd_port, with_dbd_port
from harness.platform import Platform, platform_from_dict
from tests.platforms import platform_toml


def platform(controller_port: int = 6819, table: str = "") -> Platform:
    text = platform_toml(
        name="p", controller_port=controller_port, slurmd_base_port=22001, accounting_off=False
    )
    return platform_from_dict(tomllib.loads(text + table))


def record(root: Path, cluster: str, port: int) -> Path:
    (root / cluster / "dbd").mkdir(parents=True)
    (root / cluster / "dbd" / "slurmdbd.conf").write_text(
        f"DbdAddr=127.0.0.1\nDbdPort={port}\nDebugLevel=info\n"
    )
    return root / cluster


def port_of(p: Platform) -> int | None:
    return p.deployment.accounting.dbd_port


def test_the_first_port_skips_the_controller_other_clusters_and_busy_ones(tmp_path: Path) -> None:
    record(tmp_path, "other", 6820)
    busy = {6821}
    # 6819 is this platform's controller, 6820 another cluster's, 6821 taken: 6822
    got = with_dbd_port(platform(controller_port=6819), tmp_path / "mine", in_use=busy.__contains__)
    assert port_of(got) == 6822
    assert DBD_PORTS.start == 6819


def test_a_cluster_keeps_the_port_its_state_recorded(tmp_path: Path) -> None:
    mine = record(tmp_path, "mine", 6830)
    got = with_dbd_port(platform(controller_port=6900), mine, in_use=lambda _p: True)
    assert port_of(got) == 6830 and recorded_dbd_port(mine) == 6830


def test_a_port_written_in_the_platform_or_accounting_off_is_left_alone(tmp_path: Path) -> None:
    fixed = platform(6900, "[deployment.accounting]\ndbd_port = 7150\n")
    assert with_dbd_port(fixed, tmp_path / "m", in_use=lambda _p: False) is fixed
    off = platform(6900, "[deployment.accounting]\nenabled = false\n")
    assert with_dbd_port(off, tmp_path / "m", in_use=lambda _p: False) is off


def test_no_free_port_names_the_key_to_set(tmp_path: Path) -> None:
    with pytest.raises(
        ClusterError, match=r"no free port for slurmdbd in 6819-7218: set \[deployment.accounting\]"
    ):
        with_dbd_port(platform(6900), tmp_path / "m", in_use=lambda _p: True)


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
