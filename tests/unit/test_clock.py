"""The virtual clock page (harness.model.clock): written by its controller, read by everyone;
the speed-up options and what refuses a run that cannot have one."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import harness.model.clock as clock_module
from harness.cli import main
from harness.cluster.hosts.backend import conf_value
from harness.cluster.node.clock_ticker import tick
from harness.emulation.run.experiment import RunError, clock_for, complete_wait_for
from harness.emulation.run.specs import ClusterSpec, ReplaySpec, RunOptions, WorkloadSpec
from harness.model.clock import (
    MAX_SPEEDUP,
    ClockError,
    Reading,
    VirtualClock,
    faketime_line,
    preload_env,
    write_faketime,
)
from harness.model.io_models import IO_AWARE
from harness.platform import load_platform
from harness.slurm.config import SchedulerConfig, render_slurm_files

V0 = 2_000_000_000.0


def test_an_affine_clock_reads_base_plus_real_time_times_rate() -> None:
    reading = Reading(base_v=V0, base_real=100.0, rate=50.0, poll_s=0.1)
    assert reading.at(100.0) == V0 and reading.at(102.5) == V0 + 125.0
    assert Reading(V0, 100.0, 0.0, 0.02).at(1e9) == V0  # held: no time passes


def test_a_clock_page_created_runs_at_its_rate_and_readers_see_what_the_controller_writes(
    tmp_path: Path,
) -> None:
    clock = VirtualClock.create(tmp_path / "page", start=V0, rate=100.0)
    reader = VirtualClock(tmp_path / "page")
    first = reader.now()
    time.sleep(0.05)
    assert reader.now() - first == pytest.approx(5.0, abs=1.5)  # 0.05 real s at x100
    held = clock.hold()
    assert reader.reading().rate == 0.0 and reader.now() == held
    clock.jump(held + 3600.0)
    assert reader.now() == held + 3600.0
    clock.set(None, 10.0)
    assert reader.rate == 10.0 and reader.now() >= held + 3600.0


def test_the_clock_never_goes_backwards_and_refuses_bad_rates(tmp_path: Path) -> None:
    clock = VirtualClock.create(tmp_path / "page", start=V0, rate=0.0)
    with pytest.raises(ClockError, match="only goes forward"):
        clock.jump(V0 - 1.0)
    for rate in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ClockError, match="rate"):
            clock.set(None, rate)
    assert clock.now() == V0


@pytest.mark.parametrize("content", [None, b"", b"\0" * 4096])
def test_a_file_that_is_not_a_clock_page_is_named(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "page"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ClockError, match=str(path)):
        VirtualClock(path)


def test_the_faketime_file_freezes_the_daemons_at_the_clock_and_scales_their_waits(tmp_path: Path) -> None:
    """libfaketime's freeze mode: the instant without @ or +, and x<S> for the waits (x1 held)."""
    running = Reading(V0, 10.0, 50.0, 0.1)
    assert faketime_line(running, 12.0) == f"{V0 + 100.0:.6f} x50\n"
    assert faketime_line(Reading(V0, 10.0, 0.0, 0.02), 99.0) == f"{V0:.6f} x1\n"
    target = tmp_path / "faketime"
    write_faketime(target, faketime_line(running, 10.0))
    assert target.read_text() == f"{V0:.6f} x50\n" and not (tmp_path / "faketime.tmp").exists()
    env = preload_env("/shared/clock/faketime")
    assert env["FAKETIME_TIMESTAMP_FILE"] == "/shared/clock/faketime" and env["FAKETIME_NO_CACHE"] == "1"
    assert "FAKETIME" not in env  # set, it would override the file
    assert env["FAKETIME_WAIT_MS"] == "50"


def test_the_slurmd_daemons_wait_longer_than_a_kill_takes() -> None:
    """A cut condvar wait returns ETIMEDOUT: slurmstepd's terminate monitor would drain a node
    whenever killing a step took over 50 ms real ("Kill task failed"). So slurmctld, whose
    loops must see a jump, waits 50 ms, the slurmd daemons 1,000 ms."""
    files = render_slurm_files(load_platform(), SchedulerConfig(clock="virtual"))
    ctld, nodes = files["clock.env"].splitlines(), files["clock-nodes.env"].splitlines()
    assert "FAKETIME_WAIT_MS=50" in ctld and "FAKETIME_WAIT_MS=1000" in nodes
    assert set(ctld) ^ set(nodes) == {"FAKETIME_WAIT_MS=50", "FAKETIME_WAIT_MS=1000"}
    assert "clock-nodes.env" not in render_slurm_files(load_platform(), SchedulerConfig())


