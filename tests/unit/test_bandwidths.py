"""The platform's [io] table: the thesis's bandwidths by default, Herbein's hierarchy, Lackner's tiers."""

from __future__ import annotations

import pytest

from harness.platform import load_platform
from harness.platform.bandwidths import BandwidthError, bandwidths_from_dict


def test_default_platform_has_the_thesis_bandwidths() -> None:
    io = load_platform().io
    assert (io.compute_link_mbps, io.bb_node_mbps, io.pfs_mbps) == (1250.0, 1250.0, 5000.0)
    assert io.hierarchy is None
    assert (io.tiers.hps_mbps, io.tiers.stage_mbps) == (15_000.0, 5000.0)
    assert io.pfs_capacity_mbps(96) == 5000.0


def test_herbeins_underprovisioned_pfs() -> None:
    io = bandwidths_from_dict({"hierarchy": {"pfs_underprovision_pct": 30}})
    # 96 nodes x 18 MB/s = 1728 MB/s perfectly provisioned; 30 % less
    assert io.pfs_capacity_mbps(96) == pytest.approx(1209.6)
    assert io.hierarchy is not None and io.hierarchy.edge_mbps == 10_667.0


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"pfs_gbps": 5}, r"machine.io: unknown key 'pfs_gbps' \(did you mean 'pfs_mbps'\?\)"),
        ({"pfs_mbps": -1}, r"io.pfs_mbps: expected a finite number > 0, got -1"),
        ({"pfs_mbps": 0}, r"io.pfs_mbps: expected a finite number > 0, got 0"),
        ({"pfs_mbps": float("nan")}, r"io.pfs_mbps: expected a finite number > 0, got nan"),
        ({"tiers": {"hps_ratio": "fast"}}, r"io.tiers.hps_ratio: expected a finite number > 0"),
        ({"hierarchy": {"pfs_underprovision_pct": 100}}, r"must be below 100"),
    ],
)
def test_bad_io_tables_name_the_key(table: dict, message: str) -> None:
    with pytest.raises(BandwidthError, match=message):
        bandwidths_from_dict(table, "x.toml")
