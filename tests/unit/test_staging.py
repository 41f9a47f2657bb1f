"""Live staging (burst_buffer/lua's data_in/out): directives, fair-share rates, one transfer's time.

Default platform: 12 BB nodes of 1250 MB/s, a PFS link of 5000 MB/s, network cards of
1250 MB/s. A job's data is striped over the 12 BB nodes (12 flows of weight nodes/12, each
capped at nodes x 1250 / 12 MB/s), all crossing the PFS link.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.emulation.iolive.io_events import ENDS_DIR, parse_publication, set_signature, staging_name
from harness.emulation.iolive.staging import (
    RECORDS,
    StagingError,
    directive_line,
    main,
    parse_directive,
    run_transfer,
    transfer_of,
    transfer_rates,
)
from harness.emulation.iolive.transfers import ACTIVE_DIR, Transfer, active_transfers, register
from harness.model.clock import VirtualClock
from harness.model.timescale import TimeScale
from harness.platform import PlatformError, load_platform, platform_text
from harness.slurm.config import SchedulerConfig, render_slurm_files

MB = 1e6
MACHINE = load_platform().machine


def _t(job: int, nodes: int, mb: float = 1000.0, scale: float = 1.0, pid: int = 0) -> Transfer:
    return Transfer(job, "in", nodes, mb, scale, pid)


def test_one_job_of_four_nodes_gets_the_whole_pfs() -> None:
    # 12 flows of weight 1/3: the PFS fills at 1250 per unit weight = each flow's cap 416.67
    assert transfer_rates([_t(1, 4)], MACHINE, TimeScale.of_speedup(1.0))[0] == pytest.approx(
        5000 * MB, rel=1e-12
    )


def test_one_node_job_is_held_by_its_network_card() -> None:
    assert transfer_rates([_t(1, 1)], MACHINE, TimeScale.of_speedup(1.0))[0] == pytest.approx(
        1250 * MB, rel=1e-12
    )


def test_two_jobs_share_the_pfs_by_their_node_counts() -> None:
    assert list(transfer_rates([_t(1, 4), _t(2, 4)], MACHINE, TimeScale.of_speedup(1.0))) == pytest.approx(
        [2500 * MB] * 2
    )
    # weights 1/12 and 8/12 per flow: PFS full at 5000 / 9 per unit weight, x12 flows
    got = transfer_rates([_t(1, 1), _t(2, 8)], MACHINE, TimeScale.of_speedup(1.0))
    assert list(got) == pytest.approx([5000 / 9 * MB, 40000 / 9 * MB], rel=1e-12)


def test_time_scale_multiplies_the_rates() -> None:
    assert transfer_rates([_t(1, 4)], MACHINE, TimeScale.of_speedup(10.0))[0] == pytest.approx(
        50_000 * MB, rel=1e-12
    )


def test_directive_round_trip_and_errors() -> None:
    line = directive_line(4, 4800, 2400.5, TimeScale.of_speedup(100.0))
    assert line == "#HARNESS_IO nodes=4 stage_in_mb=4800 stage_out_mb=2400.5 time_scale=100"
    script = f"#!/bin/sh\n#BB_LUA pool=bb capacity=4800\n{line}\nexec sigsleep\n"
    expected = {"nodes": 4, "stage_in_mb": 4800.0, "stage_out_mb": 2400.5, "time_scale": 100.0}
    assert parse_directive(script) == expected
    t = transfer_of(script, 17, "out")
    assert (t.job, t.kind, t.nodes, t.mb, t.time_scale, t.pid) == (17, "out", 4, 2400.5, 100.0, os.getpid())
    with pytest.raises(StagingError, match=r"job.sh: no #HARNESS_IO line"):
        parse_directive("#!/bin/sh\n", "job.sh")
    with pytest.raises(StagingError, match=r"job.sh:2: unknown field 'speed=3'"):
        parse_directive("#!/bin/sh\n#HARNESS_IO speed=3\n", "job.sh")
    with pytest.raises(StagingError, match=r"job.sh:1: stage_in_mb='x' is not a number"):
        parse_directive("#HARNESS_IO stage_in_mb=x\n", "job.sh")
    with pytest.raises(StagingError, match=r":1: missing stage_out_mb, time_scale"):
        parse_directive("#HARNESS_IO nodes=1 stage_in_mb=3\n")
    with pytest.raises(StagingError, match=r"nodes must be >= 1"):
        parse_directive("#HARNESS_IO nodes=0 stage_in_mb=3 stage_out_mb=1 time_scale=1\n")
    with pytest.raises(StagingError, match="kind must be one of"):
        transfer_of(script, 1, "sideways")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, dt: float) -> None:
        self.now += dt


def test_transfer_alone_lasts_size_over_rate(tmp_path: Path) -> None:
    clock = FakeClock()
    rec = run_transfer(_t(5, 4, 1000.0), MACHINE, tmp_path, tick=0.1, clock=clock, sleep=clock.sleep)
    assert rec["seconds"] == pytest.approx(0.2) and rec["solo_s"] == pytest.approx(0.2)
    assert rec["mean_mbps"] == pytest.approx(5000.0)
    assert not list((tmp_path / ACTIVE_DIR).iterdir())  # unregistered at the end
    lines = (tmp_path / RECORDS).read_text().splitlines()
    assert [json.loads(x)["job"] for x in lines] == [5]


def test_transfer_beside_another_takes_twice_as_long(tmp_path: Path) -> None:
    register(tmp_path, _t(6, 4, 10_000.0, pid=os.getpid()))  # a live process: counts
    register(tmp_path, Transfer(7, "out", 4, 10_000.0, 1.0, pid=2**22 + 12345))  # no such pid: ignored
    assert [t.job for t in active_transfers(tmp_path)] == [6]
    assert sorted(p.name for p in (tmp_path / ACTIVE_DIR).iterdir()) == ["6.in.json"]  # the dead one removed
    clock = FakeClock()
    rec = run_transfer(_t(5, 4, 1000.0), MACHINE, tmp_path, tick=0.1, clock=clock, sleep=clock.sleep)
    assert rec["seconds"] == pytest.approx(0.4) and rec["solo_s"] == pytest.approx(0.2)
    assert rec["min_mbps"] == pytest.approx(2500.0)


def test_main_reports_a_bad_script_clearly(tmp_path: Path, capsys) -> None:
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n#HARNESS_IO nodes=2 stage_in_mb=-1 stage_out_mb=0 time_scale=1\n")
    assert main(["in", "3", str(script), "--dir", str(tmp_path / "io")]) == 2
    assert f"{script}:2: stage_in_mb must be positive" in capsys.readouterr().err


def test_main_with_nothing_to_move_returns_at_once(tmp_path: Path) -> None:
    script = tmp_path / "job.sh"
    script.write_text("#HARNESS_IO nodes=2 stage_in_mb=0 stage_out_mb=5 time_scale=1\n")
    assert main(["in", "3", str(script), "--dir", str(tmp_path / "io")]) == 0
    assert not (tmp_path / "io" / RECORDS).exists()


def test_lua_mode_renders_the_plugin_files() -> None:
    platform = load_platform()
    files = render_slurm_files(platform, SchedulerConfig(burst_buffer="lua"))
    assert "BurstBufferType=burst_buffer/lua" in files["slurm.conf"]
    assert "StageInTimeout=86400\n" in files["burst_buffer.conf"]
    lua = files["burst_buffer.lua"]
    assert 'local POOL = "bb"' in lua and "local POOL_MB = 480000" in lua
    assert "-m harness.emulation.iolive.staging --platform /etc/slurm/platform.toml --dir /shared/io" in lua
    assert files["platform.toml"] == platform_text(platform)
    plain = render_slurm_files(platform, SchedulerConfig())
    assert "BurstBufferType" not in plain["slurm.conf"] and "burst_buffer.lua" not in plain
    with pytest.raises(ValueError, match="burst_buffer must be 'licenses' or 'lua'"):
        SchedulerConfig(burst_buffer="datawarp")  # type: ignore[arg-type]


def test_on_the_virtual_clock_the_staging_leaves_the_preload_and_reads_the_page() -> None:
    lua = render_slurm_files(load_platform(), SchedulerConfig(burst_buffer="lua", clock="virtual"))[
        "burst_buffer.lua"
    ]
    assert (
        'local STAGE = "env -u LD_PRELOAD /opt/harness/bin/python -m harness.emulation.iolive.staging' in lua
    )
    assert "--dir /shared/io --clock-page /shared/clock/page" in lua


def test_main_on_a_virtual_clock_moves_the_bytes_in_virtual_seconds(tmp_path: Path) -> None:
    """50,000 MB of a 4-node job alone at the PFS's 5,000 MB/s: 10 virtual seconds, which a
    clock at x20 runs in 0.5 real seconds (the wall clock would take 10)."""
    page = tmp_path / "page"
    VirtualClock.create(page, start=5_000.0, rate=20.0, poll_s=0.02).close()
    script = tmp_path / "job.sh"
    script.write_text("#HARNESS_IO nodes=4 stage_in_mb=50000 stage_out_mb=0 time_scale=1\n")
    began = time.monotonic()
    assert main(["in", "3", str(script), "--dir", str(tmp_path / "io"), "--clock-page", str(page)]) == 0
    real = time.monotonic() - began
    (rec,) = [json.loads(x) for x in (tmp_path / "io" / RECORDS).read_text().splitlines()]
    assert rec["solo_s"] == pytest.approx(10.0)
    assert 10.0 <= rec["seconds"] < 10.0 + 20 * 0.1 and real < 3.0  # latency at most 0.1 real s, x20
    assert 5_000.0 < rec["start"] < 5_000.0 + 20 * 3.0


def test_main_names_a_page_that_is_not_a_clock(tmp_path: Path, capsys) -> None:
    script = tmp_path / "job.sh"
    script.write_text("#HARNESS_IO nodes=4 stage_in_mb=5 stage_out_mb=0 time_scale=1\n")
    (tmp_path / "page").write_bytes(b"\0" * 4096)
    assert (
        main(["in", "3", str(script), "--dir", str(tmp_path / "io"), "--clock-page", str(tmp_path / "page")])
        == 2
    )
    assert f"{tmp_path / 'page'}: not a virtual clock page" in capsys.readouterr().err


def test_platform_text_needs_the_file_it_came_from(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text((Path(__file__).parents[2] / "harness/platform/default.toml").read_text())
    platform = load_platform(path)
    assert platform_text(platform.redeployed(controller_port=6961)) == path.read_text()
    path.write_text(path.read_text().replace("capacity_mb = 40000", "capacity_mb = 1000"))
    with pytest.raises(PlatformError, match="changed since the platform was loaded"):
        platform_text(platform)


def test_replay_writes_the_burst_buffer_lines_instead_of_the_license() -> None:
    from harness.emulation.head.io_requests import io_directives
    from harness.emulation.head.replay import ReplayOptions, sbatch_command

    job = {"job_id": 9, "nodes": 4, "bb_per_node_mb": 1200, "runtime": 5.0, "walltime": 18.0,
           "io_stage_in_mb": 1200.0, "io_stage_out_mb": 1200.0, "io_time_scale": 100.0}  # fmt: skip
    assert io_directives(job, "bb") == [
        "#BB_LUA pool=bb capacity=4800",
        "#HARNESS_IO nodes=4 stage_in_mb=4800 stage_out_mb=4800 time_scale=100",
    ]
    cmd = sbatch_command(job, ReplayOptions(run_dir=Path("/r"), run_id="x"), 0.0)
    assert not any(c.startswith("--licenses") for c in cmd)
    assert cmd[-1].startswith("--wrap=#BB_LUA pool=bb capacity=4800\n#HARNESS_IO nodes=4 ")
    assert cmd[-1].split("\n")[2].startswith("exec /usr/local/bin/sigsleep --runtime 5.000000")
    alloc_only = {k: v for k, v in job.items() if not k.startswith("io_")}
    assert io_directives(alloc_only, "bb") == []
    assert "--licenses=bb:4800" in sbatch_command(
        alloc_only, ReplayOptions(run_dir=Path("/r"), run_id="x"), 0.0
    )


def test_staging_records_join_by_slurm_id_after_t0() -> None:
    import pandas as pd

    from harness.emulation.iolive.staging_results import add_staging, staging_stats

    results = pd.DataFrame({"job_id": [1, 2, 3], "slurm_job_id": pd.array([11, 12, None], dtype="Int64")})
    records = [
        {"job": 11, "kind": "in", "start": 105.0, "seconds": 4.0, "solo_s": 2.0},
        {"job": 11, "kind": "out", "start": 120.0, "seconds": 1.0, "solo_s": 1.0},
        {"job": 12, "kind": "in", "start": 50.0, "seconds": 9.0, "solo_s": 9.0},  # an earlier run's job 12
    ]
    out = add_staging(results, records, t0=100.0)
    assert list(out["stage_in_begin"].fillna(-1)) == [5.0, -1, -1]
    assert list(out["stage_in_s"].fillna(-1)) == [4.0, -1, -1]
    assert list(out["stage_out_solo_s"].fillna(-1)) == [1.0, -1, -1]
    expected = {"staged_in": 1, "mean_stage_in_s": 4.0, "mean_stage_in_dilation": 2.0}
    expected |= {"staged_out": 1, "mean_stage_out_s": 1.0, "mean_stage_out_dilation": 1.0}
    assert staging_stats(out) == expected


def test_bandwidth_license_policy_renders_the_pfs_as_a_license() -> None:
    from harness.slurm.native import scheduler_for

    sched = scheduler_for("slurm-backfill-io-aware-2")
    assert (sched.mode, sched.bf_licenses, sched.reserve_depth, sched.bandwidth_license) == (
        "backfill",
        True,
        2,
        True,
    )
    assert not scheduler_for("slurm-backfill-2").bandwidth_license
    assert not scheduler_for("slurm-backfill-no-future-2").bf_licenses
    conf = render_slurm_files(load_platform(), sched)["slurm.conf"]
    assert "\nLicenses=bb:480000,pfsbw:5000\n" in conf
    assert (
        "\nLicenses=bb:480000\n"
        in render_slurm_files(load_platform(), scheduler_for("slurm-backfill-2"))["slurm.conf"]
    )


def test_replay_asks_for_nodes_times_the_drain_rate() -> None:
    from harness.emulation.head.replay import ReplayOptions, sbatch_command

    job = {
        "job_id": 9,
        "nodes": 3,
        "bb_per_node_mb": 100,
        "runtime": 5.0,
        "walltime": 18.0,
        "pfs_mbps_per_node": 18.0,
    }
    cmd = sbatch_command(job, ReplayOptions(run_dir=Path("/r"), run_id="x"), 0.0)
    assert "--licenses=bb:300,pfsbw:54" in cmd
    cmd = sbatch_command(
        {**job, "pfs_mbps_per_node": 17.9}, ReplayOptions(run_dir=Path("/r"), run_id="x"), 0.0
    )
    assert "--licenses=bb:300,pfsbw:54" in cmd  # 53.7 MB/s rounded up: never under-reserve


def test_staging_agreement_in_original_seconds_and_the_io_aware_twin() -> None:
    import pandas as pd

    from harness.emulation.collect.fidelity import simulator_twin, staging_agreement

    emu = pd.DataFrame({"stage_in_s": [10.0, 30.0], "stage_out_s": [5.0, 5.0]})
    sim = pd.DataFrame({"stage_in_s": [16.0, 24.0], "stage_out_s": [5.0, 5.0]})
    got = staging_agreement(emu, sim)
    assert got["mean_stage_in_s"] == {"emulated": 20.0, "simulated": 20.0, "rel_diff": 0.0}
    assert got["mean_stage_out_s"]["rel_diff"] == 0.0
    assert simulator_twin("slurm-backfill-io-aware-1") == "io-easy"
    assert simulator_twin("slurm-backfill-1") == "backfill-1"


class DrivenClock(FakeClock):
    """A held clock that a driver jumps to the first published end, as the event clock does;
    ``late``: each wake comes this many virtual seconds after the asked-for sleep instead."""

    def __init__(self, directory: Path, name: str, late: float = 0.0) -> None:
        super().__init__()
        self.directory, self.name, self.late, self.seen = directory, name, late, []

    def sleep(self, dt: float) -> None:
        if self.late:
            self.now += dt + self.late
            return
        pub = parse_publication((self.directory / ENDS_DIR / self.name).read_text())
        self.seen.append(pub)
        assert pub.at == self.now and pub.sig == set_signature(self.directory)
        self.now = pub.end


def test_on_the_event_clock_a_transfer_publishes_its_end_and_ends_there(tmp_path: Path) -> None:
    # 8,000 MB beside job 6's 10,000 MB: 2,500 MB/s each, 3.2 s
    register(tmp_path, _t(6, 4, 10_000.0, pid=os.getpid()))
    clock = DrivenClock(tmp_path, staging_name(5, "in"))
    rec = run_transfer(_t(5, 4, 8000.0), MACHINE, tmp_path, clock=clock, sleep=clock.sleep, events=True)
    assert [p.end for p in clock.seen] == [pytest.approx(1003.2)]
    assert (rec["start"], rec["end"]) == (1000.0, pytest.approx(1003.2))
    assert not (tmp_path / ENDS_DIR / staging_name(5, "in")).exists()  # withdrawn


def test_a_late_wake_ends_the_transfer_where_its_bytes_ran_out(tmp_path: Path) -> None:
    # 1,000 MB alone at 5,000 MB/s: 0.2 s; the one wake comes at 0.25 s
    clock = DrivenClock(tmp_path, "-", late=0.05)
    rec = run_transfer(_t(5, 4, 1000.0), MACHINE, tmp_path, tick=0.5, clock=clock, sleep=clock.sleep)
    assert clock.now == pytest.approx(1000.25) and rec["end"] == pytest.approx(1000.2)


def test_the_staging_command_starts_without_pandas() -> None:
    """Every stage-in and stage-out starts this command: with pandas (through the drains
    module) its imports took 1.35 s of CPU, 135 virtual s at x100, and bursts of stage-ins
    overloaded the host (docs/io-live.md, "Cause, found")."""
    code = "import sys, harness.emulation.iolive.staging; print('pandas' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "False"
