"""Background drains of checkpoints: the service's side, the stage-out's wait, the columns.

Default platform: 96 compute nodes in 12 chassis of 8 (c001-c008 chassis 1 on bb01, ...),
every link 1,250 MB/s (compute cards, BB nodes), the PFS 5,000 MB/s. A drain goes from the
BB node of the job's chassis to the PFS (route bb01 -> pfs for c001), weight and cap its
nodes there; a checkpoint of c002 goes into bb01 (route bb01): the two share bb01.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.emulation.iolive.contention import drains_end, end_drains, publish
from harness.emulation.iolive.drains import (
    DRAIN_RECORDS,
    add_drains,
    drain_stats,
    left_mb,
    outside_s,
    union_s,
)
from harness.emulation.iolive.flows import FLOWS_DIR, RATES, FlowFileError, parse_flow
from harness.emulation.iolive.phases import add_phases
from harness.emulation.iolive.staging import _own_rate as staging_rate
from harness.emulation.iolive.staging import run_transfer
from harness.emulation.iolive.transfers import Transfer, active_transfers, register
from harness.model.timescale import TimeScale
from harness.platform import load_platform

MACHINE = load_platform(None)
DRAIN = "job=1 slurm_job=101 phase=1 channel=drain mb=1000 time_scale=1 pid=0 nodes=c001"


def _drain_file(io: Path, line: str = f"{DRAIN} start=100 at=100 rate=0 total=1000") -> Path:
    (io / FLOWS_DIR).mkdir(exist_ok=True)
    path = io / FLOWS_DIR / "1.1.flow"
    path.write_text(line + "\n")
    return path


def test_a_drain_line_is_parsed_with_its_state() -> None:
    f = parse_flow(f"{DRAIN} start=100 at=100.5 rate=625 total=2000")
    assert (f.channel, f.mb, f.slurm_job, f.start, f.at, f.rate, f.total) == (
        "drain", 1000.0, 101, 100.0, 100.5, 625.0, 2000.0,
    )  # fmt: skip
    assert left_mb(f, 101.5) == 375.0 and left_mb(f, 110.0) == 0.0
    assert parse_flow(DRAIN).at is None  # a drain sigsleep moves itself (io:drain:MB)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (f"{DRAIN} at=100 rate=0", "f.flow: a drain \\(with at=\\) needs start, total"),
        (
            f"{DRAIN.replace('drain', 'checkpoint')} start=1 at=1 rate=0 total=1",
            "at= only goes with channel=drain",
        ),
        (f"{DRAIN} start=1 at=1 rate=-5 total=1", "rate and total >= 0"),
        (f"{DRAIN} start=1 at=x rate=0 total=1", "f.flow: could not convert"),
    ],
)
def test_bad_drain_lines_name_the_file(line: str, message: str) -> None:
    with pytest.raises(FlowFileError, match=message):
        parse_flow(line, "f.flow")


def test_the_service_moves_a_drain_and_its_file_says_how_far_it_is(tmp_path: Path) -> None:
    path = _drain_file(tmp_path)
    # alone: bb01 -> PFS at c001's card, 1,250 MB/s; nothing moved before (rate 0)
    publish(tmp_path, MACHINE, print, now=100.0)
    assert _rates(tmp_path) == "1.1 1250.000000\n"
    assert path.read_text() == f"{DRAIN} start=100.000000 at=100.000000 rate=1250 total=1000\n"
    # 0.4 s later c002 checkpoints into bb01: 625 each; 1000 - 0.4 x 1250 = 500 MB left
    (tmp_path / FLOWS_DIR / "2.1.flow").write_text(
        "job=2 slurm_job=102 phase=1 channel=checkpoint mb=5 time_scale=1 pid=1 nodes=c002\n"
    )
    publish(tmp_path, MACHINE, print, now=100.4)
    assert _rates(tmp_path) == "1.1 625.000000\n2.1 625.000000\n"
    assert "mb=500 " in path.read_text() and " at=100.400000 rate=625 " in path.read_text()
    # a restarted service reads the same state: same rates, nothing rewritten
    before = path.read_text()
    flows = publish(tmp_path, MACHINE, print, now=100.6)
    assert path.read_text() == before and left_mb(flows[0], 100.6) == pytest.approx(375.0)
    # the checkpoint ends at 101.0: 500 - 0.6 x 625 = 125 MB left, alone again: ends at 101.1
    (tmp_path / FLOWS_DIR / "2.1.flow").unlink()
    flows = publish(tmp_path, MACHINE, print, now=101.0)
    assert [(f.mb, f.at, f.rate) for f in flows] == [(125.0, 101.0, 1250.0)]
    assert drains_end(flows) == pytest.approx(101.1)
    assert end_drains(tmp_path, MACHINE, flows, now=101.05) == flows and path.exists()
    assert end_drains(tmp_path, MACHINE, flows, now=101.1) == [] and not path.exists()
    (rec,) = map(json.loads, (tmp_path / DRAIN_RECORDS).read_text().splitlines())
    assert rec == {"job": 101, "trace_job": 1, "phase": 1, "mb": 1000.0, "start": 100.0, "end": 101.1,
                   "seconds": 1.1, "solo_s": 0.8}  # fmt: skip


def test_drains_and_stagings_share_the_links_in_one_solve(tmp_path: Path) -> None:
    # an 8-node drain from bb01 (weight 8) and a 12-node staging striped over the 12 BB nodes
    # (weight 1 each): bb01 binds first, 9 x L = 1250, the drain gets 8 L = 10000 / 9 and the
    # staging's stripe there L = 1250 / 9, 1/12 of its bytes: its pace 12 L = 15000 / 9
    _drain_file(tmp_path, f"{DRAIN.replace('c001', 'c[001-008]')} start=100 at=100 rate=0 total=1000")
    stage = Transfer(9, "in", 12, 1000.0, 1.0, os.getpid())
    register(tmp_path, stage)
    publish(tmp_path, MACHINE, print, now=100.0)
    assert _rates(tmp_path) == f"1.1 {10000 / 9:.6f}\n"
    assert staging_rate(stage, active_transfers(tmp_path), MACHINE, tmp_path) == pytest.approx(
        15000 / 9 * 1e6
    )


class Clock:
    """A fake clock; the job's drain ends (its file removed by the service) at ``drained``."""

    def __init__(self, drain: Path, drained: float) -> None:
        self.now, self.drain, self.drained = 0.0, drain, drained

    def __call__(self) -> float:
        return self.now

    def sleep(self, dt: float) -> None:
        self.now += dt
        if self.now >= self.drained - 1e-9:
            self.drain.unlink(missing_ok=True)


