"""Policy names, the registry, and the ``harness simulate`` / ``harness policies`` commands."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.policies.backfill import Backfill
from harness.policies.fcfs import Fcfs, Filler
from harness.policies.maxutil import MaxUtil
from harness.policies.plan import PlanPolicy
from harness.policies.registry import (
    FAMILIES,
    THESIS_POLICIES,
    UnknownPolicyError,
    get_policy,
    parse_policy_list,
)
from harness.policies.window import WindowPolicy
from harness.slurm.native import NATIVE_POLICY_HELP


def test_names_map_to_configured_policies() -> None:
    assert isinstance(get_policy("fcfs"), Fcfs) and isinstance(get_policy("filler"), Filler)
    b = get_policy("backfill-sjf-3")
    assert isinstance(b, Backfill) and (b.depth, b.sjf, b.future_bb) == (3, True, True)
    nf = get_policy("backfill-no-future-2")
    assert isinstance(nf, Backfill) and (nf.depth, nf.sjf, nf.future_bb) == (2, False, False)
    plain = get_policy("backfill-1")
    assert isinstance(plain, Backfill) and (plain.depth, plain.sjf, plain.future_bb) == (1, False, True)
    m = get_policy("maxutil-0.5-1")
    assert isinstance(m, MaxUtil) and (m.beta, m.depth, m.max_steps, m.exhaustive_max) == (0.5, 1, 5000, 6)
    w = get_policy("window-10-1")
    assert isinstance(w, WindowPolicy) and (w.window, w.depth, w.max_age) == (10, 1, 50)
    p = get_policy("plan-square-0", seed=4)
    assert isinstance(p, PlanPolicy) and (p.alpha, p.depth, p.config.seed) == (2.0, 0, 4)
    cfg = p.config
    assert (cfg.cooling_rate, cfg.cooling_steps, cfg.steps_per_temperature, cfg.exhaustive_max) == (
        0.9,
        30,
        6,
        5,
    )
    assert get_policy("plan-start-1").alpha is None and get_policy("plan-cube-2").alpha == 3.0
    assert get_policy(" Backfill-1 ").name == "backfill-1"


@pytest.mark.parametrize("name", ["backfill", "plan-quad-0", "window-10", "maxutil-x-1", "sjf-1", ""])
def test_unknown_names_are_rejected(name: str) -> None:
    with pytest.raises(UnknownPolicyError):
        get_policy(name)


def test_policy_lists() -> None:
    assert parse_policy_list("fcfs, backfill-1,plan-sum-0") == ["fcfs", "backfill-1", "plan-sum-0"]
    with pytest.raises(UnknownPolicyError):
        parse_policy_list("fcfs,nope")
    for name in THESIS_POLICIES:
        assert get_policy(name).name == name


def test_policies_command_lists_every_family() -> None:
    out = CliRunner().invoke(main, ["policies"])
    assert out.exit_code == 0
    lines = out.output.strip().splitlines()
    assert len(lines) == len(FAMILIES) + len(NATIVE_POLICY_HELP)
    for family, line in zip(FAMILIES, lines, strict=False):
        assert line.startswith(family.usage) and family.description in line
    native = lines[len(FAMILIES) :]
    assert [line.split()[0] for line in native] == list(NATIVE_POLICY_HELP)
    thesis = CliRunner().invoke(main, ["policies", "--thesis"])
    assert thesis.output.split() == list(THESIS_POLICIES)


def test_simulate_command_json(tmp_path) -> None:
    out = CliRunner().invoke(
        main, ["simulate", "bundled", "-p", "fcfs,backfill-1", "--json", "-o", str(tmp_path / "jobs.csv")]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert list(data) == ["fcfs", "backfill-1"]
    keys = {"jobs", "mean_wait", "median_wait", "max_wait", "mean_turnaround", "mean_slowdown", "mean_bsld",
            "makespan", "util_compute", "util_bb"}  # fmt: skip
    for summary in data.values():
        assert keys <= set(summary)
        assert summary["jobs"] == 200
    # backfilling never waits longer on average than FCFS on the same workload
    assert data["backfill-1"]["mean_wait"] <= data["fcfs"]["mean_wait"]
    assert (tmp_path / "jobs.fcfs.csv").exists() and (tmp_path / "jobs.backfill-1.csv").exists()


def test_simulate_command_text_and_errors() -> None:
    out = CliRunner().invoke(main, ["simulate", "bundled", "-p", "filler", "--first-n", "50"])
    assert out.exit_code == 0, out.output
    header, row = out.stdout.strip().splitlines()
    assert header.split()[:3] == ["policy", "jobs", "mean"] and row.split()[:2] == ["filler", "50"]
    bad = CliRunner().invoke(main, ["simulate", "bundled", "-p", "nope"])
    assert bad.exit_code != 0 and "unknown policy" in bad.output
