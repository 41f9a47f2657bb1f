"""Run reports (harness.analysis.report) on small hand-made run directories."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.analysis import metrics as hm
from harness.analysis.report import write_report
from harness.analysis.rundata import RunData, in_trace_time, load_run
from harness.analysis.series import gantt_layout, node_rows, queue_series, step_series, usage_series
from harness.model.columns import RESULT_TIME_COLUMNS
from harness.model.timescale import TimeScale
from harness.platform import Platform, load_platform

# 4 compute nodes, 1 BB node of 40 000 MB.
PLATFORM: Platform = dataclasses.replace(
    load_platform(), groups=1, chassis_per_group=1, compute_per_chassis=4
)
SHRINK = 0.5  # time_scale 2: every shrunk time below doubles in the report

# Shrunk seconds since t0. Job 4 was never started (missing) and must only be counted.
JOBS = [
    # job_id, submit, start, end, nodes, bb_per_node_mb, status, nodelist
    (1, 0.0, 0.0, 100.0, 2, 1000, "completed", "c[001-002]"),
    (2, 0.0, 0.0, 50.0, 2, 0, "completed", "c[003-004]"),
    (3, 10.0, 50.0, 150.0, 2, 2000, "timeout", "c[003-004]"),
    (4, 20.0, np.nan, np.nan, 1, 0, "missing", ""),
]
# By hand, in original time (x2): waits 0, 0, 80 s; makespan 300 s;
# node-seconds 2*200 + 2*100 + 2*200 = 1000 over 4 * 300; BB MB-s 2*1000*200 + 2*2000*200 over 40000 * 300.
HAND = {
    "jobs": 3,
    "mean_wait": 80 / 3,
    "median_wait": 0.0,
    "max_wait": 80.0,
    "makespan": 300.0,
    "util_compute": 1000 / 1200,
    "util_bb": 1_200_000 / 12_000_000,
    "timeouts": 1,
}


def results_frame(nodelists: bool = True) -> pd.DataFrame:
    rows = []
    for job_id, submit, start, end, nodes, bb, status, nodelist in JOBS:
        rows.append(
            {
                "job_id": job_id, "submit": submit, "start": start, "end": end, "runtime": end - start,
                "walltime": 100.0, "nodes": nodes, "bb_per_node_mb": bb, "bb_nodes": "", "status": status,
                "slurm_job_id": 100 + job_id, "nodelist": nodelist if nodelists else "",
                "submit_intended": submit, "lag": 0.01, "suspended": 0.0,
            }
        )  # fmt: skip
    return pd.DataFrame(rows)


def make_run(
    root: Path, *, complete: bool = True, extra_metrics: dict | None = None, nodelists: bool = True
) -> Path:
    run_dir = root / "run-1"
    run_dir.mkdir()
    results = results_frame(nodelists)
    results.to_parquet(run_dir / "results.parquet", index=False)
    ran = results[results["start"].notna()]
    in_trace = TimeScale(SHRINK).trace_table(ran, RESULT_TIME_COLUMNS)
    metrics = hm.summary(in_trace, PLATFORM) | (extra_metrics or {})
    (run_dir / "metrics.json").write_text(json.dumps(metrics))
    manifest = {
        "run_id": "run-1", "policy": "fcfs", "shrink": SHRINK, "time_scale": TimeScale(SHRINK).speedup,
        "complete": complete, "trace": "tiny.swf", "platform": PLATFORM.as_dict(),
        "started_at": "2025-01-01T00:00:00+00:00", "slurm_version": "slurm 24.11.0",
        "harness_version": "0.1.0", "seed": 7, "options": {"timeout": None},
    }  # fmt: skip
    if not complete:
        manifest["incomplete_reason"] = "1 job(s) have no record"
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    return run_dir


def md_metric_cells(md: str) -> dict[str, str]:
    """``key -> value cell`` of the report.md metrics table."""
    cells = {}
    for line in md.splitlines():
        m = re.match(r"\| [^|]+ \| `(\w+)` \| ([^|]+) \|", line)
        if m:
            cells[m.group(1)] = m.group(2).strip()
    return cells


def test_hand_metrics_match_the_summary() -> None:
    """Guards the fixture itself: the hand figures are the metrics module's."""
    got = hm.summary(TimeScale(SHRINK).trace_table(results_frame().iloc[:3], RESULT_TIME_COLUMNS), PLATFORM)
    for key, value in HAND.items():
        assert got[key] == pytest.approx(value), key