def test_a_stage_out_ends_only_when_the_jobs_drains_are_done(tmp_path: Path) -> None:
    drain = _drain_file(tmp_path, f"{DRAIN.replace('101', '5')} start=0 at=0 rate=0 total=1000")
    # a 4-node stage-out of job 5 (stripes of weight 1/3) beside its drain from c001 on bb01:
    # bb01: L + L/3 = 1250, L = 937.5; the stripe there 312.5 for 1/12 of the bytes: 3750 MB/s,
    # 750 MB in 0.2 s; then it waits for the drain, which ends at 0.5 s
    clock = Clock(drain, 0.5)
    rec = run_transfer(
        Transfer(5, "out", 4, 750.0), MACHINE, tmp_path, tick=0.1, clock=clock, sleep=clock.sleep
    )
    assert rec["min_mbps"] == pytest.approx(3750.0)
    assert rec["seconds"] == pytest.approx(0.5) and rec["drain_wait_s"] == pytest.approx(0.3)
    assert rec["solo_s"] == pytest.approx(0.15)  # 750 MB at the PFS's 5000 MB/s
    # another job's drain does not hold it
    other = _drain_file(tmp_path, f"{DRAIN} start=0 at=0 rate=0 total=1000")
    clock = Clock(other, 10.0)
    rec = run_transfer(
        Transfer(5, "out", 4, 0.0), MACHINE, tmp_path, tick=0.1, clock=clock, sleep=clock.sleep
    )
    assert rec["seconds"] == 0.0 and other.exists()


