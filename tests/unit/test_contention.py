"""The contention service's fair shares, hand-computed on the default platform.

Default platform: 96 compute nodes in 12 chassis of 8 (c001-c008 chassis 1, ...), one BB
node per chassis (bb01 ...), every link 1,250 MB/s (compute cards, BB nodes), the PFS
5,000 MB/s.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.emulation.iolive.contention import flow_rates, publish
from harness.emulation.iolive.flows import FLOWS_DIR, RATES, Flow, FlowFileError, parse_flow, read_flows
from harness.emulation.iolive.io_events import set_signature
from harness.emulation.iolive.staging import _own_rate as staging_rate
from harness.emulation.iolive.staging import transfer_rates
from harness.emulation.iolive.transfers import Transfer, active_transfers, register
from harness.model.timescale import TRACE_TIME
from harness.platform import load_platform

MACHINE = load_platform(None)


def flow(
    job: int, channel: str, nodes: str, mb: float = 1000.0, time_scale: float = 1.0, slurm: int = 0
) -> Flow:
    line = (
        f"job={job} slurm_job={slurm or '-'} phase=1 channel={channel} mb={mb} time_scale={time_scale} pid=7 "
    )
    return parse_flow(line + f"nodes={nodes}")


def test_parse_flow_reads_every_field() -> None:
    f = parse_flow(
        "job=17 slurm_job=42 phase=3 channel=checkpoint mb=4000 time_scale=10 pid=311 nodes=c[001-003]"
    )
    assert f == Flow(17, 3, "checkpoint", 4000.0, ("c001", "c002", "c003"), 10.0, 42, 311)
    assert f.key == "17.3"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("job=1 phase=1 channel=checkpoint mb=1 pid=1 nodes=c001", "f.flow: missing time_scale"),
        ("job=1 phase=1 channel=tape mb=1 time_scale=1 pid=1 nodes=c001", "f.flow: unknown channel 'tape'"),
        ("job=x phase=1 channel=drain mb=1 time_scale=1 pid=1 nodes=c001", "f.flow: invalid literal"),
        ("job=1 phase=1 channel=drain mb=1 time_scale=1 pid=1 nodes=-", "f.flow: no nodes"),
        ("job=1 phase=1 channel=drain mb=-1 time_scale=1 pid=1 nodes=c001", "f.flow: mb must be >= 0"),
    ],
)
def test_bad_flow_lines_name_the_file(line: str, message: str) -> None:
    with pytest.raises(FlowFileError, match=message):
        parse_flow(line, "f.flow")


def test_one_node_checkpoint_alone_at_its_card_then_two_share_their_bb_node() -> None:
    assert flow_rates([flow(1, "checkpoint", "c001")], MACHINE).tolist() == [1250.0]
    pair = [flow(1, "checkpoint", "c001"), flow(2, "checkpoint", "c002")]
    assert flow_rates(pair, MACHINE).tolist() == [625.0, 625.0]
    # another chassis, another BB node: untouched
    three = [*pair, flow(3, "checkpoint", "c009")]
    assert flow_rates(three, MACHINE).tolist() == [625.0, 625.0, 1250.0]


def test_weights_and_the_slowest_chassis_set_a_jobs_pace() -> None:
    # 3 nodes against 1 on bb01: 3/4 and 1/4 of 1250
    rates = flow_rates([flow(1, "checkpoint", "c[001-003]"), flow(2, "checkpoint", "c004")], MACHINE)
    assert rates.tolist() == [937.5, 312.5]
    # c008 (chassis 1) and c009 (chassis 2): half the bytes each way, 1250 MB/s each: 2500
    assert flow_rates([flow(1, "checkpoint", "c[008-009]")], MACHINE).tolist() == [2500.0]
    # c010 also on bb02: the job's half there gets 625 MB/s, so the job moves 2 x 625
    rates = flow_rates([flow(1, "checkpoint", "c[008-009]"), flow(2, "checkpoint", "c010")], MACHINE)
    assert rates.tolist() == [1250.0, 625.0]


def test_drains_share_the_pfs_and_staging_agrees_with_the_staging_command() -> None:
    # five one-node drains from five chassis: PFS 5000 / 5 = 1000 each (< their BB node's 1250)
    drains = [flow(j, "drain", f"c{8 * j + 1:03d}") for j in range(5)]
    assert flow_rates(drains, MACHINE).tolist() == [1000.0] * 5
    # striped staging: the numbers of harness.emulation.iolive.staging (4 nodes alone: the PFS's 5000)
    stage = [flow(1, "stage", "c[001-004]"), flow(2, "stage", "c[011-018]"), flow(3, "stage", "c020")]
    mine = flow_rates(stage, MACHINE)
    theirs = transfer_rates([Transfer(1, "in", 4, 1.0), Transfer(2, "in", 8, 1.0), Transfer(3, "in", 1, 1.0)],
                            MACHINE, TRACE_TIME) / 1e6  # fmt: skip
    assert mine.tolist() == pytest.approx(theirs.tolist(), rel=1e-12)


def test_time_scale_multiplies_the_rates() -> None:
    assert flow_rates([flow(1, "checkpoint", "c001", time_scale=10)], MACHINE).tolist() == [12500.0]


def test_publish_writes_every_rate_and_drops_jobs_gone_and_foreign_nodes(tmp_path: Path) -> None:
    flows = tmp_path / FLOWS_DIR
    flows.mkdir()
    lines = {
        "1.1": "job=1 slurm_job=101 phase=1 channel=checkpoint mb=5 time_scale=1 pid=1 nodes=c001",
        "2.4": "job=2 slurm_job=102 phase=4 channel=checkpoint mb=5 time_scale=1 pid=1 nodes=c002",
        "3.1": "job=3 slurm_job=103 phase=1 channel=checkpoint mb=5 time_scale=1 pid=1 nodes=c003",
        "4.1": "job=4 slurm_job=104 phase=1 channel=checkpoint mb=5 time_scale=1 pid=1 nodes=x001",
        "5.1": "job=5 phase=1 channel=checkpoint mb=5 pid=1 nodes=c001",
    }
    for key, line in lines.items():
        (flows / f"{key}.flow").write_text(line + "\n")
    said: list[str] = []
    kept = publish(tmp_path, MACHINE, said.append, running={101, 102, 104})
    assert [f.key for f in kept] == ["1.1", "2.4"]
    assert _rates(tmp_path) == "1.1 625.000000\n2.4 625.000000\n"
    assert not (flows / "3.1.flow").exists()  # Slurm no longer runs job 103
    assert len(said) == 2 and "5.1.flow: missing time_scale" in said[0] and "x001" in said[1]
    assert [f.key for f in read_flows(tmp_path, said.append)] == ["1.1", "2.4", "4.1"]


def test_stagings_and_checkpoints_share_the_bb_links_in_one_solve(tmp_path: Path) -> None:
    # a one-node staging is striped over the 12 BB nodes (weight 1/12, cap 1250/12 each); a
    # checkpoint of c001 (weight 1) shares bb01 with one stripe: level L with L/12 + L = 1250
    level = 1250 * 12 / 13
    (tmp_path / FLOWS_DIR).mkdir()
    (tmp_path / FLOWS_DIR / "1.1.flow").write_text(
        "job=1 slurm_job=- phase=1 channel=checkpoint mb=5 time_scale=1 pid=1 nodes=c001\n"
    )
    register(tmp_path, Transfer(9, "in", 1, 1000.0, 1.0, os.getpid()))
    publish(tmp_path, MACHINE, print)
    assert _rates(tmp_path) == f"1.1 {level:.6f}\n"
    # solved for the checkpoint and the staging, and says so (the event clock reads it)
    assert (tmp_path / RATES).read_text().startswith(f"#sig {set_signature(tmp_path)}\n")
    assert set_signature(tmp_path) not in ("0", "")
    # the staging command sees the same: its slowest stripe (on bb01) gets L / 12 for 1/12 of the bytes
    mine = staging_rate(Transfer(9, "in", 1, 1000.0, 1.0, os.getpid()), active_transfers(tmp_path), MACHINE,
                        tmp_path)  # fmt: skip
    assert mine == pytest.approx(level * 1e6, rel=1e-12)


def test_slow_tier_writes_to_the_pfs_without_a_bb_node() -> None:
    # one node alone: its card, 1250 MB/s; two jobs of 8 nodes on different chassis: no BB node
    # between them, both on the PFS's 5000 MB/s, 2500 each (8 cards would allow 10,000)
    assert flow_rates([flow(1, "pfs", "c001")], MACHINE).tolist() == [1250.0]
    pair = [flow(1, "pfs", "c[001-008]"), flow(2, "pfs", "c[009-016]")]
    assert flow_rates(pair, MACHINE).tolist() == [2500.0, 2500.0]


def _rates(directory: Path) -> str:
    """The rates file's lines after its ``#sig`` line (the set it solved for, io_events)."""
    lines = (directory / RATES).read_text().splitlines(keepends=True)
    return "".join(line for line in lines if not line.startswith("#sig "))
