"""The shrink-limit finder: the limit logic on synthetic curves, and the command on the twin."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.experiments.shrink_limit import ShrinkPoint, check_shrinks, find_limit, relative, sweep
from harness.experiments.shrink_report import text_table, write_limit
from harness.model.timescale import TimeScale

FLAT = {"mean_bsld": [2.0, 2.0], "util_compute": [0.5, 0.5], "makespan": [1000.0, 1000.0]}


def point(shrink: float, waits: list[float], wall: float = 1.0) -> ShrinkPoint:
    return ShrinkPoint(shrink, {"mean_wait": waits, **FLAT}, wall)


CURVE = [
    point(0.99, [106.0, 106.0]),  # +6 %: beyond 5 %
    point(0.5, [100.0, 100.0]),  # the reference (lowest shrink), given out of order
    point(0.9, [103.0, 105.0]),  # mean 104: +4 %
    point(0.995, [100.0, 100.0]),  # back within, but after a break: not the limit
]


def test_limit_is_the_last_shrink_before_the_first_break() -> None:
    result = find_limit(CURVE, 0.05)
    assert result.reference == 0.5 and result.limit == 0.9
    waits = result.table[result.table["metric"] == "mean_wait"].set_index("shrink")
    assert waits["mean"].to_dict() == {0.5: 100.0, 0.9: 104.0, 0.99: 106.0, 0.995: 100.0}
    assert waits["rel_diff"].round(12).to_dict() == {0.5: 0.0, 0.9: 0.04, 0.99: 0.06, 0.995: 0.0}
    assert waits["holds"].to_dict() == {0.5: True, 0.9: True, 0.99: False, 0.995: True}
    # C95 of (103, 105): t(0.975, 1) * SSD (divisor n: 1.0) / sqrt(2) = 12.7062 / 1.41421
    assert waits.loc[0.9, "c95"] == pytest.approx(12.706204736 / math.sqrt(2), rel=1e-9)
    assert waits.loc[0.9, "speedup"] == pytest.approx(10.0)


def test_tolerance_moves_the_limit() -> None:
    assert find_limit(CURVE, 0.06).limit == 0.995  # +6 % now holds
    assert find_limit(CURVE, 0.03).limit == 0.5  # +4 % breaks: only the reference
    assert find_limit(CURVE[1:3], 0.05, metrics=("mean_wait",)).limit == 0.9


def test_any_metric_breaks_a_shrink() -> None:
    bad = ShrinkPoint(0.9, {"mean_wait": [100.0], **FLAT, "makespan": [940.0]}, 1.0)  # -6 %
    assert find_limit([point(0.5, [100.0]), bad], 0.05).limit == 0.5


def test_relative_gap_of_a_zero_reference() -> None:
    assert relative(0.0, 0.0) == 0.0 and relative(1.0, 0.0) == math.inf
    assert relative(-3.0, -2.0) == -0.5


def test_bad_shrinks_and_metrics_are_refused() -> None:
    with pytest.raises(ValueError, match=r"in \[0, 1\)"):
        check_shrinks([0.5, 1.0])
    with pytest.raises(ValueError, match="at least two"):
        check_shrinks([0.9, 0.9])
    with pytest.raises(ValueError, match="not headline metrics"):
        find_limit(CURVE, 0.05, metrics=("mean_wat",))


def test_sweep_runs_every_shrink_in_order() -> None:
    seen: list[tuple[float, int]] = []

    def runner(scale: TimeScale, repeat: int) -> list[dict[str, float]]:
        shrink = scale.shrink
        seen.append((shrink, repeat))
        return [
            {"mean_wait": 100.0 * (1 + shrink) + i, **{k: v[0] for k, v in FLAT.items()}}
            for i in range(repeat)
        ]

    points = sweep(runner, [0.9, 0.5], 2)
    assert seen == [(0.5, 2), (0.9, 2)]
    assert points[0].values["mean_wait"] == [150.0, 151.0] and points[1].values["mean_wait"] == [190.0, 191.0]


def test_outputs_written(tmp_path: Path) -> None:
    result = find_limit(CURVE, 0.05)
    paths = write_limit(result, tmp_path)
    assert [p.name for p in paths] == ["shrink-limit.json", "shrink-limit.csv", "shrink-limit.png"]
    assert json.loads(paths[0].read_text())["limit"] == 0.9
    assert paths[2].stat().st_size > 0
    assert text_table(result).splitlines()[-1] == "limit: shrink 0.9 (speed-up x10)"


def test_command_against_the_twin(tmp_path: Path) -> None:
    # without ticks the twin is time-invariant: every shrink holds
    args = ["shrink-limit", "--against", "sim", "-p", "backfill-1", "--first-n", "30", "--repeat", "1",
            "--shrinks", "0.5,0.99", "--tick", "0", "-o", str(tmp_path)]  # fmt: skip
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    assert "limit: shrink 0.99 (speed-up x100)" in out.output
    assert (tmp_path / "shrink-limit.png").exists()


def test_command_refuses_bad_shrinks() -> None:
    out = CliRunner().invoke(main, ["shrink-limit", "--against", "sim", "--shrinks", "0.5,1.5"])
    assert out.exit_code == 2 and "--shrinks" in out.output and "[0, 1)" in out.output
