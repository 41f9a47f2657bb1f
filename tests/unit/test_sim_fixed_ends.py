"""The end-time heap of the executions whose ends are fixed at the start (harness/sim/fixed_ends.py)."""

from __future__ import annotations

import math

import numpy as np

from harness.sim.fixed_ends import FixedEnds


def test_jobs_end_in_order_of_end_then_row() -> None:
    ends = FixedEnds(np.array([10.0, 5.0, 7.0, 1.0]), np.array([8.0, 5.0, 9.0, 1.0]))
    assert ends.timeout.tolist() == [True, False, False, False]  # runtime 10 > walltime 8
    assert not ends.busy() and ends.next_time() == math.inf
    ends.ends_at(2, 7.0)
    ends.ends_at(0, 3.0)
    ends.ends_at(1, 3.0)
    assert ends.busy() and ends.next_time() == 3.0
    assert ends.advance(2.9) == []
    assert ends.advance(3.0) == [0, 1]  # equal ends: lower row first
    assert ends.next_time() == 7.0
    assert ends.advance(100.0) == [2] and not ends.busy()
    assert np.isnan(ends.end[3]) and ends.end[:3].tolist() == [3.0, 3.0, 7.0]
