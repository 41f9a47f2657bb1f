"""The pure parts of benchmarks/scale_curve.py's submission throughput and table."""

from __future__ import annotations

import pytest

import benchmarks.scale_curve as sc  # fails, never skips, if it cannot import


def test_jobs_per_second_from_the_loops_last_line() -> None:
    assert sc.jobs_per_second("500 12500\n") == (500, 12.5, 40.0)
    assert sc.jobs_per_second("some sbatch noise\n498 8300") == (498, 8.3, 498 / 8.3)


def test_the_loop_sends_numbered_sigsleep_jobs_and_times_itself() -> None:
    script = sc.submit_script(3)
    assert "for i in $(seq 3); do sbatch --parsable -N 1 " in script
    # double quotes: the submitting shell puts each job's own number in (single quotes would
    # hand sigsleep a literal $i, which it refuses)
    assert '--wrap="exec /usr/local/bin/sigsleep --runtime 300 --walltime 300 --job-id $i ' in script
    assert script.startswith("ok=0; t0=$(date +%s%N); ")
    assert script.endswith('echo "$ok $(( (t1 - t0) / 1000000 ))"')


@pytest.mark.parametrize(
    ("row", "key", "spec", "text"),
    [({"lag_p99_s": 0.1814}, "lag_p99_s", ".3f", "0.181"), ({}, "lag_p99_s", ".3f", "-")],
)
def test_a_figure_not_measured_is_a_dash(row: dict, key: str, spec: str, text: str) -> None:
    assert sc.optional(row, key, spec) == text
