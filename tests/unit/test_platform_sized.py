"""A machine of any size in one command (--nodes, --bb-nodes, --nodes-per-chassis; --platform cts1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.platform import PlatformError, load_platform
from harness.platform.sized import bb_per_chassis_for, deployed_for_size, sized


def test_cts1_is_a_named_platform() -> None:
    cts1 = load_platform("cts1")
    assert (cts1.compute_count, cts1.bb_count, cts1.node_count) == (3_888, 432, 4_320)
    assert (cts1.chassis, cts1.compute_per_chassis, cts1.bb_per_chassis) == (24, 162, 18)  # the SUs
    assert cts1.io.pfs_capacity_mbps(cts1.compute_count) == 3_888 * 18.0  # Herbein's 70 GB/s
    assert cts1.deployment.slurmd_conf == "own-node" and cts1.source == "<built-in cts1>"


def test_a_sized_machine_by_hand() -> None:
    # 20 compute nodes in chassis of 8: 3 chassis (the last of 4), 2 BB nodes each of 8 x 5,000 / 2 MB
    m = sized(20, per_chassis=8, bb_per_chassis=2)
    assert (m.compute_count, m.bb_count, m.bb_capacity_mb, m.groups, m.chassis_per_group) == (
        20,
        6,
        20_000,
        1,
        3,
    )
    assert (
        m.description == "20 compute nodes + 6 burst-buffer nodes of 20,000 MB, 2 BB nodes per chassis of 8"
    )
    assert bb_per_chassis_for(20, 8, None) == 1 and bb_per_chassis_for(20, 8, 6) == 2
    with pytest.raises(
        PlatformError, match=r"--bb-nodes 4: the 20 compute nodes make 3 chassis of 8.*multiple of 3"
    ):
        bb_per_chassis_for(20, 8, 4)


def test_a_big_machine_is_deployed_to_fit_one_host() -> None:
    small = deployed_for_size(sized(96))
    assert (small.deployment.node_containers, small.deployment.slurmd_conf) == (4, "shared")  # the base's
    big = deployed_for_size(sized(4_000))  # 4,500 nodes: ceil(4,500 / 1,100) containers
    assert (big.deployment.node_containers, big.deployment.slurmd_conf) == (5, "own-node")


def test_nodes_option_writes_the_machine_and_the_cluster_reads_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HARNESS_STATE_DIR", str(tmp_path))
    out = CliRunner().invoke(main, ["run", "--dry-run", "--nodes", "1000", "--bb-nodes", "250",
                                    "--nodes-per-chassis", "8", "--first-n", "10"])  # fmt: skip
    assert out.exit_code == 0, out.output
    [made] = (tmp_path / "platforms").glob("*.toml")
    platform = load_platform(made)
    assert made.name == "kth-bb-108-n1000-bb250-c8.toml"
    assert (platform.compute_count, platform.bb_count, platform.bb_per_chassis) == (1000, 250, 2)
    assert platform.deployment.slurmd_conf == "own-node"
    bad = CliRunner().invoke(main, ["run", "--dry-run", "--bb-nodes", "12"])
    assert bad.exit_code == 2 and "give --nodes too" in bad.output
