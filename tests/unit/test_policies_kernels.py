"""The compiled profile kernels compute exactly what the numpy reference computes."""

from __future__ import annotations

import numpy as np
import pytest

from harness.policies import kernels
from harness.policies.profile import AvailabilityProfile, reserve_bb

pytestmark = pytest.mark.skipif(not kernels.AVAILABLE, reason="numba not installed (numpy path only)")


def random_profile(rng: np.random.Generator, segments: int, bb_nodes: int = 12) -> AvailabilityProfile:
    """A profile whose free resources grow over time, as running jobs end."""
    times = np.concatenate([[1000.0], 1000.0 + np.cumsum(rng.integers(1, 500, segments - 1)).astype(float)])
    compute = np.sort(rng.integers(0, 97, segments))
    bb = np.sort(rng.integers(0, 40_001, (segments, bb_nodes)), axis=0)
    compute[-1], bb[-1] = 96, 40_000  # the machine is empty in the end: every job fits eventually
    return AvailabilityProfile(times, np.column_stack([compute, bb]).astype(np.int64))


def random_job(rng: np.random.Generator) -> tuple[int, int, float]:
    """A job that fits the empty machine: 12 BB nodes host ``12 * (40000 // share)`` shares."""
    share = int(rng.choice([0, 10, 500, 4000, 20_000, 40_000]))
    most = 96 if share == 0 else min(96, 12 * (40_000 // share))
    return int(rng.integers(1, most + 1)), share, float(rng.choice([1.0, 60.0, 499.0, 500.0, 3000.0]))


def test_earliest_start_matches_numpy_on_random_profiles() -> None:
    rng = np.random.default_rng(7)
    for _ in range(400):
        prof = random_profile(rng, int(rng.integers(1, 40)))
        nodes, share, duration = random_job(rng)
        for with_bb in (True, False):
            k, low = prof.earliest_start(nodes, share, duration, with_bb)
            k_ref, low_ref = prof.earliest_start_numpy(nodes, share, duration, with_bb)
            assert k == k_ref
            np.testing.assert_array_equal(low, low_ref)


def test_a_job_that_never_fits_raises_on_both_paths() -> None:
    prof = AvailabilityProfile(np.array([0.0]), np.array([[96, 30, 30]], dtype=np.int64))
    for method in (prof.earliest_start, prof.earliest_start_numpy):
        with pytest.raises(ValueError, match="never fits"):
            method(4, 20, 10.0)  # 4 shares of 20 MB, but each BB node hosts only one


def test_occupied_and_placed_match_numpy() -> None:
    rng = np.random.default_rng(11)
    for _ in range(300):
        prof = random_profile(rng, int(rng.integers(1, 30)))
        nodes, share, duration = random_job(rng)
        k, low = prof.earliest_start_numpy(nodes, share, duration)
        start = float(prof.times[k])
        bb = reserve_bb(low, nodes, share) if share > 0 else None
        ref = prof.occupied_numpy(start, duration, nodes, bb)
        got = prof.occupied(start, duration, nodes, bb)
        np.testing.assert_array_equal(got.times, ref.times)
        np.testing.assert_array_equal(got.res, ref.res)
        placed, placed_start = prof.placed(nodes, share, duration)
        assert placed_start == start
        np.testing.assert_array_equal(placed.times, ref.times)
        np.testing.assert_array_equal(placed.res, ref.res)


def test_kernel_best_fit_matches_python_including_ties() -> None:
    room = np.array([300, 100, 300, 250, 40_000, 100], dtype=np.int64)
    # 100 MB shares: the two 100 MB nodes (1 each), then 250 (2), then the first 300 (1).
    np.testing.assert_array_equal(kernels.reserve_bb(room, 5, 100), [100, 100, 0, 200, 0, 100])
    np.testing.assert_array_equal(kernels.reserve_bb(room, 5, 100), reserve_bb(room, 5, 100))
    assert kernels.reserve_bb(room, 500, 100)[0] == -1  # no room: the caller raises


def test_same_compares_times_and_resources() -> None:
    rng = np.random.default_rng(3)
    prof = random_profile(rng, 6)
    copy = prof.copy()
    assert kernels.same(prof.times, prof.res, copy.times, copy.res)
    copy.res[3, 5] -= 1
    assert not kernels.same(prof.times, prof.res, copy.times, copy.res)
    copy = prof.copy()
    copy.times[2] += 0.5
    assert not kernels.same(prof.times, prof.res, copy.times, copy.res)
