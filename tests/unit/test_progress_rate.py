"""benchmarks/progress_rate.py: the rate and the projection, from progress lines written here."""

from __future__ import annotations

from pathlib import Path

import pytest

import benchmarks.progress_rate as progress_rate  # fails, never skips, if it cannot import

LOG = """run 1: 28453 jobs, shrink 0, policy slurm-backfill-1
[0:00:00] submitted 0/1000  pending 0  running 0  finished 0  lag p50 0 ms p99 0 ms  ETA 9:05:20
[0:30:00] submitted 210/1000  pending 1  running 4  finished 200  lag p50 0 ms p99 0 ms  ETA 1:00:00
not a progress line: finished 999
[1:00:00] submitted 330/1000  pending 3  running 7  finished 300  lag p50 0 ms p99 0 ms  ETA 1:00:00
[1:00:30] submitted 330/1000  pending 3  running 7  finished 300  lag p50 0 ms p99 0 ms  ETA 1:00:00
"""


def test_rate_per_interval_and_projection_by_hand(tmp_path: Path) -> None:
    # 0-1800 s: 200 jobs, 9,000 s per 1,000; 1800-3600 s: 100 jobs, 18,000 s per 1,000.
    # Whole: 300 jobs in 3,630 s, 12,100 s per 1,000; 1,000 jobs: 12,100 s = 3 h 21.67 min -> 3 h 22 min.
    points = progress_rate.read_points(LOG)
    assert [p.finished for p in points] == [0, 200, 300, 300]
    assert points[-1].wall_s == 3630 and points[-1].total == 1000
    lines = progress_rate.report(points, [0, 1800, 3600], None)
    assert "200 finished, 9,000 s per 1,000 jobs" in lines[0]
    assert "100 finished, 18,000 s per 1,000 jobs" in lines[1]
    assert lines[2] == "all: 300 finished in 3,630 s, 12,100 s per 1,000 jobs"
    assert lines[3] == "projected for 1,000 jobs: 3 h 22 min"
    assert progress_rate.report(points, [], 2000)[-1] == "projected for 2,000 jobs: 6 h 43 min"


def test_an_interval_without_a_finished_job_and_too_little_to_measure() -> None:
    points = progress_rate.read_points(LOG)
    assert progress_rate.report(points, [3600, 3630], None)[0].endswith("no job finished")
    with pytest.raises(SystemExit, match="fewer than two"):
        progress_rate.report(points[:1], [], None)
    with pytest.raises(SystemExit, match="--jobs 0"):
        progress_rate.main([str(Path(__file__)), "--jobs", "0"])
