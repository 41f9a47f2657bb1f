"""`harness run` end to end on the real containerised Slurm ([run] acceptance).

The session fixture ``slice_runs`` (conftest) replays the first jobs of the bundled KTH slice
(``SLICE_JOBS``) on the event clock once per policy, in parallel.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.emulation.run.experiment import Experiment
from harness.emulation.run.specs import ClusterSpec, ReplaySpec, RunOptions, WorkloadSpec
from harness.workload.plan import save_plan

from .conftest import SLICE_JOBS, TEST_CLUSTER


def _run(runs_dir: Path, policy: str, workload: WorkloadSpec, drift: float = 0.0) -> Path:
    opts = RunOptions(workload, ClusterSpec(name=TEST_CLUSTER), ReplaySpec(policy=policy, drift=drift),
                      runs_dir=runs_dir, quiet=True)  # fmt: skip
    return Experiment(opts, progress=print).execute()


NATIVE = ("slurm-backfill-1", "slurm-backfill-no-future-1")


def scheduler_parameters(run_dir: Path) -> list[str]:
    """The SchedulerParameters of the Slurm configuration a run used."""
    conf = (run_dir / "slurm/etc/slurm.conf").read_text()
    return re.search(r"^SchedulerParameters=(.*)$", conf, re.M).group(1).split(",")


def _load(run_dir: Path) -> tuple[dict, dict, pd.DataFrame]:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    metrics = json.loads((run_dir / "metrics.json").read_text())
    return manifest, metrics, pd.read_parquet(run_dir / "results.parquet")


def test_slice_completes_and_every_job_is_accounted_for(slice_runs) -> None:
    assert set(slice_runs) >= set(NATIVE), f"slice runs that failed: {set(NATIVE) - set(slice_runs)}"
    for run_dir in slice_runs.values():
        manifest, metrics, results = _load(run_dir)
        assert manifest["complete"], manifest["incomplete_reason"]
        assert len(results) == SLICE_JOBS
        assert results["job_id"].is_unique
        assert set(results["status"]) <= {"completed", "timeout"}
        assert results["slurm_job_id"].notna().all()
        assert metrics["jobs"] == SLICE_JOBS
        assert metrics["submission"]["submitted"] == SLICE_JOBS


def test_sigsleep_and_slurm_agree_within_a_second(slice_runs) -> None:
    assert slice_runs
    for run_dir in slice_runs.values():
        _, metrics, _ = _load(run_dir)
        check = metrics["cross_check"]
        assert check["compared"] == SLICE_JOBS
        assert check["ok"], check
        assert not check["missing_in_slurm"] and not check["missing_in_log"]


def test_run_directory_layout_and_report_numbers(slice_runs) -> None:
    run_dir = slice_runs["slurm-backfill-1"]
    for name in (
        "manifest.json",
        "metrics.json",
        "results.parquet",
        "results.csv",
        "plan.parquet",
        "raw/submissions.jsonl",
        "raw/jobs.jsonl",
        "slurm/etc/slurm.conf",
        "slurm/jobcomp.log",
        "slurm/sacct.json",  # the default platform has accounting
        "report.md",
        "report.html",
        "plots/gantt.png",
        "plots/utilisation.png",
    ):
        assert (run_dir / name).exists(), name
    params = scheduler_parameters(run_dir)
    assert "bf_job_part_count_reserve=1" in params and "bf_licenses" in params
    manifest, metrics, _ = _load(run_dir)
    assert manifest["slurm_version"].startswith("slurm")
    # the event clock: Slurm at the trace's own pace (1.0), the clock jumping over quiet spans
    assert manifest["input_sha256"] and manifest["speedup"] == pytest.approx(1.0)
    assert manifest["clock"] == "virtual" and manifest["options"]["replay"]["events"] is True
    assert manifest["times"] == "trace"
    # the report's metrics table shows exactly the values of metrics.json
    cells = dict(
        re.findall(r"^\| [^|]+ \| `(\w+)` \| ([^|]+?) \|", (run_dir / "report.md").read_text(), re.M)
    )
    for key in ("mean_wait", "max_wait", "mean_bsld", "makespan", "util_compute"):
        decimals = 4 if key.startswith("util") else 2
        assert cells[key] == f"{metrics[key]:.{decimals}f}", key
    html = (run_dir / "report.html").read_text()
    raw = dict(re.findall(r'data-metric="(\w+)" data-value="([^"]*)"', html))
    assert json.loads(raw["mean_wait"]) == metrics["mean_wait"]
    # metrics are in original time: the slice spans hours of the trace, not minutes
    assert metrics["makespan"] > 3600


def test_compare_shows_both_policies(slice_runs) -> None:
    base, other = slice_runs["slurm-backfill-1"], slice_runs["slurm-backfill-no-future-1"]
    assert "bf_licenses" not in scheduler_parameters(other)
    result = CliRunner().invoke(main, ["compare", str(base), str(other), "--json"])
    assert result.exit_code == 0, result.output
    table = json.loads(result.output)
    text = json.dumps(table)
    assert "slurm-backfill-1" in text and "slurm-backfill-no-future-1" in text
    plain = CliRunner().invoke(main, ["compare", str(base), str(other)])
    assert plain.exit_code == 0 and "mean_wait" in plain.output


def test_drift_experiment_no_accumulation(slurm_cluster, tmp_path: Path) -> None:
    """Barberato Table 4.9: 10 whole-machine jobs of 60 s submitted 60 s apart, shrink 0.9.

    Each job can start only when its predecessor ends, so ideally every job waits 0 s; Slurm
    starts jobs on a one-second tick, and without correction the delays accumulate job after
    job. With the drift correction the waits stay within 1 s of the ideal.
    """
    plan = pd.DataFrame({
        "job_id": range(1, 11), "submit": [60.0 * i for i in range(10)], "runtime": [60.0] * 10,
        "walltime": [120.0] * 10, "nodes": [96] * 10, "bb_per_node_mb": [0] * 10,
    })  # fmt: skip
    trace = tmp_path / "chain.parquet"
    save_plan(plan, {"format": "harness-plan", "version": 1, "shrink": 0.0, "seed": 0}, trace)
    run_dir = _run(tmp_path, "slurm-fcfs", WorkloadSpec(trace=trace, shrink=0.9), drift=1.0)
    manifest, _, results = _load(run_dir)
    assert manifest["complete"], manifest["incomplete_reason"]
    wait = (results["start"] - results["submit"]).to_numpy() / 10.0  # Slurm's seconds at shrink 0.9
    # Slurm starts jobs on a 1 s tick (+ a few ms of launch): that is the floor of "ideal"
    assert wait.max() < 1.1, wait
    # a job that happens to be submitted just before a tick waits ~0 s, the others up to 1 s:
    # accumulation is a trend along the chain (each job inheriting its predecessor's delay)
    trend = np.polyfit(np.arange(len(wait)), wait, 1)[0]
    assert trend < 0.05, f"waits accumulate ({trend:+.3f} s a job): {wait}"
    # every job ran its 6 s, 60 s of the trace (a wake-up may come late by tens of ms on a
    # loaded 2-core host)
    assert (results["runtime"] - 60.0).abs().max() < 2.0


def test_repetitions_with_shuffle_aggregate_metrics(slurm_cluster, tmp_path: Path) -> None:
    plan = pd.DataFrame({
        "job_id": range(1, 7), "submit": [0.0, 0.0, 10.0, 10.0, 20.0, 20.0], "runtime": [15.0] * 6,
        "walltime": [30.0] * 6, "nodes": [60, 30, 60, 30, 60, 30], "bb_per_node_mb": [100] * 6,
    })  # fmt: skip
    trace = tmp_path / "six.parquet"
    save_plan(plan, {"format": "harness-plan", "version": 1, "shrink": 0.0, "seed": 0}, trace)
    result = CliRunner().invoke(main, [
        "run", str(trace), "--shrink", "0.9", "--policy", "slurm-fcfs", "--name", TEST_CLUSTER,
        "-o", str(tmp_path / "runs"), "--repeat", "2", "--shuffle", "-q",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    parent = Path(result.output.strip().splitlines()[-1])
    metrics = json.loads((parent / "metrics.json").read_text())
    reps = [json.loads((parent / f"repetitions/{i:02d}/metrics.json").read_text()) for i in (0, 1)]
    assert metrics["n_repetitions"] == 2
    expected = (reps[0]["mean_wait"] + reps[1]["mean_wait"]) / 2
    assert metrics["repetitions"]["mean_wait"]["AVE"] == pytest.approx(expected)
    assert metrics["mean_wait"] == pytest.approx(expected)
    assert json.loads((parent / "manifest.json").read_text())["complete"]
