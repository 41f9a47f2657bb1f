"""Whether repeated runs gave the same schedule (harness.analysis.agreement), by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from harness.analysis.agreement import pair_agreement, schedule_agreement, start_order


def schedule(starts: dict[int, float | None]) -> pd.DataFrame:
    return pd.DataFrame(
        {"job_id": list(starts), "start": [math.nan if s is None else s for s in starts.values()]}
    )


FIRST = schedule({1: 0.0, 2: 10.4, 3: 10.9, 4: 30.0, 5: None})


def test_the_start_order_is_by_whole_second_then_job_id() -> None:
    # jobs 2 and 3 start in second 10: ordered by id, whatever their fractions; 5 never started
    assert start_order(FIRST) == [1, 2, 3, 4]
    assert start_order(schedule({1: 0.0, 2: 10.9, 3: 10.4, 4: 30.0})) == [1, 2, 3, 4]


def test_a_repetition_with_one_job_a_second_later_keeps_the_order_but_not_the_starts() -> None:
    later = schedule({1: 0.0, 2: 10.4, 3: 11.2, 4: 30.0, 5: None})
    pair = pair_agreement(FIRST, later)
    # 3 now starts in second 11 (0.3 s later), after 2 in second 10: the same order; 3 of 4
    # started in the same second
    assert pair == {
        "identical_start_order": True,
        "kendall_tau": 1.0,
        "jobs_compared": 4,
        "jobs_same_start": 3,
    }


def test_two_jobs_swapped_lower_tau_and_break_the_order() -> None:
    swapped = schedule({1: 0.0, 2: 30.0, 3: 10.9, 4: 10.4, 5: None})
    pair = pair_agreement(FIRST, swapped)
    # pairs of 4 jobs: 6; (2,3) and (2,4) discordant (2 now after 3 and 4), (3,4) discordant:
    # tau = (3 - 3) / 6 = 0
    assert not pair["identical_start_order"]
    assert pair["kendall_tau"] == pytest.approx(0.0)
    assert pair["jobs_same_start"] == 2  # jobs 1 and 3


def test_the_agreement_of_three_repetitions_counts_the_first() -> None:
    later = schedule({1: 0.0, 2: 10.4, 3: 11.2, 4: 30.0, 5: None})
    swapped = schedule({1: 0.0, 2: 30.0, 3: 10.9, 4: 10.4, 5: None})
    found = schedule_agreement([FIRST, later, swapped])
    assert found["repetitions"] == 3 and found["identical_start_order"] == 2
    assert found["kendall_tau_min"] == pytest.approx(0.0)
    assert found["jobs_same_start_min"] == 2 and found["jobs_started_first"] == 4
    alone = schedule_agreement([FIRST])
    assert alone["identical_start_order"] == 1 and alone["kendall_tau_min"] == 1.0
    assert schedule_agreement([]) == {"repetitions": 0}
