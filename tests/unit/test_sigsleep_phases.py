"""sigsleep --phases on the host: compute phases, transfers at the published rate, suspension.

Tolerances allow a loaded host's wake-up latency (tens of ms at a load of 20 on 2 cores).

The rates file is written by hand here (the contention service's format: ``KEY MBPS``
lines), except in the last test, which runs the real service beside two instances.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.unit import test_sigsleep as base
from tests.unit.test_sigsleep import on_a_quiet_moment, start, wait_exit

CONTENTION = "harness.emulation.iolive.contention"

# the build and the clean-up of test_sigsleep, as fixtures of this module too
binary, no_leftovers = base.sigsleep, base._no_leftovers


def rates(io: Path, text: str) -> None:
    tmp = io / ".rates.tmp"
    tmp.write_text(text)
    os.replace(tmp, io / "rates")


def run(
    binary: str, log: Path, io: Path, phases: str, job_id: int = 1, env: dict | None = None
) -> subprocess.Popen:
    return start(binary, log, "--io-dir", str(io), "--phases", phases, job_id=job_id, env=env)


def record(log: Path) -> dict:
    (line,) = log.read_text().splitlines()
    return json.loads(line)


def test_compute_phases_add_up_and_are_logged(binary: str, tmp_path: Path) -> None:
    def check(log: Path) -> None:
        proc = run(binary, log, tmp_path, "compute:0.3,compute:0.2")
        assert proc.wait(10) == 0, proc.stderr.read() if proc.stderr else ""
        rec = record(log)
        assert rec["runtime"] == 0.5 and rec["reason"] == "completed"
        assert rec["running"] == pytest.approx(0.5, abs=0.05)
        (a, b) = rec["phases"]
        first = (a["kind"], a["channel"], a["seconds"], a["mb"], a["done"])
        assert first == ("compute", None, 0.3, None, True)
        assert a["running"] == pytest.approx(0.3, abs=0.05) and b["running"] == pytest.approx(0.2, abs=0.05)
        assert a["end"] == pytest.approx(b["start"], abs=1e-5) and "moved_mb" not in a

    on_a_quiet_moment(check, tmp_path)


def test_a_checkpoint_moves_at_the_published_rate_and_registers_a_flow(binary: str, tmp_path: Path) -> None:
    log = tmp_path / "log"
    rates(tmp_path, "9.0 1.000000\n1.1 100.000000\n")
    env = {**os.environ, "SLURM_JOB_NODELIST": "c[001-002]", "SLURM_JOB_ID": "77"}
    proc = start(binary, log, "--io-dir", str(tmp_path), "--time-scale", "10", "--phases",
                 "compute:0.1,checkpoint:50", env=env)  # fmt: skip
    time.sleep(0.3)
    flow = (tmp_path / "flows" / "1.1.flow").read_text()
    fields = "job=1 slurm_job=77 phase=1 channel=checkpoint mb=50.000000 time_scale=10"
    assert flow == f"{fields} pid={proc.pid} nodes=c[001-002]\n"
    assert proc.wait(10) == 0
    ckpt = record(log)["phases"][1]
    assert ckpt["running"] == pytest.approx(0.5, abs=0.1)
    assert (ckpt["kind"], ckpt["channel"], ckpt["mb"], ckpt["moved_mb"]) == (
        "checkpoint",
        "checkpoint",
        50,
        50,
    )
    assert ckpt["min_mbps"] == 100.0 and ckpt["mean_mbps"] == pytest.approx(100, rel=0.2)
    # done, the checkpoint's file became its drain, handed over to the service (pid 0)
    (drain,) = (tmp_path / "flows").iterdir()
    assert drain.name == "1.1.flow"
    head, _, state = drain.read_text().partition(" start=")
    assert head == f"{fields.replace('checkpoint', 'drain')} pid=0 nodes=c[001-002]"
    begin, at, rate, total = (tok.partition("=")[2] for tok in f"start={state}".split())
    assert float(begin) == float(at) == pytest.approx(ckpt["end"], abs=0.01)
    assert (rate, total) == ("0", "50.000000")


def test_a_job_killed_after_a_checkpoint_drops_its_drain(binary: str, tmp_path: Path) -> None:
    log = tmp_path / "log"
    rates(tmp_path, "1.1 1000\n")
    proc = run(binary, log, tmp_path, "compute:0.1,checkpoint:100,compute:5")
    time.sleep(0.6)
    assert "channel=drain" in (tmp_path / "flows" / "1.1.flow").read_text()
    proc.terminate()
    assert proc.wait(10) == 128 + signal.SIGTERM
    assert list((tmp_path / "flows").iterdir()) == []


def test_a_new_rate_takes_over_within_a_tick(binary: str, tmp_path: Path) -> None:
    def check(log: Path) -> None:
        rates(tmp_path, "1.0 100\n")
        proc = run(binary, log, tmp_path, "io:drain:100")
        time.sleep(0.5)  # 50 MB at 100 MB/s, the other 50 at 200 MB/s: 0.75 s (+ at most a 0.1 s tick)
        rates(tmp_path, "1.0 200\n")
        assert proc.wait(10) == 0
        ph = record(log)["phases"][0]
        assert (ph["kind"], ph["channel"], ph["min_mbps"]) == ("io", "drain", 100.0)
        assert 0.74 <= ph["running"] <= 0.95

    on_a_quiet_moment(check, tmp_path)


def test_a_suspended_transfer_moves_nothing(binary: str, tmp_path: Path) -> None:
    def check(log: Path) -> None:
        rates(tmp_path, "1.0 100\n")
        proc = run(binary, log, tmp_path, "checkpoint:100")
        time.sleep(0.3)
        os.kill(proc.pid, signal.SIGSTOP)
        time.sleep(0.5)
        os.kill(proc.pid, signal.SIGCONT)
        assert proc.wait(10) == 0
        rec = record(log)
        ph = rec["phases"][0]
        assert ph["running"] == pytest.approx(1.0, abs=0.1) and ph["moved_mb"] == 100
        assert rec["suspended"] >= 0.45 and rec["n_suspensions"] == 1
        assert ph["end"] - ph["start"] == pytest.approx(ph["running"] + rec["suspended"], abs=0.005)

    # A suspension left uncounted gives 1.5 s every time; a loaded host that wakes the
    # last step late gives it once (CI, 2026-11-29: 1.50 s).
    on_a_quiet_moment(check, tmp_path)


def test_sigterm_mid_transfer_logs_the_bytes_moved_and_unregisters(binary: str, tmp_path: Path) -> None:
    log = tmp_path / "log"
    rates(tmp_path, "1.1 100\n")
    proc = run(binary, log, tmp_path, "compute:0.1,checkpoint:100,compute:5")
    time.sleep(0.6)
    proc.terminate()
    assert proc.wait(10) == 128 + signal.SIGTERM
    rec = record(log)
    _, ckpt, last = rec["phases"]
    assert rec["reason"] == "killed" and ckpt["done"] is False
    assert ckpt["moved_mb"] == pytest.approx(50, abs=6)
    unstarted = {"start": None, "end": None, "running": None, "done": False}
    assert last == {"kind": "compute", "channel": None, "seconds": 5.0, "mb": None, **unstarted}
    assert list((tmp_path / "flows").iterdir()) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--runtime", "1", "--phases", "compute:1"], "--runtime and --phases exclude each other"),
        (["--phases", "tape:1"], "phase 1: unknown kind 'tape'"),
        (["--phases", "compute:1,io:Bad:1"], "phase 2: io needs CHANNEL:MB"),
        (["--phases", "checkpoint:-1"], "--phases: '-1' must be at least 0"),
        (["--phases", "compute"], "phase 1 'compute' is not KIND:VALUE"),
        (["--runtime", "1", "--time-scale", "2"], "--io-dir and --time-scale only go with --phases"),
        (["--phases", "compute:1", "--time-scale", "0.5"], "--time-scale: '0.5' must be at least 1"),
    ],
)
def test_bad_phase_lists_are_refused(binary: str, tmp_path: Path, args: list[str], message: str) -> None:
    res = subprocess.run([binary, "--job-id", "1", "--log", str(tmp_path / "log"), *args],
                         capture_output=True, text=True, check=False)  # fmt: skip
    assert res.returncode == 2 and message in res.stderr, res.stderr
    assert not (tmp_path / "log").exists()


def test_two_checkpoints_with_the_real_service_take_twice_the_time(binary: str, tmp_path: Path) -> None:
    service = subprocess.Popen([sys.executable, "-m", CONTENTION, "--dir", str(tmp_path)])
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "flows").is_dir() and time.monotonic() < deadline:
            time.sleep(0.05)
        log = tmp_path / "log"
        # c001 and c002 share bb01 (1250 MB/s): 625 each, 2 s for 1250 MB instead of 1 s
        procs = [run(binary, log, tmp_path, "checkpoint:1250", job_id=j,
                     env={**os.environ, "SLURM_JOB_NODELIST": f"c00{j}"}) for j in (1, 2)]  # fmt: skip
        for p in procs:
            wait_exit(p, 20)
        phases = [json.loads(line)["phases"][0] for line in log.read_text().splitlines()]
        assert [p["running"] for p in phases] == pytest.approx([2.0, 2.0], rel=0.1)
        assert [p["min_mbps"] for p in phases] == [625.0, 625.0]
    finally:
        service.terminate()
        service.wait(10)


def test_a_checkpoint_drains_with_the_real_service_while_the_job_computes(
    binary: str, tmp_path: Path
) -> None:
    service = subprocess.Popen([sys.executable, "-m", CONTENTION, "--dir", str(tmp_path)])
    try:
        log = tmp_path / "log"
        # 1250 MB: 1 s into bb01 at c001's 1,250 MB/s, then 1 s from bb01 to the PFS (1,250 MB/s)
        # while the job computes for 2 s
        env = {**os.environ, "SLURM_JOB_NODELIST": "c001", "SLURM_JOB_ID": "5"}
        wait_exit(run(binary, log, tmp_path, "checkpoint:1250,compute:2", env=env), 20)
        ckpt, compute = record(log)["phases"]
        (drain,) = [json.loads(line) for line in (tmp_path / "drains.jsonl").read_text().splitlines()]
        assert (drain["job"], drain["trace_job"], drain["phase"], drain["mb"]) == (5, 1, 0, 1250.0)
        assert drain["start"] == pytest.approx(ckpt["end"], abs=0.01)
        assert drain["seconds"] == pytest.approx(1.0, rel=0.1) and drain["solo_s"] == 1.0
        assert drain["end"] < compute["end"]
        assert list((tmp_path / "flows").iterdir()) == []
    finally:
        service.terminate()
        service.wait(10)
