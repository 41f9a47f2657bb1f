"""sigsleep on the host: compiled with its own Makefile, run as real processes.

The timing tolerances are the issue's: 1.0 s +- 20 ms for a plain run, 2.0 s +- 50 ms
for a run suspended twice for 0.5 s. They are checked on the times the program logs
(start/end, taken inside the process) and, more loosely, on the process lifetime seen
from here, which also includes process start-up and scheduling noise of a loaded host.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "sigsleep"

pytestmark = pytest.mark.skipif(
    shutil.which("make") is None or shutil.which("gcc") is None, reason="needs make and gcc"
)


@pytest.fixture(scope="module")
def sigsleep(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Build a private copy (other people may be building in the source dir)."""
    build = tmp_path_factory.mktemp("sigsleep-build")
    for name in ("sigsleep.c", "vclock.h", "Makefile"):
        shutil.copy(SRC / name, build / name)
    res = subprocess.run(["make", "-C", str(build)], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "warning" not in res.stderr, res.stderr
    return str(build / "sigsleep")


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "jobs.jsonl"


_started: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _no_leftovers() -> Iterator[None]:
    """A failed check may leave an instance running, or stopped: end it."""
    yield
    while _started:
        proc = _started.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def start(binary: str, log: Path, *args: str, job_id: int = 1, env: dict | None = None) -> subprocess.Popen:
    cmd = [binary, "--job-id", str(job_id), "--log", str(log), *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    _started.append(proc)
    return proc


def wait_exit(proc: subprocess.Popen, timeout: float) -> float:
    """Block until the process exits (no polling delay); monotonic time of the exit."""
    fd = os.pidfd_open(proc.pid)
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        exited = time.monotonic()
    finally:
        os.close(fd)
    if not ready:
        proc.kill()
        proc.wait()
        pytest.fail(f"sigsleep still running after {timeout} s")
    proc.wait()
    return exited


def on_a_quiet_moment(check: Callable[[Path], None], tmp_path: Path, attempts: int = 3) -> None:
    """Run a timing check up to `attempts` times with a fresh log; pass if one run passes.

    The tolerances stay the issue's. A process that a loaded host leaves without a CPU
    for tens of ms ends late whatever it does; a wrong implementation fails every time.
    """
    failures = []
    for i in range(attempts):
        try:
            check(tmp_path / f"attempt{i}.jsonl")
            return
        except AssertionError as exc:
            failures.append(f"attempt {i + 1}: {exc}")
    pytest.fail("\n".join(failures))


def sleep_until(t: float) -> None:
    delay = t - time.monotonic()
    if delay > 0:
        time.sleep(delay)


def records(log: Path) -> list[dict]:
    text = log.read_text()
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def only_record(log: Path) -> dict:
    recs = records(log)
    assert len(recs) == 1, recs
    return recs[0]


def proc_state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def wait_state(pid: int, state: str, timeout: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc_state(pid) == state:
            return True
        time.sleep(0.002)
    return False


# -- timing -------------------------------------------------------------------------------


def test_one_second_run_lasts_one_second(sigsleep: str, tmp_path: Path) -> None:
    def check(log: Path) -> None:
        t0 = time.monotonic()
        proc = start(sigsleep, log, "--runtime", "1.0")
        t1 = wait_exit(proc, 5)
        assert proc.returncode == 0, proc.stderr.read()
        rec = only_record(log)
        assert rec["reason"] == "completed"
        assert rec["end"] - rec["start"] == pytest.approx(1.0, abs=0.020)
        assert rec["running"] == pytest.approx(1.0, abs=0.020)
        assert rec["suspended"] == 0 and rec["suspensions"] == []
        # Seen from outside: never early; late only by process start-up and exit.
        assert 0.98 <= t1 - t0 < 1.25

    on_a_quiet_moment(check, tmp_path)


def test_two_suspensions_sigtstp_then_sigstop(sigsleep: str, tmp_path: Path) -> None:
    """0.25 s run, 0.5 s SIGTSTP, 0.25 s run, 0.5 s SIGSTOP, 0.5 s run: 2.0 s in all."""

    def check(log: Path) -> None:
        t0 = time.monotonic()
        proc = start(sigsleep, log, "--runtime", "1.0")
        sent = []  # (signal, wall-clock time it was sent)
        plan = [(0.25, signal.SIGTSTP), (0.75, signal.SIGCONT), (1.0, signal.SIGSTOP), (1.5, signal.SIGCONT)]
        for at, sig in plan:
            sleep_until(t0 + at)
            os.kill(proc.pid, sig)
            sent.append((sig, time.time()))
            if sig != signal.SIGCONT:
                # SIGTSTP must really suspend it (the handler stops the process itself).
                assert wait_state(proc.pid, "T"), f"not stopped after {sig.name}"
        t1 = wait_exit(proc, 5)
        assert proc.returncode == 0, proc.stderr.read()

        rec = only_record(log)
        assert rec["reason"] == "completed"
        assert rec["end"] - rec["start"] == pytest.approx(2.0, abs=0.050)
        assert rec["running"] == pytest.approx(1.0, abs=0.020)
        assert 1.95 <= t1 - t0 < 2.3
        # Both intervals logged, where the signals were really sent, and they add up.
        assert rec["n_suspensions"] == 2
        for (start_s, end_s), stop_at, cont_at in zip(
            rec["suspensions"], sent[0::2], sent[1::2], strict=True
        ):
            # A stop takes effect when the process next gets a CPU: on a loaded host that
            # can be a few ms after kill() returned.
            assert start_s == pytest.approx(stop_at[1], abs=0.025)
            assert end_s == pytest.approx(cont_at[1], abs=0.025)
            assert end_s - start_s == pytest.approx(cont_at[1] - stop_at[1], abs=0.025)
        assert rec["suspended"] == pytest.approx(sum(e - s for s, e in rec["suspensions"]), abs=1e-5)
        assert rec["running"] == pytest.approx(rec["end"] - rec["start"] - rec["suspended"], abs=1e-5)

    on_a_quiet_moment(check, tmp_path)


def test_stop_right_after_start_is_never_lost(sigsleep: str, tmp_path: Path) -> None:
    """A SIGSTOP at once after spawning: inside the run it is recorded; under load it may
    land before main() even started, and then the run begins after the resume."""

    def check(log: Path) -> None:
        proc = start(sigsleep, log, "--runtime", "0.3")
        os.kill(proc.pid, signal.SIGSTOP)
        stopped = time.time()
        time.sleep(0.3)
        os.kill(proc.pid, signal.SIGCONT)
        resumed = time.time()
        wait_exit(proc, 5)
        rec = only_record(log)
        assert rec["running"] == pytest.approx(0.3, abs=0.020)
        assert rec["running"] == pytest.approx(rec["end"] - rec["start"] - rec["suspended"], abs=1e-5)
        if rec["suspensions"]:
            assert rec["suspensions"][0][0] == pytest.approx(stopped, abs=0.025)
            assert rec["suspended"] == pytest.approx(resumed - stopped, abs=0.025)
        else:
            assert rec["start"] >= resumed - 0.025

    on_a_quiet_moment(check, tmp_path)


def test_sleeping_costs_no_cpu(sigsleep: str, log: Path) -> None:
    proc = start(sigsleep, log, "--runtime", "3")
    time.sleep(0.2)
    with open(f"/proc/{proc.pid}/schedstat") as f:
        cpu0 = int(f.read().split()[0])
    time.sleep(1.0)
    with open(f"/proc/{proc.pid}/schedstat") as f:
        cpu1 = int(f.read().split()[0])
    status = Path(f"/proc/{proc.pid}/status").read_text()
    switches = int(status.split("voluntary_ctxt_switches:")[1].split()[0])
    proc.send_signal(signal.SIGTERM)
    wait_exit(proc, 5)
    assert cpu1 - cpu0 < 200_000, f"{(cpu1 - cpu0) / 1e3:.0f} us of CPU in 1 s of sleep"
    assert switches <= 5, f"{switches} wake-ups: it polls instead of sleeping"


# -- termination ----------------------------------------------------------------------------


def test_sigterm_logs_killed_with_partial_running_time(sigsleep: str, tmp_path: Path) -> None:
    def check(log: Path) -> None:
        t0 = time.monotonic()
        proc = start(sigsleep, log, "--runtime", "5")
        sleep_until(t0 + 0.5)
        os.kill(proc.pid, signal.SIGTERM)
        killed = time.monotonic()
        t1 = wait_exit(proc, 5)
        assert proc.returncode == 128 + signal.SIGTERM
        assert t1 - killed < 0.2
        rec = only_record(log)
        assert rec["reason"] == "killed" and rec["signal"] == "SIGTERM"
        assert rec["running"] == pytest.approx(0.5, abs=0.050)

    on_a_quiet_moment(check, tmp_path)


def test_cancel_while_suspended_keeps_the_suspension(sigsleep: str, tmp_path: Path) -> None:
    """scancel of a suspended job: SIGCONT then SIGTERM, both pending at once."""

    def check(log: Path) -> None:
        proc = start(sigsleep, log, "--runtime", "5")
        time.sleep(0.3)
        os.kill(proc.pid, signal.SIGSTOP)
        time.sleep(0.3)
        os.kill(proc.pid, signal.SIGTERM)  # pending while stopped
        os.kill(proc.pid, signal.SIGCONT)
        wait_exit(proc, 5)
        rec = only_record(log)
        assert rec["reason"] == "killed"
        assert rec["n_suspensions"] == 1
        assert rec["suspended"] == pytest.approx(0.3, abs=0.030)
        assert rec["running"] == pytest.approx(0.3, abs=0.030)

    on_a_quiet_moment(check, tmp_path)


def test_walltime_shorter_than_runtime_logs_timeout(sigsleep: str, tmp_path: Path) -> None:
    def check(log: Path) -> None:
        proc = start(sigsleep, log, "--runtime", "5", "--walltime", "0.5")
        wait_exit(proc, 5)
        assert proc.returncode == 124
        rec = only_record(log)
        assert rec["reason"] == "timeout" and rec["walltime"] == 0.5
        assert rec["running"] == pytest.approx(0.5, abs=0.020)

    on_a_quiet_moment(check, tmp_path)


def test_walltime_counts_running_time_only(sigsleep: str, tmp_path: Path) -> None:
    """Like Slurm's time limit, the walltime does not run while the job is suspended."""

    def check(log: Path) -> None:
        t0 = time.monotonic()
        proc = start(sigsleep, log, "--runtime", "5", "--walltime", "0.6")
        sleep_until(t0 + 0.2)
        os.kill(proc.pid, signal.SIGSTOP)
        sleep_until(t0 + 0.6)
        os.kill(proc.pid, signal.SIGCONT)
        wait_exit(proc, 5)
        rec = only_record(log)
        assert rec["reason"] == "timeout"
        # The tolerance for a suspended run (three signals, each seen late under load).
        assert rec["running"] == pytest.approx(0.6, abs=0.050)
        assert rec["suspended"] == pytest.approx(0.4, abs=0.050)
        assert rec["end"] - rec["start"] == pytest.approx(1.0, abs=0.050)

    on_a_quiet_moment(check, tmp_path)


def test_walltime_equal_to_runtime_completes(sigsleep: str, log: Path) -> None:
    proc = start(sigsleep, log, "--runtime", "0.2", "--walltime", "0.2")
    wait_exit(proc, 5)
    assert proc.returncode == 0
    assert only_record(log)["reason"] == "completed"


def test_end_of_trace_cuts_the_job(sigsleep: str, tmp_path: Path) -> None:
    def check(log: Path) -> None:
        eot = time.time() + 0.4
        proc = start(sigsleep, log, "--runtime", "5", "--end-of-trace", f"{eot:.6f}")
        wait_exit(proc, 5)
        assert proc.returncode == 0
        rec = only_record(log)
        assert rec["reason"] == "cut"
        assert rec["end"] == pytest.approx(eot, abs=0.020)
        assert rec["end_of_trace"] == pytest.approx(eot, abs=1e-6)

    on_a_quiet_moment(check, tmp_path)


def test_start_after_end_of_trace_is_cut_at_once(sigsleep: str, log: Path) -> None:
    proc = start(sigsleep, log, "--runtime", "5", "--end-of-trace", f"{time.time() - 10:.6f}")
    wait_exit(proc, 2)
    rec = only_record(log)
    assert rec["reason"] == "cut"
    assert rec["running"] < 0.01


def test_zero_runtime_completes_at_once(sigsleep: str, log: Path) -> None:
    proc = start(sigsleep, log, "--runtime", "0")
    wait_exit(proc, 2)
    assert proc.returncode == 0
    rec = only_record(log)
    assert rec["reason"] == "completed" and rec["running"] < 0.01


# -- the record -----------------------------------------------------------------------------


def test_record_fields(sigsleep: str, log: Path) -> None:
    env = dict(os.environ, SLURM_JOB_ID="4242", SLURMD_NODENAME="c017", SLURM_JOB_NODELIST="c[017-018]")
    before = time.time()
    proc = start(
        sigsleep, log, "--runtime", "0.05", "--walltime", "60", "--submit-intended", "1700000000.25",
        "--submit-actual", "1700000000.5", "--meta", "run=r1", "--meta", "note=a \"quoted\"\tvalue é",
        job_id=4711, env=env,
    )  # fmt: skip
    wait_exit(proc, 5)
    rec = only_record(log)
    assert rec["format"] == 1
    assert rec["job_id"] == 4711 and rec["slurm_job_id"] == 4242
    assert rec["node"] == "c017" and rec["nodelist"] == "c[017-018]"
    assert rec["host"] == os.uname().nodename and rec["pid"] == proc.pid
    assert rec["runtime"] == 0.05 and rec["walltime"] == 60
    assert rec["submit_intended"] == 1700000000.25 and rec["submit_actual"] == 1700000000.5
    assert rec["end_of_trace"] is None
    assert before <= rec["start"] < rec["end"] <= time.time()
    assert rec["reason"] == "completed" and rec["signal"] is None
    assert rec["meta"] == {"run": "r1", "note": 'a "quoted"\tvalue é'}
    # Microseconds: every timestamp is printed with six decimals.
    line = log.read_text()
    assert f'"start":{rec["start"]:.6f}' in line


def test_record_without_slurm_environment(sigsleep: str, log: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
    proc = start(sigsleep, log, "--runtime", "0", env=env)
    wait_exit(proc, 2)
    rec = only_record(log)
    assert rec["slurm_job_id"] is None and rec["node"] is None and rec["nodelist"] is None
    assert rec["walltime"] is None and rec["submit_intended"] is None and rec["meta"] == {}


def test_300_concurrent_writers_leave_300_lines(sigsleep: str, log: Path) -> None:
    """All cut by the same end-of-trace instant, so that they append at the same moment."""
    n = 300
    eot = time.time() + 3.0
    big = "x" * 3000  # long lines make any interleaving visible
    args = ["--runtime", "60", "--end-of-trace", f"{eot:.6f}", "--meta", f"pad={big}"]
    procs = [start(sigsleep, log, *args, job_id=i) for i in range(n)]
    assert time.time() < eot, "spawning took too long to test concurrency"
    for proc in procs:
        wait_exit(proc, 30)
    recs = records(log)  # every line must parse
    assert len(recs) == n
    assert sorted(r["job_id"] for r in recs) == list(range(n))
    assert all(r["reason"] == "cut" and r["meta"]["pad"] == big for r in recs)


# -- errors ---------------------------------------------------------------------------------

BAD_ARGUMENTS = {
    "no arguments": [],
    "no runtime": ["--job-id", "1", "--log", "{log}"],
    "no job id": ["--runtime", "1", "--log", "{log}"],
    "no log": ["--runtime", "1", "--job-id", "1"],
    "empty log": ["--runtime", "1", "--job-id", "1", "--log", ""],
    "value missing": ["--job-id", "1", "--log", "{log}", "--runtime"],
    "negative runtime": ["--runtime", "-1", "--job-id", "1", "--log", "{log}"],
    "non-numeric runtime": ["--runtime", "abc", "--job-id", "1", "--log", "{log}"],
    "runtime with unit": ["--runtime", "10s", "--job-id", "1", "--log", "{log}"],
    "empty runtime": ["--runtime", "", "--job-id", "1", "--log", "{log}"],
    "nan runtime": ["--runtime", "nan", "--job-id", "1", "--log", "{log}"],
    "inf runtime": ["--runtime", "inf", "--job-id", "1", "--log", "{log}"],
    "hex runtime": ["--runtime", "0x10", "--job-id", "1", "--log", "{log}"],
    "overflowing runtime": ["--runtime", "1e400", "--job-id", "1", "--log", "{log}"],
    "huge runtime": ["--runtime", "1e12", "--job-id", "1", "--log", "{log}"],
    "blank-padded runtime": ["--runtime", " 1", "--job-id", "1", "--log", "{log}"],
    "runtime twice": ["--runtime", "1", "--runtime", "2", "--job-id", "1", "--log", "{log}"],
    "zero walltime": ["--runtime", "1", "--walltime", "0", "--job-id", "1", "--log", "{log}"],
    "negative walltime": ["--runtime", "1", "--walltime", "-5", "--job-id", "1", "--log", "{log}"],
    "huge walltime": ["--runtime", "1", "--walltime", "9e99", "--job-id", "1", "--log", "{log}"],
    "negative job id": ["--runtime", "1", "--job-id", "-1", "--log", "{log}"],
    "fractional job id": ["--runtime", "1", "--job-id", "1.5", "--log", "{log}"],
    "non-numeric job id": ["--runtime", "1", "--job-id", "abc", "--log", "{log}"],
    "huge job id": ["--runtime", "1", "--job-id", "99999999999999999999", "--log", "{log}"],
    "negative submit time": ["--runtime", "1", "--job-id", "1", "--log", "{log}", "--submit-intended", "-3"],
    "bad submit time": ["--runtime", "1", "--job-id", "1", "--log", "{log}", "--submit-actual", "now"],
    "bad end of trace": ["--runtime", "1", "--job-id", "1", "--log", "{log}", "--end-of-trace", "1e300"],
    "meta without =": ["--runtime", "1", "--job-id", "1", "--log", "{log}", "--meta", "novalue"],
    "meta without key": ["--runtime", "1", "--job-id", "1", "--log", "{log}", "--meta", "=v"],
    "meta bad key": ["--runtime", "1", "--job-id", "1", "--log", "{log}", "--meta", "a b=v"],
    "meta key twice": ["--runtime", "1", "--job-id", "1", "--log", "{log}", "--meta", "k=1", "--meta", "k=2"],
    "unknown option": ["--runtime", "1", "--job-id", "1", "--log", "{log}", "--frobnicate"],
    "short option": ["-r", "1", "--job-id", "1", "--log", "{log}"],
    "positional argument": ["--runtime", "1", "--job-id", "1", "--log", "{log}", "extra"],
}


@pytest.mark.parametrize("args", BAD_ARGUMENTS.values(), ids=BAD_ARGUMENTS.keys())
def test_bad_arguments_exit_2_with_one_line(sigsleep: str, log: Path, args: list[str]) -> None:
    argv = [sigsleep] + [a.replace("{log}", str(log)) for a in args]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=5, check=False)
    assert res.returncode == 2
    assert res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("sigsleep: ") and "usage: sigsleep" in lines[0]
    assert not log.exists(), "nothing may be logged for a bad invocation"


def test_invalid_utf8_meta_value_is_rejected(sigsleep: str, log: Path) -> None:
    argv = [sigsleep.encode(), b"--runtime", b"0", b"--job-id", b"1", b"--log", bytes(log)]
    argv += [b"--meta", b"k=\xff"]
    res = subprocess.run(argv, capture_output=True, timeout=5, check=False)
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1


def test_unwritable_log_fails_before_running(sigsleep: str, tmp_path: Path) -> None:
    res = subprocess.run(
        [sigsleep, "--runtime", "100", "--job-id", "1", "--log", str(tmp_path / "missing" / "jobs.jsonl")],
        capture_output=True, text=True, timeout=5, check=False,
    )  # fmt: skip
    assert res.returncode == 1
    assert "cannot open log" in res.stderr


def test_help(sigsleep: str) -> None:
    res = subprocess.run([sigsleep, "--help"], capture_output=True, text=True, timeout=5, check=False)
    assert res.returncode == 0 and "--runtime" in res.stdout