def test_timeouts_of_a_real_answer_are_raised_on_the_virtual_clock_only() -> None:
    """A real delay lasts speed-up times as long in virtual seconds: 300 s of MessageTimeout
    are 3 real s at x100; the wall clock keeps the platform's 30 s and Slurm's defaults."""
    keys = ("MessageTimeout", "TCPTimeout", "BatchStartTimeout")
    virtual = render_slurm_files(load_platform(), SchedulerConfig(clock="virtual"))["slurm.conf"]
    wall = render_slurm_files(load_platform(), SchedulerConfig())["slurm.conf"]
    raised = {"MessageTimeout": "300", "TCPTimeout": "100", "BatchStartTimeout": "300"}
    assert {key: conf_value(virtual, key) for key in keys} == raised
    assert {key: conf_value(wall, key) for key in keys} == {
        "MessageTimeout": "30",
        "TCPTimeout": None,
        "BatchStartTimeout": None,
    }


def opts(speedup: float | None, **workload: object) -> RunOptions:
    return RunOptions(WorkloadSpec(**workload), ClusterSpec(), ReplaySpec(speedup=speedup))  # type: ignore[arg-type]


def test_a_virtual_clock_needs_unshrunk_times_on_the_docker_cluster() -> None:
    assert clock_for(opts(None)) == "wall" and clock_for(opts(50.0, shrink=0.0)) == "virtual"
    with pytest.raises(RunError, match="no --shrink"):
        clock_for(opts(50.0, shrink=0.99))
    assert clock_for(opts(50.0, shrink=0.0, model=IO_AWARE)) == "virtual"
    events = RunOptions(WorkloadSpec(shrink=0.0, model=IO_AWARE), ClusterSpec(), ReplaySpec(events=True))
    assert clock_for(events) == "virtual"  # live I/O publishes its ends for the event clock
    remote = RunOptions(WorkloadSpec(shrink=0.0), ClusterSpec(backend="ssh://u@h"), ReplaySpec(speedup=10.0))
    with pytest.raises(RunError, match="local Docker cluster"):
        clock_for(remote)


def test_slurm_schedules_nothing_while_a_job_completes_at_a_fixed_speed_up_only() -> None:
    """The real milliseconds of a job's release are seconds at x100: CompleteWait keeps every
    pass from seeing a job half released. The event clock and the wall clock do without."""
    events = RunOptions(WorkloadSpec(shrink=0.0), ClusterSpec(), ReplaySpec(events=True))
    assert (complete_wait_for(opts(100.0, shrink=0.0)), complete_wait_for(events)) == (300, 0)
    assert complete_wait_for(opts(50.0, shrink=0.0)) == 150  # 3 real s of release at any speed-up
    assert complete_wait_for(opts(None, shrink=0.9)) == 0
    fixed = render_slurm_files(load_platform(), SchedulerConfig(clock="virtual", complete_wait_s=60))
    assert conf_value(fixed["slurm.conf"], "CompleteWait") == "60"
    held = render_slurm_files(load_platform(), SchedulerConfig(clock="virtual"))["slurm.conf"]
    assert conf_value(held, "CompleteWait") is None
    cell = SchedulerConfig(clock="virtual", complete_wait_s=60, settings=(("CompleteWait", 5),))
    assert conf_value(render_slurm_files(load_platform(), cell)["slurm.conf"], "CompleteWait") == "5"


@pytest.mark.parametrize("value", [0.0, -5.0, float("nan"), float("inf"), MAX_SPEEDUP + 1])
def test_a_speed_up_outside_what_was_measured_is_refused(value: float) -> None:
    with pytest.raises(ValueError, match="speed-up"):
        ReplaySpec(speedup=value)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--speedup", "0"], "expected a finite number in (0, 100]"),
        (["--speedup", "-3"], "expected a finite number in (0, 100]"),
        (["--speedup", "nan"], "expected a finite number in (0, 100]"),
        (["--speedup", "1000"], "the highest speed-up measured to keep Slurm healthy"),
        (["--speedup", "10", "--shrink", "0.9"], "give --speedup or --shrink"),
    ],
)
def test_run_refuses_a_bad_speed_up_in_one_line(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["run", *args, "--dry-run"])
    assert result.exit_code == 2 and message in result.output, result.output
    assert "Traceback" not in result.output


