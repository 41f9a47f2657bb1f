"""The discrete-event simulator and the schedule invariant checker."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import pytest

from harness.model.columns import RESULT_COLUMNS
from harness.platform import load_platform
from harness.policies.base import Decision, Policy, Start
from harness.policies.registry import THESIS_POLICIES, get_policy
from harness.policies.state import Allocation, ClusterState, QueuedJob
from harness.sim.checks import check_schedule
from harness.sim.engine import SimulationError, simulate
from tests.plans import plan
from tests.platforms import tiny_machine

PLATFORM = load_platform()
TINY = tiny_machine()


def test_fcfs_schedule_on_a_tiny_machine() -> None:
    # 4 compute nodes, 2 BB nodes of 100 MB. Job 2 needs 3 nodes and waits for job 1;
    # job 3 waits behind it (FCFS), then runs past its walltime and is killed after
    # 50 s; job 4 finds no BB node with 60 MB free while job 1 runs, then no node.
    jobs = plan(
        [
            (1, 0.0, 100.0, 200.0, 2, 60),
            (2, 10.0, 30.0, 40.0, 3, 10),
            (3, 20.0, 80.0, 50.0, 1, 10),
            (4, 30.0, 10.0, 20.0, 1, 60),
        ]
    )
    result = simulate(jobs, get_policy("fcfs"), TINY)
    table = result.jobs.set_index("job_id")
    assert list(result.jobs.columns) == list(RESULT_COLUMNS)
    assert table["start"].to_dict() == {1: 0.0, 2: 100.0, 3: 100.0, 4: 130.0}
    assert table["end"].to_dict() == {1: 100.0, 2: 130.0, 3: 150.0, 4: 140.0}
    assert table["runtime"].to_dict() == {1: 100.0, 2: 30.0, 3: 50.0, 4: 10.0}
    assert table["status"].to_dict() == {1: "completed", 2: "completed", 3: "timeout", 4: "completed"}
    # two 60 MB shares cannot share a 100 MB BB node: c002's goes to the other one
    assert table.loc[1, "bb_nodes"] == "c001:bb01,c002:bb02"
    assert check_schedule(result.jobs, TINY) == []


def test_simultaneous_events_make_one_decision() -> None:
    # jobs 2 and 3 arrive at t=5 together; job 1 ends at t=5 as well
    jobs = plan([(1, 0.0, 5.0, 10.0, 1, 0), (2, 5.0, 1.0, 10.0, 1, 0), (3, 5.0, 1.0, 10.0, 1, 0)])
    result = simulate(jobs, get_policy("fcfs"), TINY)
    assert result.decisions["time"].tolist() == [0.0, 5.0]
    assert result.decisions["started"].tolist() == [1, 2]
    assert result.jobs["start"].tolist() == [0.0, 5.0, 5.0]


def test_zero_runtime_jobs_release_at_once() -> None:
    jobs = plan([(1, 0.0, 0.0, 10.0, 4, 0), (2, 0.0, 3.0, 10.0, 4, 0)])
    result = simulate(jobs, get_policy("fcfs"), TINY)
    assert result.jobs["start"].tolist() == [0.0, 0.0] and result.jobs["end"].tolist() == [0.0, 3.0]
    assert check_schedule(result.jobs, TINY) == []


def test_jobs_that_never_fit_are_refused() -> None:
    with pytest.raises(ValueError, match="never run"):
        simulate(
            plan([(1, 0.0, 1.0, 1.0, 3, 60)]), get_policy("fcfs"), TINY
        )  # 3 shares of 60 MB > 2 BB nodes
    with pytest.raises(ValueError, match="lacks columns"):
        simulate(pd.DataFrame({"job_id": [1]}), get_policy("fcfs"), TINY)


class _Greedy(Policy):
    """Starts the first queued job on compute node 0, whatever is running there."""

    def decide(self, state: ClusterState, queue: Sequence[QueuedJob], now: float) -> Decision:
        return Decision((Start(queue[0].job_id, Allocation((0,), (0,))),))


def test_impossible_decisions_are_errors() -> None:
    jobs = plan([(1, 0.0, 10.0, 10.0, 1, 0), (2, 1.0, 10.0, 10.0, 1, 0)])
    with pytest.raises(SimulationError, match="busy"):
        simulate(jobs, _Greedy("greedy"), TINY)


def test_checker_finds_every_kind_of_violation() -> None:
    good = pd.DataFrame(
        {
            "job_id": [1, 2],
            "submit": [0.0, 0.0],
            "start": [0.0, 10.0],
            "end": [10.0, 20.0],
            "runtime": [10.0, 10.0],
            "walltime": [10.0, 10.0],
            "nodes": [2, 2],
            "bb_per_node_mb": [50, 50],
            "bb_nodes": ["c001:bb01,c002:bb01", "c001:bb01,c002:bb01"],
            "status": ["completed", "completed"],
        }
    )
    assert check_schedule(good, TINY) == []
    overlap = good.assign(start=[0.0, 5.0], end=[10.0, 15.0])
    assert any("at once" in p for p in check_schedule(overlap, TINY))
    too_much_bb = good.assign(bb_nodes=["c001:bb01,c002:bb01", "c003:bb01,c004:bb01"], start=[0.0, 5.0])
    too_much_bb = too_much_bb.assign(end=[10.0, 15.0])
    assert any("capacity" in p for p in check_schedule(too_much_bb, TINY))
    early = good.assign(submit=[0.0, 11.0])
    assert check_schedule(early, TINY) == ["job 2 starts before its submission"]
    never = good.assign(start=[0.0, float("nan")])
    assert check_schedule(never, TINY) == ["job 2 never ran"]
    too_long = good.assign(end=[10.0, 25.0])
    assert check_schedule(too_long, TINY) == ["job 2 runs outside [start, start + walltime]"]
    split = good.assign(bb_nodes=["c001:bb01", "c001:bb01,c002:bb01"])
    assert any("one BB node" in p for p in check_schedule(split, TINY))


@pytest.mark.parametrize("name", [*THESIS_POLICIES, "filler-sjf", "backfill-no-future-3"])
def test_every_policy_gives_a_valid_schedule(name: str) -> None:
    from harness.workload.plan import load_plan_or_trace

    jobs, _ = load_plan_or_trace("bundled", first_n=120)
    result = simulate(jobs, get_policy(name), PLATFORM)
    assert check_schedule(result.jobs, PLATFORM) == []
    assert len(result.jobs) == 120 and (result.decisions["started"].sum() == 120)
