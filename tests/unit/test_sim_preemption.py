"""The suspend/resume twin (harness.sim.preemption) on hand-computed cases (4 nodes)."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.sim.preemption import place, simulate_preemption
from tests.platforms import tiny_machine

TINY = tiny_machine()  # 4 compute nodes, 2 BB nodes of 100 MB


def plan(rows: list[tuple[int, float, float, int, int]]) -> pd.DataFrame:
    """Rows of (job_id, submit, runtime, nodes, priority); walltime 20, no burst buffer."""
    df = pd.DataFrame(rows, columns=["job_id", "submit", "runtime", "nodes", "priority"])
    df["walltime"], df["bb_per_node_mb"] = 20.0, 0
    return df


def by_id(jobs: pd.DataFrame) -> dict[int, dict]:
    return {int(r["job_id"]): r for r in jobs.to_dict("records")}


def test_placement_is_the_smallest_consecutive_run_else_the_largest_runs() -> None:
    assert place([0, 1, 2, 3], 2) == [0, 1]
    assert place([0, 2, 3, 5, 6, 7], 2) == [2, 3]  # the run of 2 fits best
    assert place([0, 2, 3, 5, 6, 7], 3) == [5, 6, 7]
    assert place([0, 2, 3, 5], 3) == [0, 2, 3]  # no run holds 3: the run of 2, then the lowest single
    assert place([1, 3], 3) is None


def test_a_high_job_suspends_the_low_job_under_it_which_resumes_with_its_runtime() -> None:
    # A (2 nodes) on c001-c002, B on c003, C on c004. H (2 nodes, high) at 2 finds no idle
    # node: placed on c001-c002 as if the low jobs were absent -> A suspended from 2 to 5,
    # resumed when H ends, 4 s of running left: ends at 9.
    result = simulate_preemption(
        plan([(1, 0, 6, 2, 0), (2, 0, 6, 1, 0), (3, 0, 10, 1, 0), (4, 2, 3, 2, 1)]), TINY
    )
    jobs = by_id(result.jobs)
    assert (jobs[1]["start"], jobs[1]["end"], jobs[1]["runtime"], jobs[1]["suspended"]) == (0, 9, 6, 3)
    assert jobs[1]["n_suspensions"] == 1 and jobs[2]["n_suspensions"] == 0
    assert (jobs[2]["end"], jobs[3]["end"]) == (6, 10)
    assert (jobs[4]["start"], jobs[4]["end"]) == (2, 5)
    assert result.suspensions.values.tolist() == [[1, 2.0, 5.0]]


def test_slurm_suspends_more_than_necessary_when_idle_nodes_do_not_suffice() -> None:
    # c002 frees at 1 and c004 is idle; H needs 3 nodes at 2: the 2 idle nodes do not
    # suffice, so H goes on c001-c003 (the low jobs ignored): A and C are both suspended
    # although one of them would have done (Barberato's Figure 5.3).
    result = simulate_preemption(
        plan([(1, 0, 10, 1, 0), (2, 0, 1, 1, 0), (3, 0, 10, 1, 0), (4, 2, 3, 3, 1)]), TINY
    )
    jobs = by_id(result.jobs)
    assert result.suspensions.values.tolist() == [[1, 2.0, 5.0], [3, 2.0, 5.0]]
    assert jobs[1]["end"] == jobs[3]["end"] == 13
    assert jobs[4]["start"] == 2


def test_a_high_job_takes_idle_nodes_first() -> None:
    result = simulate_preemption(plan([(1, 0, 10, 2, 0), (2, 1, 3, 2, 1)]), TINY)
    assert result.n_suspensions == 0 and by_id(result.jobs)[2]["start"] == 1


def test_resume_waits_until_no_high_job_holds_any_of_its_nodes() -> None:
    # A (4 nodes) suspended at 1 by H1 (c001-c002, ends 3); H2 at 2 goes on c003-c004 (A
    # already suspended: no second suspension) and ends 6: A resumes at 6 with 9 s left.
    result = simulate_preemption(plan([(1, 0, 10, 4, 0), (2, 1, 2, 2, 1), (3, 2, 4, 2, 1)]), TINY)
    a = by_id(result.jobs)[1]
    assert (a["end"], a["suspended"], a["n_suspensions"], a["runtime"]) == (15, 5, 1, 10)


def test_without_preemption_the_tiers_only_order_the_queue() -> None:
    # L (low, id 2) and H (high, id 3) wait for A; H goes first at 5, L after it at 7.
    jobs = by_id(simulate_preemption(plan([(1, 0, 5, 4, 0), (2, 1, 1, 1, 0), (3, 1, 2, 4, 1)]), TINY,
                                     preempt=False).jobs)  # fmt: skip
    assert (jobs[3]["start"], jobs[2]["start"]) == (5, 7)
    assert all(j["n_suspensions"] == 0 for j in jobs.values())


def test_low_jobs_backfill_behind_the_first_blocked_low_job() -> None:
    # A holds 3 nodes until 10 (walltime 10); W (4 nodes) reserves 10; S (1 node, walltime 5)
    # ends before it: starts now. T (1 node, walltime 20) would delay W: waits.
    df = plan([(1, 0, 10, 3, 0), (2, 1, 4, 4, 0), (3, 2, 5, 1, 0), (4, 3, 5, 1, 0)])
    df["walltime"] = [10.0, 20.0, 5.0, 20.0]
    jobs = by_id(simulate_preemption(df, TINY).jobs)
    assert (jobs[3]["start"], jobs[2]["start"], jobs[4]["start"]) == (2, 10, 14)


def test_jobs_too_wide_are_refused() -> None:
    with pytest.raises(ValueError, match="can never run"):
        simulate_preemption(plan([(1, 0, 1, 5, 0)]), TINY)


def test_with_no_high_job_and_no_burst_buffer_the_twin_is_backfill_1() -> None:
    """The low tier's EASY (depth 1) is the engine's backfill-1, start for start, on the slice."""
    from harness.platform import load_platform
    from harness.policies.registry import get_policy
    from harness.sim.engine import simulate
    from harness.workload.plan import bundled_slice_path, load_plan_or_trace

    platform = load_platform()
    jobs = load_plan_or_trace(bundled_slice_path(), platform=platform)[0].assign(bb_per_node_mb=0, priority=0)
    ours = simulate_preemption(jobs, platform).jobs.set_index("job_id")["start"]
    engine = simulate(jobs, get_policy("backfill-1"), platform).jobs.set_index("job_id")["start"]
    assert ours.sort_index().tolist() == pytest.approx(engine.sort_index().tolist())


def test_a_blocked_wide_high_job_reserves_and_narrower_high_jobs_backfill() -> None:
    # Tiers without preemption. A (low, 3 nodes, walltime 10) runs; H1 (high, 4 nodes) at 1
    # reserves 10; H2 (high, 1 node, walltime 5) at 2 ends by 7: it starts at once. L (low,
    # 1 node) at 3 finds no idle node; H1 runs 10-12, then L.
    df = plan([(1, 0, 10, 3, 0), (2, 1, 2, 4, 1), (3, 2, 5, 1, 1), (4, 3, 1, 1, 0)])
    df["walltime"] = [10.0, 20.0, 5.0, 20.0]
    jobs = by_id(simulate_preemption(df, TINY, preempt=False).jobs)
    assert [jobs[i]["start"] for i in (1, 2, 3, 4)] == [0, 10, 2, 12]


def bb_plan(rows: list[tuple[int, float, float, int, int, float, int]]) -> pd.DataFrame:
    """Rows of (job_id, submit, runtime, nodes, priority, walltime, bb_per_node_mb)."""
    columns = ["job_id", "submit", "runtime", "nodes", "priority", "walltime", "bb_per_node_mb"]
    return pd.DataFrame(rows, columns=columns)


BB100 = tiny_machine(bb_capacity_mb=50)  # 4 compute nodes, 100 MB of burst buffer in all


def test_a_low_job_respects_the_burst_buffer_a_blocked_high_job_reserved() -> None:
    # L0 (low, 60 MB, walltime 10) runs; H (high, 70 MB) at 1 finds 40 MB free: suspending
    # L0 would free no license, so H reserves: shadow 10, 30 MB to spare. L2 (low, 40 MB,
    # ends at 22 > 10) would delay it: it waits. H runs 10-11, L2 starts at 11 (40 > 30 free
    # before). Before: L2 took the 40 MB at 2 and H waited until 22.
    df = bb_plan([(1, 0, 10, 1, 0, 10, 60), (2, 1, 1, 1, 1, 1, 70), (3, 2, 20, 1, 0, 20, 40)])
    result = simulate_preemption(df, BB100)
    jobs = by_id(result.jobs)
    assert [jobs[i]["start"] for i in (1, 2, 3)] == [0, 10, 11]
    assert result.n_suspensions == 0


def test_a_suspended_job_is_expected_to_free_its_burst_buffer_at_its_recorded_end() -> None:
    # L1 (low, 2 nodes, 60 MB, walltime 10) on c001-c002. H1 (high, 3 nodes, 2 s) at 1: two
    # idle nodes do not suffice, it goes on c001-c003 and suspends L1 (1-3). H2 (high, 4 nodes,
    # 72 MB) at 1 finds 40 MB free: it reserves from H1's end (3: 4 nodes) and L1's recorded
    # end (0 + 10: 100 MB) -> shadow 10, 28 MB to spare. L3 (low, 40 MB, walltime 20) at 2 on
    # the idle c004 would delay it: it waits. L1 resumes at 3, ends at 12 (10 of running);
    # H2 runs 12-13, then L3 (40 > 28 free before). Before, the suspended L1 never freed its
    # licenses in the reckoning: no shadow, L3 started at 2 and H2 waited until 22.
    df = bb_plan([
        (1, 0, 10, 2, 0, 10, 30), (2, 1, 2, 3, 1, 2, 0), (3, 1, 1, 4, 1, 1, 18), (4, 2, 20, 1, 0, 20, 40),
    ])  # fmt: skip
    result = simulate_preemption(df, BB100)
    jobs = by_id(result.jobs)
    assert [jobs[i]["start"] for i in (1, 2, 3, 4)] == [0, 1, 12, 13]
    assert jobs[1]["end"] == 12
    assert result.suspensions.values.tolist() == [[1, 1.0, 3.0]]
