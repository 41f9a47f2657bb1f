"""Platforms sized for a trace: harness platform from-trace | show, the partial last chassis,
the TOML round trip, and the BB model's per-node cap following the platform."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.platform import PlatformError, load_platform, platform_from_dict
from harness.platform.writing import platform_to_toml
from harness.workload.plan import prepare
from harness.workload.platforms import platform_from_trace, sized_platform

DATA = Path(__file__).resolve().parents[1] / "data"
EIGHT = DATA / "eight_per_node.swf"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_1002_nodes_in_chassis_of_8_give_126_bb_nodes():
    p = sized_platform(1002)
    assert (p.compute_count, p.bb_count, p.node_count) == (1002, 126, 1128)
    assert (p.groups, p.chassis_per_group, p.compute_per_chassis, p.compute_total) == (42, 3, 8, 1002)
    assert p.compute_nodes()[-1] == "c1002" and p.bb_nodes()[-1] == "bb126"
    assert p.chassis_of_compute(1001) == 125  # the partial last chassis holds c1001, c1002
    assert p.bb_capacity_mb == 40_000
    assert p.deployment == load_platform().deployment  # ports and containers of the built-in one


def test_full_chassis_need_no_total_and_toml_round_trips():
    p = sized_platform(96, bb_ratio=4)
    assert (p.compute_count, p.bb_count, p.compute_total, p.bb_capacity_mb) == (96, 24, None, 20_000)
    assert (p.groups, p.chassis_per_group) == (6, 4)
    for q in (p, sized_platform(1002)):
        assert platform_from_dict(tomllib.loads(platform_to_toml(q, "a comment"))) == q


def test_partial_chassis_total_must_fit_the_last_chassis():
    base = load_platform()
    with pytest.raises(PlatformError, match=r"compute_total must be in \(88, 96\]"):
        from dataclasses import replace

        replace(base.machine, compute_total=80)


def test_from_trace_reads_the_machine_size():
    made = platform_from_trace(EIGHT)
    assert (made.platform.compute_count, made.platform.bb_count) == (8, 1)
    assert made.info["compute_nodes_from"] == "MaxNodes 8 in the header"
    assert made.info["node_size"]["procs_per_node"] == 8
    assert platform_from_trace(EIGHT, nodes=20, bb_ratio=4).platform.bb_count == 5


def test_from_trace_without_header_takes_the_widest_job(tmp_path):
    records = [line for line in EIGHT.read_text().splitlines() if not line.startswith(";")]
    headerless = tmp_path / "headerless.swf"
    headerless.write_text("\n".join(records) + "\n")
    made = platform_from_trace(headerless)  # 1 processor per node assumed: 64 processors, 64 nodes
    assert (made.platform.compute_count, made.info["widest_job_nodes"]) == (64, 64)
    assert made.info["node_size"]["source"] == "assumed"
    assert platform_from_trace(headerless, procs_per_node=8).platform.compute_count == 8


def test_bb_cap_follows_the_platform():
    """The log-normal draw is capped at the BB node's capacity: 20,000 MB on a 4-per-BB platform."""
    small = sized_platform(96, bb_ratio=4)
    assert small.bb_capacity_mb == 20_000
    plan, manifest = prepare(DATA / "small.swf", platform=small, bb_model="constant", bb_constant_mb=30_000)
    assert plan["bb_per_node_mb"].max() <= 20_000
    assert manifest["bb_model"]["counts"]["clipped_high"] > 0
    plan, _ = prepare(DATA / "small.swf", bb_model="constant", bb_constant_mb=30_000)
    assert plan["bb_per_node_mb"].max() == 30_000  # the built-in 40,000 MB BB nodes


def test_cli_from_trace_show_and_inspect_on_it(tmp_path):
    out = tmp_path / "p.toml"
    made = invoke("platform", "from-trace", str(EIGHT), "--bb-ratio", "4", "-o", str(out))
    assert made.exit_code == 0, made.output
    assert "8 compute + 2 burst-buffer nodes = 10" in made.stdout
    shown = invoke("platform", "show", str(out))
    assert "topology     1 group(s) x 2 chassis x 4 compute nodes" in shown.stdout
    assert "20,000 MB each" in shown.stdout
    as_json = json.loads(invoke("platform", "show", str(out), "--json").stdout)
    assert (as_json["compute_count"], as_json["bb_count"]) == (8, 2)
    inspected = json.loads(invoke("workload", "inspect", str(EIGHT), "--platform", str(out), "--json").stdout)
    assert inspected["platform"]["compute"] == 8
    assert inspected["rules"]["too_large"] == 0  # 64 processors are 8 nodes
    assert inspected["node_size"]["procs_per_node"] == 8


def test_cli_show_names_a_missing_file(tmp_path):
    result = CliRunner().invoke(main, ["platform", "show", str(tmp_path / "nope.toml")])
    assert result.exit_code == 2 and "nope.toml: no such platform file" in result.output
