"""The staging model replayed on a run's own instants (harness/emulation/iolive/staging_replay.py).

Default platform, as in test_staging.py: a job's transfer is striped over the 12 BB nodes and
crosses the PFS link of 5,000 MB/s; a job of n nodes is capped at n x 1,250 MB/s.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from harness.emulation.iolive.staging_replay import replay_stagings, staging_given_starts
from harness.emulation.iolive.transfers import Transfer
from harness.platform import load_platform

MACHINE = load_platform().machine


def _in(job: int, nodes: int, mb: float) -> Transfer:
    return Transfer(job, "in", nodes, mb)


def test_a_transfer_alone_takes_its_volume_over_its_solo_rate() -> None:
    # 4 nodes: the whole PFS, 5,000 MB in 1 s; a node alone: its card, 1,250 MB in 1 s; apart in time
    took = replay_stagings([0.0, 5.0], [_in(1, 4, 5000.0), _in(2, 1, 1250.0)], MACHINE)
    assert list(took) == pytest.approx([1.0, 1.0], rel=1e-12)


def test_a_later_transfer_halves_the_rate_of_the_first() -> None:
    # A alone 0-1 s moves 5,000 MB; then 2,500 MB/s each: A's other 5,000 MB end at 3 s;
    # B has 5,000 MB left at 3 s and ends alone at 4 s: both took 3 s
    took = replay_stagings([0.0, 1.0], [_in(1, 4, 10_000.0), _in(2, 4, 10_000.0)], MACHINE)
    assert list(took) == pytest.approx([3.0, 3.0], rel=1e-12)


def test_shares_follow_node_counts_and_simultaneous_ends_are_both_done() -> None:
    # 1 and 8 nodes: 5,000/9 and 40,000/9 MB/s (test_staging.py); 5,000 and 40,000 MB both take 9 s
    took = replay_stagings([2.0, 2.0], [_in(1, 1, 5000.0), _in(2, 8, 40_000.0)], MACHINE)
    assert list(took) == pytest.approx([9.0, 9.0], rel=1e-9)


def _results(**extra: list[float]) -> pd.DataFrame:
    return pd.DataFrame({
        "job_id": [1, 2], "nodes": [4, 4],
        "stage_in_begin": [0.0, 1.0], "stage_in_s": [3.3, 2.7], "stage_in_mb": [10_000.0, 10_000.0],
        "stage_out_begin": [50.0, math.nan], "stage_out_s": [1.5, math.nan], "stage_out_mb": [5000.0, 0.0],
        **extra,
    })  # fmt: skip


def test_the_run_is_compared_transfer_by_transfer() -> None:
    got = staging_given_starts(_results(checkpoint_s=[0.0, 0.0]), MACHINE)
    # model: 3, 3 (above) and job 1's stage-out alone 1 s; emulated 3.3, 2.7, 1.5
    assert got is not None and got["transfers"] == 3
    assert got["mean_model_s"] == pytest.approx(7.0 / 3) and got["mean_emulated_s"] == pytest.approx(7.5 / 3)
    assert got["rel_diff"] == pytest.approx(0.5 / 7.0)
    assert got["median_rel_diff"] == pytest.approx(0.1) and got["max_abs_rel_diff"] == pytest.approx(0.5)


def test_runs_with_other_transfers_on_the_links_are_not_replayed() -> None:
    assert staging_given_starts(_results(checkpoint_s=[0.0, 12.0]), MACHINE) is None
    assert staging_given_starts(_results(drains=[1, 0]), MACHINE) is None
    assert staging_given_starts(_results(tier=["hps", "lps"]), MACHINE) is None
    nothing = _results().assign(stage_in_mb=[0.0, 0.0], stage_out_mb=[0.0, 0.0])
    assert staging_given_starts(nothing, MACHINE) is None
