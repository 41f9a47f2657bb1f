"""benchmarks/vclock_acceptance.py: issue 32's table, read from run directories written here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import benchmarks.vclock_acceptance as acceptance  # fails, never skips, if it cannot import

Pair = tuple[float, float]  # a twin's mean wait and mean BSLD


def _metrics(wait: float, bsld: float, ideal: Pair, tick: Pair) -> dict[str, Any]:
    def compared(pair: Pair) -> dict[str, Any]:
        return {"mean_wait": {"simulated": pair[0]}, "mean_bsld": {"simulated": pair[1]}}

    return {
        "mean_wait": wait, "mean_bsld": bsld,
        "host_load": {"mean_1min": 0.5 + wait / 10_000, "max_1min": 2.0},
        "cross_check": {"ok": True},
        "fidelity": {"metrics": compared(ideal), "tick_aware": {"metrics": compared(tick)}},
    }  # fmt: skip


def _run(root: Path, policy: str, waits: list[float], *, speedup: float | None = None, events: bool = False,
         bsld: float = 2.0, identical: int = 1) -> Path:  # fmt: skip
    """A parent run with one repetition per wait: ideal twin 100 s / 2.0, tick-aware 200 s / 2.5."""
    parent = root / f"{policy}-{len(waits)}"
    manifest = {"policy": policy, "shrink": 0.0 if speedup or events else 0.99,
                "clock": "virtual" if speedup or events else "wall", "speedup": speedup,
                "options": {"replay": {"events": events}}}  # fmt: skip
    for i, wait in enumerate(waits):
        rep = parent / "repetitions" / f"{i:02d}"
        rep.mkdir(parents=True)
        (rep / "metrics.json").write_text(json.dumps(_metrics(wait, bsld, (100.0, 2.0), (200.0, 2.5))))
        (rep / "manifest.json").write_text(json.dumps(manifest))
    (parent / "manifest.json").write_text(json.dumps(manifest))
    agreement = {"schedule_agreement": {"identical_start_order": identical}}
    (parent / "metrics.json").write_text(json.dumps(agreement))
    return parent


def test_rsd_uses_the_n_minus_1_divisor() -> None:
    # 98, 100, 102: mean 100, squares 4 + 0 + 4 over n - 1 = 2 -> sd 2 -> 2 %
    assert acceptance.rsd_pct([98.0, 100.0, 102.0]) == pytest.approx(2.0)
    assert acceptance.rsd_pct([100.0]) is None


def test_slurm_policies_are_held_to_the_tick_aware_twin(tmp_path: Path) -> None:
    parent = _run(tmp_path, "slurm-backfill-1", [198.0, 200.0, 202.0], speedup=100.0, bsld=2.5)
    row = acceptance.read_row(parent)
    assert row.clock == "x100" and row.kind == "fixed"
    assert row.gap("mean_wait") == pytest.approx(0.0) and row.gap("mean_bsld") == pytest.approx(0.0)
    assert acceptance.verdict(row) == "met"  # RSD 1 % <= 3 % at a fixed speed-up


def test_agent_policies_are_held_to_their_own_twin(tmp_path: Path) -> None:
    # 106 s against the ideal twin's 100 s: +6 %; BSLD 2.0 against 2.0
    row = acceptance.read_row(_run(tmp_path, "backfill-1", [106.0, 106.0], events=True, identical=2))
    assert row.clock == "events" and row.identical_order == 2
    assert acceptance.verdict(row) == "not met: wait +6.0 %"


def test_the_event_clock_asks_for_an_rsd_of_1_percent(tmp_path: Path) -> None:
    # 98, 100, 102 -> RSD 2 %: within 3 % (fixed) but not within 1 % (events)
    row = acceptance.read_row(_run(tmp_path, "backfill-1", [98.0, 100.0, 102.0], events=True))
    assert acceptance.verdict(row) == "not met: RSD 2.00 % > 1 %"


def test_a_single_run_cannot_show_its_spread(tmp_path: Path) -> None:
    row = acceptance.read_row(_run(tmp_path, "backfill-1", [100.0], speedup=100.0))
    assert acceptance.verdict(row) == "not met: RSD n/a > 3 %"


def test_shrink_runs_have_no_target_but_show_their_gap(tmp_path: Path) -> None:
    row = acceptance.read_row(_run(tmp_path, "backfill-1", [120.0, 120.0]))
    assert row.clock == "shrink 0.99"
    assert acceptance.verdict(row) == "no target (shrink); wait +20.0 %"


def test_the_markdown_row_carries_every_figure(tmp_path: Path) -> None:
    parent = _run(tmp_path, "slurm-backfill-1", [190.0, 210.0], speedup=100.0, bsld=2.5)
    line = acceptance.markdown(acceptance.read_row(parent))
    # mean 200, sd 14.142 -> RSD 7.07 %; host load means 0.519 and 0.521
    assert "| 190.00, 210.00 | 200.00 s, 7.07 % | +0.00 %, +0.00 % | 1 of 2 | 0.52-0.52 / 2.00 |" in line
    assert line.endswith("| not met: RSD 7.07 % > 3 % |")


def test_a_run_without_its_twin_says_what_to_do(tmp_path: Path) -> None:
    parent = _run(tmp_path, "backfill-1", [100.0, 100.0], events=True)
    no_twin = {"mean_wait": 1.0, "mean_bsld": 1.0}
    (parent / "repetitions" / "01" / "metrics.json").write_text(json.dumps(no_twin))
    with pytest.raises(SystemExit, match="--compare-sim"):
        acceptance.read_row(parent)


def test_a_parent_still_running_is_read_from_its_finished_repetitions(tmp_path: Path) -> None:
    parent = _run(tmp_path, "slurm-backfill-1", [198.0, 202.0], speedup=100.0, bsld=2.5)
    (parent / "manifest.json").unlink()  # written when the last repetition is done
    (parent / "metrics.json").unlink()
    row = acceptance.read_row(parent)
    assert (row.policy, row.clock, row.waits) == ("slurm-backfill-1", "x100", [198.0, 202.0])
    assert row.identical_order is None  # the parent's agreement is written at its end
    for rep in (parent / "repetitions").iterdir():
        (rep / "manifest.json").unlink()
    with pytest.raises(SystemExit, match="which policy ran"):
        acceptance.read_row(parent)


def test_a_stopped_repetition_is_left_out(tmp_path: Path) -> None:
    parent = _run(tmp_path, "slurm-backfill-1", [198.0, 202.0, 0.0], speedup=100.0, bsld=2.5)
    stopped = parent / "repetitions" / "02"
    manifest = json.loads((stopped / "manifest.json").read_text())
    (stopped / "manifest.json").write_text(json.dumps({**manifest, "complete": False}))
    assert acceptance.read_row(parent).waits == [198.0, 202.0]
