"""Herbein's sort-and-share accounting of a fixed schedule, by hand."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.analysis.io_accounting import Running, account, interference, sort_and_share
from harness.policies.iotree import IoTree

# 4 nodes on 2 switches of 100 MB/s, a PFS of 100 MB/s above them.
TREE = IoTree.uniform([0, 0, 1, 1], 1_000.0, 100.0, [("pfs", 100.0)])


def test_sort_and_share_meets_small_requests_and_splits_the_rest() -> None:
    assert sort_and_share([10.0, 80.0, 50.0], 100.0).tolist() == pytest.approx([10.0, 45.0, 45.0])
    assert sort_and_share([10.0, 20.0], 100.0).tolist() == [10.0, 20.0]


def test_interference_through_switches_and_pfs() -> None:
    # Switch 0 asks 60 (A: 2 x 30), switch 1 asks 80 (B 30 + C 50); the PFS gives 50 and
    # 50. Switch 0: A gets 50 of 60 (I = 5/6). Switch 1: B and C get 25 each (5/6, 1/2).
    jobs = [Running(1, (0, 1), 30.0), Running(2, (2,), 30.0), Running(3, (3,), 50.0)]
    assert interference(TREE, jobs) == pytest.approx({1: 5 / 6, 2: 5 / 6, 3: 0.5})


def test_account_splits_each_job_into_computing_and_blocking() -> None:
    # [0, 50): A and B ask 60 + 30 <= 100: no contention. [50, 100): A and C ask
    # 60 + 50; the PFS gives 50 each: A computes 5/6 of the time, C all of it.
    schedule = pd.DataFrame({"job_id": [1, 2, 3], "start": [0.0, 0.0, 50.0], "end": [100.0, 50.0, 100.0]})
    out = account(schedule, {1: (0, 1), 2: (2,), 3: (3,)}, {1: 30.0, 2: 30.0, 3: 50.0}, TREE).set_index(
        "job_id"
    )
    assert out.loc[1, "computing_s"] == pytest.approx(50 + 50 * 5 / 6)
    assert out.loc[1, "blocked_s"] == pytest.approx(50 / 6)
    assert out["computing_share"].tolist() == pytest.approx([(50 + 250 / 6) / 100, 1.0, 1.0])
