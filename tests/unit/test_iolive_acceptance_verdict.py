"""The verdict of benchmarks/iolive_acceptance.py: issue 18's acceptance, figure by figure."""

from __future__ import annotations

from typing import Any

import pytest

import benchmarks.iolive_acceptance as acceptance  # fails, never skips, if it cannot import

WHOLE = {
    "jobs": 200, "completed": 200, "phase_records": 200, "staged_in": 200, "staged_out": 200,
    "bb_jobs": 200, "checkpoints": 111, "checkpoints_planned": 111,
}  # fmt: skip


def _row(
    wait: float = 100.0, tick_wait: float = 100.0, io: float = 20.0, dil: float = 1.1, **acc: int
) -> dict[str, Any]:
    return {
        "accounted": {**WHOLE, **acc},
        "emulated": {"mean_wait": wait, "mean_io": io, "mean_dilation": dil},
        "twin": {"mean_wait": 100.0, "mean_io": 20.0, "mean_dilation": 1.1},
        "tick_aware_wait": tick_wait,
    }


def test_a_run_within_10_percent_everywhere_passes() -> None:
    assert acceptance.passes(_row(wait=109.0, io=21.9, dil=1.0))  # +9 %, +9.5 %, -9.1 %


def test_the_wait_may_match_either_twin() -> None:
    assert acceptance.passes(_row(wait=130.0, tick_wait=125.0))  # +30 % ideal, +4 % tick-aware
    assert not acceptance.passes(_row(wait=130.0, tick_wait=115.0))  # +30 %, +13 %


@pytest.mark.parametrize("io, dil", [(22.2, 1.1), (20.0, 1.22)])  # +11 % I/O; +10.9 % dilation
def test_io_or_dilation_beyond_10_percent_fails_even_when_the_wait_agrees(io: float, dil: float) -> None:
    assert not acceptance.passes(_row(io=io, dil=dil))


@pytest.mark.parametrize(
    "missing", [{"completed": 199}, {"staged_out": 199}, {"phase_records": 199}, {"checkpoints": 110}]
)
def test_a_job_or_phase_unaccounted_for_fails(missing: dict[str, int]) -> None:
    assert not acceptance.passes(_row(**missing))
