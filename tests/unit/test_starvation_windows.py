"""The starvation finder's ranking (benchmarks/starvation_windows.py) on hand-made tables."""

from __future__ import annotations

import math

import pytest

import benchmarks.starvation_windows as sw  # fails, never skips, if it cannot import


def result(
    label: str, jobs: int, starving: tuple[float, float], reference: tuple[float, float]
) -> sw.WindowResult:
    return sw.WindowResult(label, f"--period {label}", jobs, *starving, *reference)


def test_ratios_and_score_by_hand() -> None:
    r = result("1/4", 100, (800.0, 9000.0), (200.0, 1000.0))
    assert r.mean_ratio == 4.0  # 800 / 200
    assert r.max_ratio == 9.0  # 9000 / 1000
    assert r.score == 6.0  # sqrt(4 x 9)


def test_a_zero_reference() -> None:
    assert sw.ratio(0.0, 0.0) == 1.0
    assert sw.ratio(5.0, 0.0) == math.inf
    assert sw.ratio(3.0, 4.0) == 0.75


def test_rank_strongest_first_and_the_live_choice() -> None:
    table = [
        result("1/4", 1000, (100.0, 1000.0), (100.0, 1000.0)),  # score 1
        result("2/4", 3000, (800.0, 9000.0), (200.0, 1000.0)),  # score 6, too long to replay live
        result("3/4", 500, (300.0, 4000.0), (100.0, 1000.0)),  # sqrt(3 x 4) = 3.46
        result("4/4", 600, (400.0, 3000.0), (100.0, 1000.0)),  # sqrt(4 x 3) = 3.46: tie, max ratio 3 < 4
    ]
    assert [r.label for r in sw.rank(table)] == ["2/4", "3/4", "4/4", "1/4"]
    assert sw.strongest_live(table, max_jobs=1800).label == "3/4"
    assert sw.strongest_live(table, max_jobs=400) is None


def test_windows_cover_the_span() -> None:
    assert list(sw.windows_in(10.0, 4.0, 3.0)) == [(0.0, 4.0), (3.0, 7.0), (6.0, 10.0)]
    assert list(sw.windows_in(2.0, 4.0, 1.0)) == [(0.0, 4.0)]


def test_the_table_lists_ranks_and_ratios() -> None:
    lines = sw.table([result("1/2", 10, (100.0, 200.0), (100.0, 100.0)),
                      result("2/2", 20, (400.0, 800.0), (100.0, 200.0))]).splitlines()  # fmt: skip
    assert lines[2].startswith("| 1 | 2/2 | 20 | 400 / 800 | 100 / 200 | 4.00 | 4.00 | 4.00 |")
    assert lines[3] == "| 2 | 1/2 | 10 | 100 / 200 | 100 / 100 | 1.00 | 2.00 | 1.41 |"


def test_the_live_command_names_both_policies() -> None:
    cmd = sw.live_command(result("5/16", 10, (1.0, 1.0), (1.0, 1.0)), "kth.swf.gz")
    assert cmd.startswith("harness run -p slurm-backfill-no-future-1 --period 5/16 --clock events kth.swf.gz")
    assert "slurm-backfill-1" in cmd
    shrunk = sw.live_command(result("5/16", 10, (1.0, 1.0), (1.0, 1.0)), "kth.swf.gz", shrink=0.99)
    assert " --period 5/16 --shrink 0.99 kth.swf.gz" in shrunk


@pytest.mark.parametrize("policy", [sw.STARVING, sw.REFERENCE])
def test_the_twins_are_the_ones_compare_sim_uses(policy: str) -> None:
    from harness.emulation.collect.fidelity import simulator_twin

    assert simulator_twin(policy) == policy.removeprefix("slurm-")
