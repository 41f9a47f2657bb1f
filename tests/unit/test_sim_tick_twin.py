"""The tick-aware twin: the policy runs only on the scheduling pass, starts are delayed."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.policies.registry import get_policy
from harness.sim.checks import check_schedule
from harness.sim.engine import Twin, simulate
from tests.plans import plan
from tests.platforms import tiny_machine

TINY = tiny_machine()  # 4 compute nodes, 2 BB nodes of 100 MB


TWO_WIDE = plan([(1, 0.3, 2.5, 10.0, 4, 0), (2, 0.5, 1.0, 10.0, 4, 0)])


def test_starts_land_on_the_next_whole_second() -> None:
    # job 1 arrives at 0.3: the pass at 1.0 starts it, it ends at 3.5; job 2 (arrived 0.5)
    # waits for the whole machine: the pass at 4.0 starts it. Ideal: 0.3 and 2.8.
    ideal = simulate(TWO_WIDE, get_policy("fcfs"), TINY).jobs
    assert ideal["start"].tolist() == [0.3, 2.8]
    twin = simulate(TWO_WIDE, get_policy("fcfs"), TINY, tick=1.0)
    assert twin.jobs["start"].tolist() == [1.0, 4.0]
    assert twin.jobs["end"].tolist() == [3.5, 5.0]
    assert twin.decisions["time"].tolist() == [1.0, 4.0]
    assert check_schedule(twin.jobs, TINY) == []


def test_a_change_on_a_pass_is_seen_by_that_pass() -> None:
    # submitted exactly at 2.0 and ending exactly at 5.0: no wait for the next pass
    jobs = plan([(1, 2.0, 3.0, 10.0, 4, 0), (2, 2.5, 1.0, 10.0, 4, 0)])
    twin = simulate(jobs, get_policy("fcfs"), TINY, tick=1.0)
    assert twin.jobs["start"].tolist() == [2.0, 5.0]


def test_launch_delay_shifts_starts_and_holds_the_nodes() -> None:
    # pass at 1.0, job 1 begins 1.25, ends 3.75; pass at 4.0, job 2 begins 4.25, ends 5.25
    twin = simulate(TWO_WIDE, get_policy("fcfs"), TINY, tick=1.0, launch_delay=0.25)
    assert twin.jobs["start"].tolist() == [1.25, 4.25]
    assert twin.jobs["end"].tolist() == [3.75, 5.25]
    assert twin.jobs["runtime"].tolist() == [2.5, 1.0]


def test_a_coarser_tick() -> None:
    # tick 5: passes at 5 and 10 (job 1 ends 7.5)
    twin = simulate(TWO_WIDE, get_policy("fcfs"), TINY, tick=5.0)
    assert twin.jobs["start"].tolist() == [5.0, 10.0]


@pytest.mark.parametrize("policy", ["fcfs", "backfill-1", "plan-square-0"])
def test_tick_zero_is_the_ideal_twin(policy: str) -> None:
    jobs = plan(
        [
            (1, 0.0, 100.0, 200.0, 2, 60),
            (2, 10.0, 30.0, 40.0, 3, 10),
            (3, 20.0, 80.0, 50.0, 1, 10),
            (4, 30.0, 10.0, 20.0, 1, 60),
            (5, 30.5, 7.0, 20.0, 2, 0),
        ]
    )
    ideal = simulate(jobs, get_policy(policy), TINY)
    twin = simulate(jobs, get_policy(policy), TINY, tick=0.0, launch_delay=0.0)
    pd.testing.assert_frame_equal(ideal.jobs, twin.jobs)
    assert ideal.decisions["time"].tolist() == twin.decisions["time"].tolist()


def test_pass_times() -> None:
    assert Twin(1.0).pass_at(0.3) == 1.0
    assert Twin(1.0).pass_at(3.0) == 3.0
    assert Twin(0.5).pass_at(1.2) == 1.5
    assert Twin().pass_at(1.2) == 1.2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tick": -1.0}, "tick must be"),
        ({"launch_delay": float("nan")}, "launch delay must be"),
        ({"launch_delay": 1.0, "model": "io-aware"}, "alloc-only"),
    ],
)
def test_bad_twin_settings_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        simulate(TWO_WIDE, get_policy("fcfs"), TINY, **kwargs)