def test_the_estimate_of_a_speed_up_divides_the_span(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["run", "--speedup", "50", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "virtual, x50" in result.output
    # the bundled slice spans 56,997 s of trace: 1,140 s at x50, plus a minute of overhead and
    # 0.09 s for each of its 200 jobs' ends, where the clock stands while Slurm releases it
    assert "expected wall    at least 20 min 18 s per run" in result.output


def test_the_estimate_says_where_a_fixed_speed_up_was_measured_to_hold() -> None:
    from harness.emulation.run.estimate import fixed_rate_note

    assert fixed_rate_note(100.0, 108) is None  # the bundled slice's machine: measured, held
    assert fixed_rate_note(100.0, 1_152) is None  # RICC's, with the release holds
    assert fixed_rate_note(None, 4_320) is None  # the event clock (or the wall clock)
    note = fixed_rate_note(50.0, 1_153)
    assert note is not None and "x50 on 1,153 nodes" in note and "up to 1,152 nodes, not on more" in note
    assert "--clock events" in note
    result = CliRunner().invoke(main, ["run", "--speedup", "50", "--platform", "cts1", "--dry-run"])
    assert result.exit_code == 0 and "x50 on 4,3" in result.output, result.output
    default = CliRunner().invoke(main, ["run", "--speedup", "50", "--dry-run"])
    assert default.exit_code == 0 and "note" not in default.output


def test_page_readers_wait_while_a_jump_moves_the_daemons_then_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both orders of the two writes go wrong on a held clock that jumps from V0 to V0 + 250:
    a page reader that saw V0 + 250 before the daemons' file did would end a job that the
    daemons stamp at V0 (a jump early); a job that Slurm starts at V0 + 250 while the page still
    reads V0 would take V0 as its start (a jump early: seen once in a loaded CI run). So the
    page's readers wait from before the file is written until the page is: a reader that asks
    in between gets V0 + 250, after the file has it."""
    faketime = tmp_path / "faketime"
    VirtualClock.create(tmp_path / "page", start=V0, rate=0.0).close()
    clock = VirtualClock(tmp_path / "page", writable=True, faketime=faketime)
    reader = VirtualClock(tmp_path / "page")
    asked: list[float] = []
    asking = threading.Thread(target=lambda: asked.append(reader.now()))

    def write_then_ask(path: Path, line: str) -> None:  # a reader asks just after the daemons moved
        write_faketime(path, line)
        asking.start()
        time.sleep(0.2)
        assert asked == []  # still waiting: the page has not moved yet

    monkeypatch.setattr(clock_module, "write_faketime", write_then_ask)
    clock.jump(V0 + 250.0)
    asking.join(timeout=5)
    assert asked == [V0 + 250.0]
    assert faketime.read_text() == f"{V0 + 250.0:.6f} x1\n" and reader.now() == V0 + 250.0
    monkeypatch.setattr(clock_module, "write_faketime", write_faketime)
    clock.set(None, 20.0)  # a rate too: the file scales the daemons' waits from the same instant
    assert faketime.read_text().endswith(" x20\n")


def test_a_failed_write_of_the_daemons_clock_leaves_the_page_readable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    VirtualClock.create(tmp_path / "page", start=V0, rate=0.0).close()
    clock = VirtualClock(tmp_path / "page", writable=True, faketime=tmp_path / "missing" / "faketime")
    with pytest.raises(FileNotFoundError):
        clock.jump(V0 + 10.0)
    assert VirtualClock(tmp_path / "page").now() == V0  # not left waiting, not moved


def test_the_ticker_never_writes_between_the_controllers_file_and_page(tmp_path: Path) -> None:
    """Both take the page's lock: a ticker that read the page just before a jump cannot put
    the instant before the jump back into the file after the controller wrote it."""
    VirtualClock.create(tmp_path / "page", start=V0, rate=0.0).close()
    clock = VirtualClock(tmp_path / "page", writable=True, faketime=tmp_path / "faketime")
    with clock.locked():
        until = time.time() + 0.3
        ticker = threading.Thread(target=tick, args=(tmp_path / "page", tmp_path / "faketime", 0.001, until))
        ticker.start()
        time.sleep(0.05)
        assert not (tmp_path / "faketime").exists()  # the ticker waits for the lock
    clock.jump(V0 + 60.0)
    ticker.join()
    assert (tmp_path / "faketime").read_text() == f"{V0 + 60.0:.6f} x1\n"


def test_the_daemons_can_stay_a_second_behind_the_page_and_never_go_back(tmp_path: Path) -> None:
    """The event clock moves the page to an instant where jobs end, the daemons a second behind
    (their faketime file and the ticker's line), then the daemons up to the page."""
    faketime = tmp_path / "faketime"
    VirtualClock.create(tmp_path / "page", start=V0, rate=0.0).close()
    clock = VirtualClock(tmp_path / "page", writable=True, faketime=faketime)
    reader = VirtualClock(tmp_path / "page")
    clock.jump(V0 + 100.0, daemons_lag=1.0)
    assert reader.now() == V0 + 100.0 and reader.daemons_now() == V0 + 99.0
    assert faketime.read_text() == f"{V0 + 99.0:.6f} x1\n"
    assert faketime_line(reader.reading(), time.time()) == f"{V0 + 99.0:.6f} x1\n"  # the ticker's
    clock.jump(V0 + 100.0)
    assert reader.daemons_now() == V0 + 100.0 and faketime.read_text() == f"{V0 + 100.0:.6f} x1\n"
    with pytest.raises(ClockError, match="daemons' clock only goes forward"):
        clock.jump(V0 + 100.5, daemons_lag=1.0)


@pytest.mark.parametrize(
    ("args", "clock_line"),
    [
        ([], "virtual, moved by events"),
        (["--shrink", "0.9"], None),
        (["--model", "io-aware"], "virtual, moved by events"),  # live I/O publishes its ends
        (["--preempt", "suspend", "--priority", "size:4"], None),
        (["--speedup", "50"], "virtual, x50"),
        (["--clock", "wall"], None),
    ],
)
def test_the_default_clock_is_the_event_clock_unless_the_run_needs_the_wall_clock(
    args: list[str], clock_line: str | None
) -> None:
    result = CliRunner().invoke(main, ["run", "--dry-run", "--name", "nosuchvclockcluster", *args])
    assert result.exit_code == 0, result.output
    shown = [line.strip() for line in result.output.splitlines()]
    lines = [line.split(None, 1)[1] for line in shown if line.startswith("clock ")]
    if clock_line is None:  # the wall clock: the block names the shrink instead
        assert not lines and "  shrink " in result.output
    else:
        assert lines and lines[0].startswith(clock_line)


def test_a_command_exec_d_on_a_virtual_clock_cluster_reads_the_clusters_clock(tmp_path: Path) -> None:
    """`harness cluster exec -- sacct` after an event-clock run: sacct's window ends at its own
    now, which must be the cluster's (ahead of the host's), so it runs under the daemons' preload."""
    from harness.cluster.containers.clock import on_the_clusters_clock
    from harness.cluster.containers.state_dir import ClusterState
    from harness.slurm.config import CLOCK_ENV

    state = ClusterState.for_cluster("vc", root=tmp_path)
    assert on_the_clusters_clock(state, ["sacct", "-X"]) == ["sacct", "-X"]  # the wall clock
    state.etc.mkdir(parents=True)
    (state.etc / CLOCK_ENV).write_text("")
    argv = on_the_clusters_clock(state, ["sacct", "-X"])
    assert argv[0] == "env" and argv[-2:] == ["sacct", "-X"]
    assert f"LD_PRELOAD={clock_module.LIBFAKETIME}" in argv
    assert "FAKETIME_TIMESTAMP_FILE=/shared/clock/faketime" in argv


def test_a_nudge_moves_the_daemons_within_their_second_and_the_next_lead_keeps_them_there(
    tmp_path: Path,
) -> None:
    """After the agent's release the driver nudges the daemons 1 ms on (Slurm's main cycle may
    run again, time() still reads the instant); the page stays. A later lead whose daemons'
    instant is that same second leaves them where the nudges put them; the page moves."""
    faketime = tmp_path / "faketime"
    VirtualClock.create(tmp_path / "page", start=V0, rate=0.0).close()
    clock = VirtualClock(tmp_path / "page", writable=True, faketime=faketime)
    reader = VirtualClock(tmp_path / "page")
    assert clock.nudge() == pytest.approx(V0 + 0.001)
    clock.nudge()
    assert reader.now() == V0 and reader.daemons_now() == pytest.approx(V0 + 0.002)
    assert faketime.read_text() == f"{V0 + 0.002:.6f} x1\n" and reader.daemons_caught_up()
    clock.jump(V0 + 1.0, daemons_lag=1.0)  # an end at V0 + 1: the daemons would lead to V0
    assert reader.now() == V0 + 1.0 and reader.daemons_now() == pytest.approx(V0 + 0.002)
    assert not reader.daemons_caught_up()
    clock.jump(V0 + 1.0)
    assert reader.daemons_now() == V0 + 1.0 and reader.daemons_caught_up()