def test_intervals() -> None:
    assert union_s([(5, 6), (0, 2), (1, 3)]) == 4.0
    assert union_s([]) == 0.0
    assert outside_s([(0, 4)], [(1, 2), (3, 5)]) == 2.0


def test_drain_columns_join_by_slurm_id_after_t0() -> None:
    results = pd.DataFrame({"job_id": [1, 2, 3], "slurm_job_id": [7, 8, np.nan]})
    records = [
        {"job": 7, "phase": 1, "mb": 100.0, "start": 10.0, "end": 12.0, "solo_s": 1.5},
        {"job": 7, "phase": 3, "mb": 50.0, "start": 11.0, "end": 14.0, "solo_s": 1.0},
        {"job": 7, "phase": 1, "mb": 100.0, "start": 10.0, "end": 12.0, "solo_s": 1.5},  # a restart's double
        {"job": 8, "phase": 1, "mb": 100.0, "start": 4.0, "end": 5.0, "solo_s": 1.0},  # an earlier run
    ]
    out = add_drains(results, records, t0=5.0)
    assert out["drains"].tolist() == [2, 0, 0]
    assert out["drain_mb"].tolist()[0] == 150.0 and out["drain_s"].tolist()[0] == 4.0
    assert out["drain_solo_s"].tolist()[0] == 2.5 and out["drain_s"].isna().tolist() == [False, True, True]
    assert drain_stats(out) == {"drains": 2, "jobs_drained": 1, "mean_drain_s": 4.0, "mean_drain_solo_s": 2.5}


def test_io_time_counts_drains_beside_compute_and_solo_time_a_drain_outlasting_the_job() -> None:
    # c001, 1250 MB checkpoint (1 s alone, drain 1 s alone) then 0.5 s of compute: the drain
    # (measured 100.5 -> 102.0) runs 0.5 s beside compute, 1 s past the job's end (in the
    # stage-out, which waited); alone it would end 0.5 s after the job, after the 0.2 s stage-out
    phases = [
        {"kind": "compute", "channel": None, "seconds": 0.5, "mb": None, "start": 99.0, "end": 99.5,
         "running": 0.5, "moved_mb": None},
        {"kind": "checkpoint", "channel": "checkpoint", "seconds": None, "mb": 1250.0, "start": 99.5,
         "end": 100.5, "running": 1.0, "moved_mb": 1250.0},
        {"kind": "compute", "channel": None, "seconds": 0.5, "mb": None, "start": 100.5, "end": 101.0,
         "running": 0.5, "moved_mb": None},
    ]  # fmt: skip
    rec = {"job_id": 1, "nodelist": "c001", "phases": phases, "running": 2.0, "end": 101.0}
    row = {"job_id": 1, "slurm_job_id": 7, "stage_in_s": np.nan, "stage_out_s": 1.2,
           "stage_out_solo_s": 0.2, "stage_out_mb": 1000.0}  # fmt: skip
    drains = {7: [{"job": 7, "phase": 1, "mb": 1250.0, "start": 100.5, "end": 102.0, "solo_s": 1.0}]}
    (cols,) = add_phases(pd.DataFrame([row]), [rec], MACHINE, TimeScale(), drains).to_dict("records")
    assert cols["io_s"] == pytest.approx(1.0 + 1.2 + 0.5)  # checkpoint + stage-out + drain beside compute
    assert cols["io_bytes"] == pytest.approx((1250 + 1250 + 1000) * 1e6)
    assert cols["solo_s"] == pytest.approx(2.5)  # 0.5 + 1 + 0.5, then the drain's last 0.5 s
    assert cols["dilation"] == pytest.approx((2.0 + 1.2) / 2.5)


def _rates(directory: Path) -> str:
    """The rates file's lines after its ``#sig`` line (the set it solved for, io_events)."""
    lines = (directory / RATES).read_text().splitlines(keepends=True)
    return "".join(line for line in lines if not line.startswith("#sig "))
