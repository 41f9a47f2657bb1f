"""sigsleep on the emulation's virtual clock (``--clock``, harness.model.clock): every time
it logs and every wait is virtual, at a fixed speed-up and on a clock that stands still and
jumps."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from harness.model.clock import VirtualClock
from tests.unit import test_sigsleep as base
from tests.unit.test_sigsleep import start, wait_exit

# the build and the clean-up of test_sigsleep, as fixtures of this module too
binary, no_leftovers = base.sigsleep, base._no_leftovers

V0 = 1_900_000_000.0  # a virtual epoch far from the real one


def records(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_a_fixed_speed_up_runs_virtual_seconds_in_real_hundredths(binary: str, tmp_path: Path) -> None:
    """x50: 100 virtual seconds of running take 2 real seconds; the record is virtual."""
    clock = VirtualClock.create(tmp_path / "clock", start=V0, rate=50.0)
    log = tmp_path / "jobs.jsonl"
    began = time.monotonic()
    proc = start(binary, log, "--runtime", "100", "--clock", str(clock.path))
    took = wait_exit(proc, 10) - began
    [rec] = records(log)
    assert rec["reason"] == "completed" and proc.returncode == 0
    assert 1.9 < took < 2.6  # 100 / 50 real seconds, plus start-up
    # 1 virtual s of slack is 20 ms of real time for the wake-up under load (0.05 s, 1 ms real,
    # failed in a CI run at 0.94 s); a record on the wall clock would say 2 s
    assert rec["running"] == pytest.approx(100.0, abs=1.0)
    assert rec["end"] - rec["start"] == pytest.approx(100.0, abs=1.0)
    assert V0 <= rec["start"] < V0 + 50.0 * 0.5  # virtual epoch seconds, not the host's


def test_a_held_clock_holds_the_job_until_it_jumps_to_its_end(binary: str, tmp_path: Path) -> None:
    """Event mode: no virtual time passes while the clock stands still, whatever the real time;
    a jump short of the end keeps the job running, a jump to its end ends it at once."""
    clock = VirtualClock.create(tmp_path / "clock", start=V0, rate=0.0)
    clock.hold()
    log = tmp_path / "jobs.jsonl"
    proc = start(binary, log, "--runtime", "600", "--walltime", "900", "--clock", str(clock.path))
    time.sleep(0.5)
    assert proc.poll() is None
    clock.jump(V0 + 599.0)
    time.sleep(0.3)
    assert proc.poll() is None
    jumped = time.monotonic()
    clock.jump(V0 + 600.0)
    assert wait_exit(proc, 5) - jumped < 0.5
    [rec] = records(log)
    assert rec["reason"] == "completed"
    assert (rec["start"], rec["end"], rec["running"]) == pytest.approx((V0, V0 + 600.0, 600.0), abs=1e-3)


def test_the_walltime_is_virtual_too(binary: str, tmp_path: Path) -> None:
    clock = VirtualClock.create(tmp_path / "clock", start=V0, rate=100.0)
    log = tmp_path / "jobs.jsonl"
    proc = start(binary, log, "--runtime", "500", "--walltime", "120", "--clock", str(clock.path))
    wait_exit(proc, 10)
    [rec] = records(log)
    assert proc.returncode == 124 and rec["reason"] == "timeout"
    # 120 virtual s (1.2 s real at x100; a wall-clock walltime would be 12,000 virtual s); 1 s of
    # slack is 10 ms of real time for the wake-up under load (0.1 s, 1 ms real, failed once)
    assert rec["running"] == pytest.approx(120.0, abs=1.0)


@pytest.mark.parametrize("content", [None, b"", b"x" * 4096])
def test_a_missing_or_foreign_clock_file_is_refused(
    binary: str, tmp_path: Path, content: bytes | None
) -> None:
    path = tmp_path / "clock"
    if content is not None:
        path.write_bytes(content)
    log = tmp_path / "jobs.jsonl"
    proc = start(binary, log, "--runtime", "1", "--clock", str(path))
    wait_exit(proc, 5)
    assert proc.returncode == 2 and "--clock" in proc.stderr.read()
    assert not log.exists() or log.read_text() == ""


def test_a_job_marks_its_start_once_it_has_read_it(binary: str, tmp_path: Path) -> None:
    """``--started``: the line an event-driven clock waits for before it moves, written at the
    job's start (the clock held), not at its end."""
    clock = VirtualClock.create(tmp_path / "clock", start=V0, rate=0.0)
    log, started = tmp_path / "jobs.jsonl", tmp_path / "started.jsonl"
    proc = start(binary, log, "--runtime", "60", "--clock", str(clock.path), "--started", str(started))
    deadline = time.monotonic() + 5
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert records(started) == [{"job_id": 1, "start": V0}] and proc.poll() is None
    clock.jump(V0 + 60.0)
    wait_exit(proc, 5)
    assert records(log)[0]["start"] == V0 and len(records(started)) == 1


