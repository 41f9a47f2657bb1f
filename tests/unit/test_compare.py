"""Run comparison (harness.analysis.compare) and the `harness compare` command."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.analysis.compare import aggregate_repetitions, compare_runs, comparison_to_dict, format_table
from harness.analysis.plots import plot_comparison
from harness.cli import main

# t(0.975, 2) from a Student-t table: the C95 factor for 3 repetitions.
T_975_2 = 4.302652729911275

FCFS = {"jobs": 4, "mean_wait": 100.0, "median_wait": 0.0, "max_wait": 1000.0, "mean_bsld": 2.0,
        "makespan": 7200.0, "util_compute": 0.5, "util_bb": 0.0, "cross_check": {"ok": True}}  # fmt: skip
MAXUTIL = {"jobs": 4, "mean_wait": 50.0, "median_wait": 0.0, "max_wait": 2500.0, "mean_bsld": 1.5,
           "makespan": 5400.0, "util_compute": 0.6, "util_bb": 0.25}  # fmt: skip
METRICS = ("mean_wait", "median_wait", "max_wait", "mean_bsld", "makespan", "util_compute", "util_bb")


def make_run(
    root: Path, name: str, policy: str, metrics: dict | None, reps: list[dict] | None = None
) -> Path:
    run_dir = root / name
    run_dir.mkdir(parents=True)
    (run_dir / "manifest.json").write_text(json.dumps({"run_id": name, "policy": policy}))
    if metrics is not None:
        (run_dir / "metrics.json").write_text(json.dumps(metrics))
    for i, rep in enumerate(reps or [], start=1):
        (run_dir / "repetitions" / f"{i:02d}").mkdir(parents=True)
        (run_dir / "repetitions" / f"{i:02d}" / "metrics.json").write_text(json.dumps(rep))
    return run_dir


@pytest.fixture
def two_runs(tmp_path: Path) -> list[Path]:
    return [make_run(tmp_path, "r1", "fcfs", FCFS), make_run(tmp_path, "r2", "maxutil", MAXUTIL)]


def test_ratios_to_the_baseline_by_hand(two_runs: list[Path]) -> None:
    df = compare_runs(two_runs, metrics=METRICS)
    assert list(df.index) == list(METRICS)
    assert df.attrs["baseline"] == "fcfs"
    assert df[("maxutil", "value")].to_dict() == {k: MAXUTIL[k] for k in METRICS}
    ratio = df[("maxutil", "ratio")]
    assert ratio["mean_wait"] == 0.5
    assert ratio["max_wait"] == 2.5
    assert ratio["mean_bsld"] == 0.75
    assert ratio["makespan"] == 0.75
    assert ratio["util_compute"] == pytest.approx(1.2)
    assert ratio["median_wait"] == 1.0  # 0 / 0: both runs equal
    assert math.isnan(ratio["util_bb"])  # 0.25 / 0: no ratio
    assert (df[("fcfs", "ratio")].drop("util_bb") == 1.0).all()
    assert df[("fcfs", "c95")].isna().all()  # single runs have no interval


def test_baseline_by_index_run_id_and_policy(two_runs: list[Path]) -> None:
    for baseline in (1, "1", "r2", "maxutil", -1):
        df = compare_runs(two_runs, baseline=baseline, metrics=["mean_wait"])
        assert df.attrs["baseline"] == "maxutil"
        assert df.at["mean_wait", ("fcfs", "ratio")] == 2.0
    with pytest.raises(ValueError, match="out of range"):
        compare_runs(two_runs, baseline=2)
    with pytest.raises(ValueError, match="no single run"):
        compare_runs(two_runs, baseline="sjf")


def test_same_policy_runs_are_labelled_by_run_id(tmp_path: Path) -> None:
    runs = [make_run(tmp_path, "a", "fcfs", FCFS), make_run(tmp_path, "b", "fcfs", MAXUTIL)]
    df = compare_runs(runs, metrics=["mean_wait"])
    assert [r["label"] for r in df.attrs["runs"]] == ["fcfs/a", "fcfs/b"]
    assert df.at["mean_wait", ("fcfs/b", "ratio")] == 0.5


def test_missing_metric_is_nan_not_an_error(two_runs: list[Path]) -> None:
    df = compare_runs(two_runs, metrics=["mean_wait", "no_such_metric"])
    assert math.isnan(df.at["no_such_metric", ("fcfs", "value")])
    assert math.isnan(df.at["no_such_metric", ("maxutil", "ratio")])


def test_run_without_metrics_is_rejected(tmp_path: Path) -> None:
    runs = [make_run(tmp_path, "a", "fcfs", FCFS), make_run(tmp_path, "b", "sjf", None)]
    with pytest.raises(ValueError, match=r"no metrics\.json"):
        compare_runs(runs)


def test_aggregate_repetitions_by_hand() -> None:
    reps = [
        {"mean_wait": 1.0, "jobs": 4, "complete": True, "mean_wait_ci95": [0, 1], "only_here": 1.0},
        {"mean_wait": 2.0, "jobs": 4, "complete": True, "mean_wait_ci95": [0, 2]},
        {"mean_wait": 3.0, "jobs": 4, "complete": False, "mean_wait_ci95": [0, 3]},
    ]
    agg = aggregate_repetitions(reps)
    # Flags, intervals and metrics absent from some repetitions are not aggregated.
    assert set(agg) == {"mean_wait", "jobs"}
    ssd = math.sqrt(2 / 3)  # divisor n: ((1-2)^2 + 0 + (3-2)^2) / 3
    assert agg["mean_wait"]["AVE"] == pytest.approx(2.0)
    assert agg["mean_wait"]["SSD"] == pytest.approx(ssd)
    assert agg["mean_wait"]["RSD"] == pytest.approx(100 * ssd / 2)
    assert agg["mean_wait"]["C95"] == pytest.approx(T_975_2 * ssd / math.sqrt(3))
    assert agg["jobs"] == {"AVE": 4.0, "SSD": 0.0, "RSD": 0.0, "C95": 0.0}
    assert aggregate_repetitions([]) == {}


def test_repetitions_from_subdirectories_give_ave_and_c95(tmp_path: Path) -> None:
    reps = [dict(FCFS, mean_wait=w) for w in (90.0, 100.0, 110.0)]
    runs = [make_run(tmp_path, "rep", "fcfs", None, reps), make_run(tmp_path, "r2", "maxutil", MAXUTIL)]
    df = compare_runs(runs, metrics=["mean_wait", "makespan"])
    c95 = T_975_2 * math.sqrt(200 / 3) / math.sqrt(3)
    assert df.at["mean_wait", ("fcfs", "value")] == pytest.approx(100.0)
    assert df.at["mean_wait", ("fcfs", "c95")] == pytest.approx(c95)
    assert df.at["makespan", ("fcfs", "c95")] == 0.0
    assert df.attrs["runs"][0]["repetitions"] == 3
    table = format_table(df)
    assert f"100.00 ± {c95:.2f} s" in table
    assert "fcfs: n=3" in table


def test_stored_repetition_statistics_take_precedence(tmp_path: Path) -> None:
    stored = dict(FCFS, repetitions={"mean_wait": {"AVE": 120.0, "SSD": 5.0, "RSD": 4.2, "C95": 7.5}})
    runs = [make_run(tmp_path, "r1", "fcfs", stored), make_run(tmp_path, "r2", "maxutil", MAXUTIL)]
    df = compare_runs(runs, metrics=["mean_wait", "max_wait"])
    assert df.at["mean_wait", ("fcfs", "value")] == 120.0
    assert df.at["mean_wait", ("fcfs", "c95")] == 7.5
    assert df.at["mean_wait", ("maxutil", "ratio")] == pytest.approx(50 / 120)
    assert df.at["max_wait", ("fcfs", "value")] == 1000.0  # no statistics: the plain figure


def test_format_table_marks_baseline_and_ratios(two_runs: list[Path]) -> None:
    table = format_table(compare_runs(two_runs, metrics=METRICS))
    header, _, *rows = table.splitlines()
    assert "fcfs (baseline)" in header and "maxutil" in header
    row = {line.split()[0]: line for line in rows if line.strip()}
    assert "100.00 s" in row["mean_wait"] and "50.00 s (x0.50)" in row["mean_wait"]
    assert "50.00 %" in row["util_compute"] and "(x1.20)" in row["util_compute"]
    assert "(n/a)" in row["util_bb"]
    assert row["util_bb"].rstrip().endswith("higher") and row["mean_wait"].rstrip().endswith("lower")


def test_plot_comparison_writes_a_png(two_runs: list[Path], tmp_path: Path) -> None:
    out = plot_comparison(compare_runs(two_runs, metrics=METRICS), tmp_path / "cmp.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_comparison_to_dict_is_json_with_nulls(two_runs: list[Path]) -> None:
    data = json.loads(json.dumps(comparison_to_dict(compare_runs(two_runs, metrics=METRICS))))
    maxutil = data["runs"][1]
    assert maxutil["label"] == "maxutil" and maxutil["run_id"] == "r2"
    assert maxutil["metrics"]["mean_wait"] == {"value": 50.0, "c95": None, "ratio": 0.5}
    assert maxutil["metrics"]["util_bb"]["ratio"] is None


def test_cli_table_json_and_plot(two_runs: list[Path], tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["compare", *map(str, two_runs)]
    res = runner.invoke(main, args)
    assert res.exit_code == 0, res.output
    assert "fcfs (baseline)" in res.output and "(x0.50)" in res.output

    plot = tmp_path / "out.png"
    res = runner.invoke(main, [*args, "--baseline", "r2", "--json", "-m", "mean_wait", "-o", str(plot)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["baseline"] == "maxutil" and data["metrics"] == ["mean_wait"]
    assert data["runs"][0]["metrics"]["mean_wait"]["ratio"] == 2.0
    assert plot.exists()

    res = runner.invoke(main, [*args, "--baseline", "nope"])
    assert res.exit_code != 0 and "no single run" in res.output
