"""The replay engine's pacing and bookkeeping, with a fake clock and a fake sbatch."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from harness.emulation.head.ahead import eligible_instants, release_instants
from harness.emulation.head.replay import Replayer, ReplayOptions, sbatch_command
from harness.model.rundir import STATUS, SUBMISSIONS
from harness.slurm.jobspec import slurm_time_limit


class FakeClock:
    def __init__(self, start: float = 1000.0, submit_cost: float = 0.0) -> None:
        self.now = start
        self.submit_cost = submit_cost
        self.sleeps: list[float] = []

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def plan_of(submits: list[float]) -> pd.DataFrame:
    n = len(submits)
    return pd.DataFrame({
        "job_id": [100 + i for i in range(n)], "submit": submits, "runtime": [5.0] * n,
        "walltime": [10.0] * n, "nodes": [2] * n, "bb_per_node_mb": [300] * n,
    })  # fmt: skip


def make_replayer(
    tmp_path: Path, submits: list[float], clock: FakeClock, drift: float = 0.0, fail=(), ahead: bool = False,
    page: str | None = None, pokes: list[tuple[float, int, str]] | None = None, **options: object,
):  # fmt: skip
    """A replayer on ``clock`` whose sbatch calls go to ``calls`` and pokes of slurmctld (a
    fixed speed-up's begins) to ``pokes``: (the clock's instant, the Slurm id and name poked)."""
    calls: list[tuple[float, list[str]]] = []
    poked = pokes if pokes is not None else []

    def fake_submit(cmd: list[str]) -> tuple[int | None, str]:
        calls.append((clock.now, cmd))
        clock.now += clock.submit_cost  # sbatch takes time: must not shift later instants
        if len(calls) in fail:
            return None, "sbatch: error: Invalid licenses"
        return len(calls), ""

    opts = ReplayOptions(
        run_dir=tmp_path,
        run_id="r1",
        warmup=2.0,
        drift=drift,
        workers=1,
        ahead=ahead,
        clock=page,
        **options,  # type: ignore[arg-type]
    )

    def fake_poke(slurm_id: int, name: str) -> bool:
        poked.append((clock.now, slurm_id, name))
        return True

    replayer = Replayer(
        plan_of(submits), opts, submit_fn=fake_submit, clock=clock.time, sleep=clock.sleep, poke=fake_poke
    )
    return replayer, calls


def test_submissions_happen_at_absolute_instants_despite_slow_sbatch(tmp_path: Path) -> None:
    clock = FakeClock(submit_cost=0.3)
    replayer, calls = make_replayer(tmp_path, [0.0, 1.0, 1.0, 5.0], clock)
    status = replayer.run()
    # t0 = 1000 + 2 s warm-up; the third job shares the second's instant, so it is late by
    # exactly one sbatch (0.3 s); the fourth is on time again: no accumulated lag.
    assert [round(t, 6) for t, _ in calls] == [1002.0, 1003.0, 1003.3, 1007.0]
    assert status.done and not status.stopped and status.submitted == 4
    lines = [json.loads(x) for x in (tmp_path / SUBMISSIONS).read_text().splitlines()]
    assert [ln["lag"] for ln in lines] == pytest.approx([0.0, 0.0, 0.3, 0.0])
    assert [ln["slurm_job_id"] for ln in lines] == [1, 2, 3, 4]
    assert json.loads((tmp_path / STATUS).read_text())["done"] is True


@pytest.mark.parametrize(
    ("options", "instants"),
    [
        ({}, [1002.25, 1003.25]),
        # a fixed speed-up: each job counts from Slurm's start (whole seconds), so the trace's
        # instants are whole seconds too
        ({"page": "page", "from_slurm_start": True}, [1003.0, 1004.0]),
    ],
)
def test_t0_is_a_whole_second_where_jobs_count_from_slurms_start(
    tmp_path: Path, options: dict, instants: list[float]
) -> None:
    clock = FakeClock(start=1000.25)
    replayer, calls = make_replayer(tmp_path, [0.0, 1.0], clock, **options)
    status = replayer.run()
    assert [t for t, _ in calls] == instants and status.t0 == instants[0]


def test_drift_stretches_each_instant_by_its_index(tmp_path: Path) -> None:
    clock = FakeClock()
    replayer, calls = make_replayer(tmp_path, [0.0, 6.0, 12.0], clock, drift=1.0)
    replayer.run()
    assert [round(t, 6) for t, _ in calls] == [1002.0, 1009.0, 1016.0]


def test_rejected_job_is_recorded_and_replay_continues(tmp_path: Path) -> None:
    clock = FakeClock()
    replayer, _ = make_replayer(tmp_path, [0.0, 1.0, 2.0], clock, fail={2})
    status = replayer.run()
    assert (status.submitted, status.failed) == (2, 1)
    lines = [json.loads(x) for x in (tmp_path / SUBMISSIONS).read_text().splitlines()]
    assert lines[1]["slurm_job_id"] is None and "Invalid licenses" in lines[1]["error"]
    assert status.errors == ["job 101: sbatch: error: Invalid licenses"]


def test_stop_file_ends_the_replay_cleanly(tmp_path: Path) -> None:
    clock = FakeClock()
    replayer, calls = make_replayer(tmp_path, [0.0, 100.0], clock)
    original_sleep = clock.sleep

    def sleep_then_stop(seconds: float) -> None:
        original_sleep(seconds)
        if clock.now > 1010:
            (tmp_path / "STOP").touch()

    replayer.sleep = sleep_then_stop
    status = replayer.run()
    assert len(calls) == 1 and status.stopped and not status.done


def test_sbatch_command_carries_nodes_limit_licenses_and_sigsleep(tmp_path: Path) -> None:
    job = {
        "job_id": 4711,
        "submit": 0.0,
        "runtime": 12.5,
        "walltime": 61.0,
        "nodes": 3,
        "bb_per_node_mb": 250,
    }
    cmd = sbatch_command(job, ReplayOptions(run_dir=Path("/shared/runs/x"), run_id="x"), 1234.5)
    assert cmd[:2] == ["sbatch", "--parsable"]
    assert "--nodes=3" in cmd and "--time=2" in cmd and "--licenses=bb:750" in cmd
    assert "--job-name=t4711" in cmd
    wrap = cmd[-1]
    assert wrap.startswith("--wrap=exec /usr/local/bin/sigsleep --runtime 12.500000 --walltime 61.000000")
    assert "--job-id 4711 --log /shared/runs/x/jobs.jsonl --submit-intended 1234.500000" in wrap
    no_bb = sbatch_command({**job, "bb_per_node_mb": 0}, ReplayOptions(run_dir=tmp_path, run_id="x"), 0.0)
    assert not any(c.startswith("--licenses") for c in no_bb)


@pytest.mark.parametrize(("walltime", "minutes"), [(0.3, "1"), (60.0, "1"), (60.01, "2"), (3600.0, "60")])
def test_slurm_time_limit_rounds_up_to_minutes(walltime: float, minutes: str) -> None:
    assert slurm_time_limit(walltime) == minutes


def test_slow_sbatch_does_not_delay_a_burst_with_parallel_submitters(tmp_path: Path) -> None:
    """Real clock: 16 jobs due at one instant, each sbatch taking 100 ms, 8 submitters."""
    import time

    def slow_submit(cmd: list[str]) -> tuple[int | None, str]:
        time.sleep(0.1)
        return int(cmd[cmd.index("--parsable") + 1].split("=t")[1]), ""

    opts = ReplayOptions(run_dir=tmp_path, run_id="r2", warmup=0.2, workers=8)
    status = Replayer(plan_of([0.0] * 16), opts, submit_fn=slow_submit).run()
    lines = [json.loads(x) for x in (tmp_path / SUBMISSIONS).read_text().splitlines()]
    assert status.submitted == 16 and sorted(ln["job_id"] for ln in lines) == list(range(100, 116))
    # two waves of 8: nobody waits more than one sbatch (sequential would reach 1.5 s)
    assert max(ln["lag"] for ln in lines) < 0.3


def test_jobs_submitted_ahead_become_eligible_at_their_whole_second() -> None:
    # instants 1002, 1003, 1003, 1007.5: eligible on whole seconds, each sent at the previous one
    eligible = eligible_instants([1002.0, 1003.0, 1003.0, 1007.5])
    assert eligible == [1002.0, 1003.0, 1003.0, 1008.0]
    assert release_instants(eligible) == [float("-inf"), 1002.0, 1002.0, 1003.0]
    assert release_instants([]) == []


@pytest.mark.parametrize(
    ("cost", "sent", "entered"),
    [
        # sbatch takes 0.3 s: every job is in Slurm's queue before its begin
        (0.3, [1000.0, 1002.0, 1002.3, 1003.0], [1002.0, 1003.0, 1003.0, 1008.0]),
        # 1.5 s: the third job is sent after its begin (1003.5): it enters the queue then
        (1.5, [1000.0, 1002.0, 1003.5, 1005.0], [1002.0, 1003.0, 1003.5, 1008.0]),
    ],
)
def test_a_replay_ahead_sends_each_job_at_the_previous_instant_with_its_begin(
    tmp_path: Path, cost: float, sent: list[float], entered: list[float]
) -> None:
    clock = FakeClock(submit_cost=cost)
    replayer, calls = make_replayer(tmp_path, [0.0, 1.0, 1.0, 5.5], clock, ahead=True)
    assert replayer.run().submitted == 4
    assert [round(t, 6) for t, _ in calls] == sent
    # t0 = 1002 = 00:16:42 after the epoch; the last job's instant 1007.5 begins at 1008
    assert [cmd[-2] for _, cmd in calls] == [
        "--begin=1970-01-01T00:16:42", "--begin=1970-01-01T00:16:43",
        "--begin=1970-01-01T00:16:43", "--begin=1970-01-01T00:16:48",
    ]  # fmt: skip
    lines = [json.loads(x) for x in (tmp_path / SUBMISSIONS).read_text().splitlines()]
    assert [ln["actual"] for ln in lines] == entered
    assert [ln["sent"] for ln in lines] == sent
    # the lag: when it entered the queue against its instant (1007.5 waits for 1008)
    assert [ln["lag"] for ln in lines] == pytest.approx([0.0, 0.0, entered[2] - 1003.0, 0.5])


def test_a_replay_on_time_has_no_begin(tmp_path: Path) -> None:
    clock = FakeClock()
    replayer, calls = make_replayer(tmp_path, [0.0, 1.0], clock)
    replayer.run()
    assert not any(arg.startswith("--begin") for _, cmd in calls for arg in cmd)
    assert all("sent" not in json.loads(x) for x in (tmp_path / SUBMISSIONS).read_text().splitlines())


def test_the_status_says_caught_up_once_every_submission_due_has_returned(tmp_path: Path) -> None:
    """The ordering agent looks when the replay has caught up (emulation.head.wakeup): before
    a job due later, not between two jobs of one instant, and after the last job."""
    clock = FakeClock(submit_cost=0.3)
    seen: list[tuple[bool, int]] = []
    replayer, _ = make_replayer(tmp_path, [0.0, 1.0, 1.0, 5.0], clock)
    submit = replayer.submit_fn

    def watching_submit(cmd: list[str]) -> tuple[int | None, str]:
        status = json.loads((tmp_path / STATUS).read_text())
        seen.append((status["caught_up"], status["submitted"]))
        return submit(cmd)

    replayer.submit_fn = watching_submit
    replayer.run()
    # job 3 shares job 2's instant: it is sent while job 2's answer is the latest, not caught up
    assert seen == [(True, 0), (True, 1), (False, 2), (True, 3)]
    final = json.loads((tmp_path / STATUS).read_text())
    assert (final["caught_up"], final["submitted"], final["done"]) == (True, 4, True)


def test_a_burst_in_parallel_is_caught_up_only_after_its_last_answer(tmp_path: Path) -> None:
    """Eight submitters: while one of a burst is still in flight (here: about to return), the
    status never says caught up, though the others of the burst have returned."""
    seen_caught_up: list[bool] = []
    opts = ReplayOptions(run_dir=tmp_path, run_id="r1", warmup=0.0, workers=8)
    lock = threading.Lock()
    answered = {"n": 0}

    def slow_submit(cmd: list[str]) -> tuple[int | None, str]:
        time.sleep(0.02 * (len(seen_caught_up) + 1))  # they return one after another
        with lock:
            seen_caught_up.append(json.loads((tmp_path / STATUS).read_text())["caught_up"])
            answered["n"] += 1
            return answered["n"], ""

    status = Replayer(plan_of([0.0] * 6), opts, submit_fn=slow_submit).run()
    final = json.loads((tmp_path / STATUS).read_text())
    assert status.submitted == 6 and (final["caught_up"], final["submitted"]) == (True, 6)
    assert seen_caught_up == [False] * 6