def test_sigsleep_takes_no_start_while_the_controller_is_moving_the_clock(
    binary: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job launched by a daemon that already reads the new instant of a jump must not take
    the page's old instant as its start: while the controller writes the daemons' clock and
    then the page, sigsleep waits, and starts at the new instant."""
    import harness.model.clock as clock_module

    clock = VirtualClock.create(tmp_path / "clock", start=V0, rate=0.0)
    clock.faketime = tmp_path / "faketime"
    log = tmp_path / "jobs.jsonl"
    procs = []

    def launch_in_between(path: Path, line: str) -> None:  # as slurmstepd would, at the new instant
        path.write_text(line)
        procs.append(start(binary, log, "--runtime", "0", "--clock", str(clock.path)))
        time.sleep(0.4)
        assert procs[0].poll() is None  # waiting for the page

    monkeypatch.setattr(clock_module, "write_faketime", launch_in_between)
    clock.jump(V0 + 300.0)
    wait_exit(procs[0], 5)
    [rec] = records(log)
    assert rec["start"] == V0 + 300.0 and rec["end"] == V0 + 300.0


def _published(path: Path, wanted: str, timeout: float = 5.0) -> str:
    """The job's publication once it holds ``wanted`` (sigsleep writes it within its 20-ms look)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if wanted in text:
            return text
        time.sleep(0.01)
    raise AssertionError(f"{path}: {wanted!r} never published (last: {text!r})")


def test_on_a_held_clock_each_phase_publishes_its_end_and_the_checkpoint_drains(
    binary: str, tmp_path: Path
) -> None:
    """The event clock's side of sigsleep (io_events): compute 10 s, a checkpoint of 2,000 MB at
    the published 7,000 MB/s (2/7 s: published rounded down, 0.29 us short of its end), compute 5 s. The test
    moves the clock as the driver does, to each published end, and the record has every phase
    to the microsecond, the checkpoint moved whole and handed over as a drain."""
    clock = VirtualClock.create(tmp_path / "clock", start=V0, rate=0.0)
    clock.hold()
    (tmp_path / "rates").write_text("#sig 5e7a\n1.1 7000.000000\n")  # the service's, solved for set 5e7a
    log, ends = tmp_path / "jobs.jsonl", tmp_path / "ends" / "job.1"
    proc = start(binary, log, "--io-dir", str(tmp_path), "--time-scale", "1", "--clock", str(clock.path),
                 "--phases", "compute:10,checkpoint:2000,compute:5")  # fmt: skip
    assert _published(ends, "sig=- ").startswith(f"at={V0:.6f} sig=- end={V0 + 10:.6f} final=0")
    clock.jump(V0 + 10.0)
    moved = V0 + 10.0 + 2.0 / 7.0  # published 285714, 0.29 us short of the true end
    assert f"sig=5e7a end={moved:.6f} final=0" in _published(ends, "sig=5e7a")
    clock.jump(round(moved, 6))  # as the driver reads it
    assert f"sig=- end={moved + 5:.6f} final=1" in _published(ends, "final=1")
    assert "channel=drain" in (tmp_path / "flows" / "1.1.flow").read_text()  # handed over whole
    clock.jump(round(moved + 5, 6))
    wait_exit(proc, 5)
    assert not ends.exists()  # withdrawn at the end
    [rec] = records(log)
    assert rec["reason"] == "completed"
    compute, checkpoint, last = rec["phases"]
    assert checkpoint["moved_mb"] == 2000.0
    spans = [(p["start"] - V0, p["end"] - V0) for p in (compute, checkpoint, last)]
    ends_at = [(0.0, 10.0), (10.0, moved - V0), (moved - V0, moved - V0 + 5)]
    assert spans == [pytest.approx(s, abs=1e-6) for s in ends_at]