def test_write_report_creates_every_file(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path)
    paths = write_report(run_dir)
    names = {p.relative_to(run_dir).as_posix() for p in paths}
    assert names == {"plots/gantt.png", "plots/bb-gantt.png", "plots/utilisation.png", "plots/queue.png",
                     "plots/waits.png", "plots/tails.png",
                     "report.md", "report.html"}  # fmt: skip
    for p in paths:
        assert p.stat().st_size > 0
        if p.suffix == ".png":
            assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_numbers_are_those_of_metrics_json(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path)
    write_report(run_dir)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    md = (run_dir / "report.md").read_text()
    cells = md_metric_cells(md)
    numeric = {k: v for k, v in metrics.items() if isinstance(v, int | float)}
    assert set(cells) == set(numeric)
    for key, value in numeric.items():
        decimals = 4 if key.startswith("util") else 0 if isinstance(value, int) else 2
        assert cells[key] == f"{value:.{decimals}f}", key
    for key, value in HAND.items():
        assert float(cells[key]) == pytest.approx(value, abs=0.005), key
    # The HTML carries the raw JSON value of each metric: exact equality, no rounding.
    page = (run_dir / "report.html").read_text()
    raw = dict(re.findall(r'data-metric="(\w+)" data-value="([^"]*)"', page))
    assert {k: json.loads(v) for k, v in raw.items()} == numeric


def test_header_counts_missing_jobs_and_shows_the_run(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path)
    write_report(run_dir)
    md = (run_dir / "report.md").read_text()
    assert "4 jobs in the plan, 3 ran; 1 never started (left out" in md
    assert "| missing | 1 |" in md and "| completed | 2 |" in md and "| timeout | 1 |" in md
    assert "| Policy | fcfs |" in md and "| Trace | tiny.swf |" in md
    assert "2.00x" in md  # speed-up
    assert "Complete run" in md and "INCOMPLETE" not in md


def test_incomplete_run_gets_a_banner_with_the_reason(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, complete=False)
    write_report(run_dir)
    for name in ("report.md", "report.html"):
        text = (run_dir / name).read_text()
        assert "INCOMPLETE run: 1 job(s) have no record" in text


def test_optional_sections_appear_only_when_present(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    plain = make_run(tmp_path / "a")
    write_report(plain)
    md = (plain / "report.md").read_text()
    assert "Cross-check" not in md and "Submission lag" not in md and "Repetitions" not in md

    extra = {
        "cross_check": {"ok": False, "compared": 3, "missing_in_slurm": [4], "missing_in_log": [],
                        "disagreements": [{"job_id": 3, "slurm_job_id": 103, "start_diff_s": 2.5,
                                           "end_diff_s": 0.1}],
                        "n_disagreements": 1, "max_start_diff_s": 2.5, "tolerance_s": 1.0},
        "submission": {"submitted": 3, "rejected": 0, "lag_p50_s": 0.0123, "lag_p99_s": 0.0456},
        "repetitions": {"mean_wait": {"AVE": 26.6667, "SSD": 1.5, "RSD": 5.625, "C95": 3.2}},
    }  # fmt: skip
    (tmp_path / "b").mkdir()
    run_dir = make_run(tmp_path / "b", extra_metrics=extra)
    write_report(run_dir)
    md = (run_dir / "report.md").read_text()
    assert "## Cross-check: Slurm vs sigsleep" in md
    assert "disagree: 1 job(s)" in md
    assert "| missing_in_slurm | 1 (4) |" in md
    assert "| 3 | 103 | 2.5 | 0.1 |" in md
    assert "| lag_p50_s | 0.012 s |" in md and "| lag_p99_s | 0.046 s |" in md
    assert "| Mean wait | `mean_wait` | 26.67 | 1.50 | 5.62 | 3.20 |" in md
    assert "Schedules:" not in md and "Host load" not in md


def test_repeated_schedules_and_the_host_load_are_reported(tmp_path: Path) -> None:
    extra = {
        "repetitions": {"mean_wait": {"AVE": 26.6667, "SSD": 1.5, "RSD": 5.625, "C95": 3.2}},
        "schedule_agreement": {"repetitions": 5, "identical_start_order": 3, "kendall_tau_min": 0.9712,
                               "jobs_same_start_min": 181, "jobs_started_first": 200, "pairs": []},
        "host_load": {"start_1min": 1.2, "end_1min": 0.8, "mean_1min": 1.5, "max_1min": 2.25,
                      "samples": 40, "cpus": 2},
    }  # fmt: skip
    run_dir = make_run(tmp_path, extra_metrics=extra)
    write_report(run_dir)
    md = (run_dir / "report.md").read_text()
    assert (
        "Schedules: 3 of 5 repetitions started the jobs in the first one's order; Kendall tau against it "
        "at least 0.971; at least 181 of 200 jobs started in the same second." in md
    )
    assert "## Host load" in md and "| max_1min | 2.250 |" in md and "| cpus | 2 |" in md


def test_cross_check_with_staging_shows_its_figures_and_disagreements(tmp_path: Path) -> None:
    staging = {
        "compared_in": 1,
        "compared_out": 1,
        "max_stage_in_to_start_s": 0.09015,
        "disagreements": [{"job_id": 7, "stage": "out", "begin": 1795472280.469, "slurm_end": 1795472282.0}],
        "slurm_bb_states": {"complete": 1},
        "ok": False,
    }
    extra = {"cross_check": {"ok": False, "source": "sacct", "compared": 1, "disagreements": [],
                             "staging": staging}}  # fmt: skip
    run_dir = make_run(tmp_path, extra_metrics=extra)
    write_report(run_dir)
    md = (run_dir / "report.md").read_text()
    assert "| staging: compared_in | 1 |" in md and "| staging: max_stage_in_to_start_s | 0.090 |" in md
    assert '| staging: slurm_bb_states | {"complete": 1} |' in md
    assert "First 1 staging disagreements:" in md and "| 7 | out | 1795472280.469 | 1795472282.0 |" in md


def test_html_is_self_contained(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path)
    write_report(run_dir)
    page = (run_dir / "report.html").read_text()
    refs = re.findall(r'(?:src|href)="([^"]*)"', page)
    names = ("gantt", "bb-gantt", "utilisation", "queue", "waits", "tails")
    assert sorted(refs) == sorted(f"plots/{n}.png" for n in names)
    assert all((run_dir / r).exists() for r in refs)
    assert "<link" not in page and "<script" not in page


def test_report_without_results_or_jobs_still_renders(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path)
    (run_dir / "results.parquet").unlink()
    (run_dir / "metrics.json").write_text("{}")
    paths = write_report(run_dir)
    assert [p.name for p in paths] == ["report.md", "report.html"]
    md = (run_dir / "report.md").read_text()
    assert "results.parquet is missing" in md and "No metrics" in md


# -- the plots' data ---------------------------------------------------------------------------


def test_gantt_uses_the_nodelist() -> None:
    run_jobs = load_jobs(nodelists=True)
    layout = gantt_layout(run_jobs, 4)
    nodes = layout.groupby("job_id")["node"].apply(sorted).to_dict()
    assert nodes == {1: [0, 1], 2: [2, 3], 3: [2, 3]}
    assert len(layout) == 6  # one rectangle per job per node
    job3 = layout[layout["job_id"] == 3].iloc[0]
    assert (job3["start"], job3["end"], job3["status"]) == (100.0, 300.0, "timeout")


def test_gantt_packs_jobs_without_nodelist_in_start_order() -> None:
    jobs = load_jobs(nodelists=False)
    nodes = gantt_layout(jobs, 4).groupby("job_id")["node"].apply(sorted).to_dict()
    # Job 3 starts exactly when job 2 ends: it may reuse job 2's nodes.
    assert nodes == {1: [0, 1], 2: [2, 3], 3: [2, 3]}


def test_gantt_packing_avoids_nodes_held_by_listed_jobs() -> None:
    jobs = pd.DataFrame(
        {
            "job_id": [1, 2], "start": [0.0, 10.0], "end": [100.0, 20.0], "nodes": [2, 2],
            "status": ["completed"] * 2, "nodelist": ["c[001,003]", ""], "bb_nodes": ["", ""],
        }
    )  # fmt: skip
    nodes = gantt_layout(jobs, 4).groupby("job_id")["node"].apply(sorted).to_dict()
    assert nodes == {1: [0, 2], 2: [1, 3]}


def test_gantt_reads_simulator_bb_map() -> None:
    jobs = pd.DataFrame(
        {"job_id": [1], "start": [0.0], "end": [1.0], "nodes": [2], "status": ["completed"],
         "bb_nodes": ["c004:bb01,c002:bb01"]}
    )  # fmt: skip
    assert sorted(gantt_layout(jobs, 4)["node"]) == [1, 3]


def test_node_rows_put_foreign_names_after_the_machine() -> None:
    rows = node_rows(["c002", "c001", "bb01", "c010"], compute_count=4)
    assert rows == {"c001": 0, "c002": 1, "bb01": 4, "c010": 5}


def test_step_series_counts_release_before_reuse() -> None:
    t, level = step_series(np.array([0.0, 5.0]), np.array([5.0, 8.0]), np.array([2.0, 3.0]))
    assert t.tolist() == [0.0, 5.0, 8.0]
    assert level.tolist() == [2.0, 3.0, 0.0]


def test_usage_and_queue_series_by_hand() -> None:
    jobs = load_jobs(nodelists=True)
    usage = usage_series(jobs, PLATFORM.as_dict())
    t, frac = usage["compute"]
    # Original time: jobs 1, 2 on 4 nodes from 0; job 2 ends and job 3 starts at 100; job 1 ends at 200.
    assert t.tolist() == [0.0, 100.0, 200.0, 300.0]
    assert frac.tolist() == [1.0, 1.0, 0.5, 0.0]
    t, bb = usage["bb"]
    assert bb.tolist() == pytest.approx([2000 / 40000, 6000 / 40000, 4000 / 40000, 0.0])
    queue = queue_series(jobs)
    t, pending = queue["jobs"]
    assert t.tolist() == [0.0, 20.0, 100.0]
    assert pending.tolist() == [0.0, 1.0, 0.0]
    assert queue["nodes"][1].tolist() == [0.0, 2.0, 0.0]


def load_jobs(nodelists: bool) -> pd.DataFrame:
    """The jobs that ran, in original time, as the plots see them."""
    results = in_trace_time(results_frame(nodelists), {"shrink": SHRINK})
    return RunData(Path("."), {"shrink": SHRINK}, {}, results).jobs()


def test_load_run_reads_time_scale_from_shrink_when_absent(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    del manifest["time_scale"]
    manifest["shrink"] = 0.75
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    stored = results_frame(True)
    loaded = load_run(run_dir).results
    assert loaded is not None
    assert loaded["start"].dropna().tolist() == (4.0 * stored["start"].dropna()).tolist()
    assert loaded["nodes"].tolist() == stored["nodes"].tolist()  # not a time


def test_results_in_trace_time_are_read_as_stored(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["times"] = "trace"
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    loaded = load_run(run_dir).results
    assert loaded is not None
    assert loaded["end"].dropna().tolist() == results_frame(True)["end"].dropna().tolist()


def test_agent_and_fidelity_sections(tmp_path: Path) -> None:
    extra = {
        "agent": {"decisions": 12, "errors": 0, "started": 4, "latency_p99_s": 0.0125},
        "fidelity": {"simulator_policy": "backfill-1", "start_order": {"jobs": 4, "kendall_tau": 0.9},
                     "mean_abs_start_shift_s": 12.5,
                     "metrics": {"mean_wait": {"emulated": 110.0, "simulated": 100.0, "rel_diff": 0.1}}},
    }  # fmt: skip
    run_dir = make_run(tmp_path, extra_metrics=extra)
    write_report(run_dir)
    md = (run_dir / "report.md").read_text()
    assert "## Ordering agent" in md and "| latency_p99_s | 0.013 |" in md
    assert "## Fidelity: emulation vs simulation" in md
    assert "Kendall's tau over 4 jobs): 0.900" in md
    assert "| mean_wait | 110.000 | 100.000 | 0.100 |" in md


def test_faults_section_shows_the_events_and_every_affected_job(tmp_path: Path) -> None:
    faults = {
        "events": [{"at": 12.5, "event": "nodes down", "nodes": ["c001", "c002"]},
                   {"at": 30.0, "event": "slurmctld unreachable"}],
        "outcomes": {"completed": 2, "failed-by-fault": 1}, "submission_retries": 3, "retried_jobs": 2,
        "resumes": 1, "adopted_at_resume": 0, "n_affected": 1,
        "affected_jobs": [{"job_id": 7, "slurm_job_id": 107, "outcome": "failed-by-fault",
                           "what": "Slurm: NODE_FAIL"}],
    }  # fmt: skip
    run_dir = make_run(tmp_path, extra_metrics={"faults": faults})
    write_report(run_dir)
    md = (run_dir / "report.md").read_text()
    assert "## Faults" in md
    assert "2 completed, 1 failed-by-fault" in md
    assert "retries while slurmctld did not answer: 3 (over 2" in md
    assert "| 12.5 |  | nodes down | c001,c002 |" in md and "| 30.0 |  | slurmctld unreachable |  |" in md
    assert "| 7 | 107 | failed-by-fault | Slurm: NODE_FAIL |" in md
    assert "| faults |" not in md  # a section, not a row of the metrics table
