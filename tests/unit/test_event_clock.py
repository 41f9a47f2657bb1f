"""The event-driven clock's decisions (harness.emulation.head.events), computed by hand: when
the cluster counts as quiescent and where the clock goes next."""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import replace

import pandas as pd
import pytest

from harness.emulation.head.ahead import next_begin, submissions_ahead_due, submissions_due
from harness.emulation.head.event_times import ends_due, job_durations, next_event
from harness.emulation.head.events import (
    SETTLE_S,
    EventDriver,
    Observation,
    as_at,
    quiescent,
    slurm_settled,
)
from harness.emulation.head.quiescence import (
    END,
    ControllerShell,
    SlurmActivity,
    look_script,
    parse_sdiag,
    poke_script,
    split_look,
)

INSTANTS = [0.0, 30.0, 30.0, 95.5]  # the plan's submission offsets, sorted


def test_a_job_runs_its_runtime_cut_at_its_walltime() -> None:
    plan = pd.DataFrame({"job_id": [1, 2], "runtime": [100.0, 900.0], "walltime": [600.0, 600.0]})
    assert job_durations(plan) == {1: 100.0, 2: 600.0}


def test_the_clock_goes_to_the_next_submission_or_job_end_whichever_comes_first() -> None:
    t0 = 1000.0
    # two submissions made (offsets 0 and 30): the next is the third, also at 30 -> 1030
    assert next_event(1010.0, t0, INSTANTS, 2, {}, {}) == 1030.0
    # a job started at 1002 for 20 s ends at 1022, before that submission
    assert next_event(1010.0, t0, INSTANTS, 2, {7: 1002.0}, {7: 20.0}) == 1022.0
    # a fractional instant is rounded up to Slurm's whole second (1095.5 -> 1096)
    assert next_event(1040.0, t0, INSTANTS, 3, {}, {}) == 1096.0
    # an event already due (a job's end not seen yet) is a one-second step away, never behind
    assert next_event(1040.0, t0, INSTANTS, 3, {7: 1002.0}, {7: 20.0}) == 1041.0
    # nothing left: one second on
    assert next_event(1200.0, t0, INSTANTS, 4, {}, {}) == 1201.0
    # the replay not started (no t0): one second on, to let it start
    assert next_event(5.0, None, INSTANTS, 0, {}, {}) == 6.0


def test_submissions_due_count_every_instant_reached() -> None:
    assert submissions_due(999.0, 1000.0, INSTANTS) == 0
    assert submissions_due(1000.0, 1000.0, INSTANTS) == 1
    assert submissions_due(1030.0, 1000.0, INSTANTS) == 3
    assert submissions_due(1030.0, None, INSTANTS) == 0


def test_quiescent_needs_an_answer_no_job_completing_and_the_replay_caught_up() -> None:
    idle = (("RUNNING", "t1", "1000"), ("PENDING", "t2", ""))
    assert quiescent(Observation(1000.0, 3, idle, False), 1030.0, INSTANTS)
    assert not quiescent(Observation(1000.0, 2, idle, False), 1030.0, INSTANTS)  # one due not made
    assert not quiescent(Observation(1000.0, 3, None, False), 1030.0, INSTANTS)  # squeue did not answer
    ending = (("COMPLETING", "t1", "1000"),)
    assert not quiescent(Observation(1000.0, 3, ending, False), 1030.0, INSTANTS)
    assert quiescent(Observation(1000.0, 4, (), True), 5000.0, INSTANTS)


def activity(counters: tuple[int, ...] = (5, 3, 2, 7, 9), backfill_at: float = 1030.0, busy: bool = False):
    return SlurmActivity(counters, backfill_at, busy)


PENDING = (("RUNNING", "t1", "1000"), ("PENDING", "t2", ""))


def test_slurm_is_settled_once_its_passes_ran_at_the_present_instant() -> None:
    moved = Observation(1000.0, 3, PENDING, False, activity(backfill_at=1029.0))
    assert slurm_settled(Observation(1000.0, 3, PENDING, False, activity()), moved, 1030.0)
    # an RPC agent (a launch, a kill) or a backfill pass in flight, or no sdiag at all
    assert not slurm_settled(Observation(1000.0, 3, PENDING, False, activity(busy=True)), moved, 1030.0)
    assert not slurm_settled(Observation(1000.0, 3, PENDING, False, None), moved, 1030.0)
    # jobs pending and backfill has not run at this instant yet
    assert not slurm_settled(
        Observation(1000.0, 3, PENDING, False, activity(backfill_at=1029.0)), moved, 1030.0
    )
    # a job submitted or ended since the move: the main scheduler must have run since, too
    submitted = activity((6, 3, 2, 7, 10))
    assert not slurm_settled(Observation(1000.0, 4, PENDING, False, submitted), moved, 1030.0)
    assert slurm_settled(Observation(1000.0, 4, PENDING, False, activity((6, 3, 2, 8, 10))), moved, 1030.0)
    # ... unless the main scheduler already ran at this instant: it runs once per instant
    assert slurm_settled(Observation(1000.0, 4, PENDING, False, submitted), moved, 1030.0, main_ran=True)
    # nothing pending: no pass has anything to do
    running = (("RUNNING", "t1", "1000"),)
    assert slurm_settled(Observation(1000.0, 4, running, False, activity(backfill_at=1.0)), moved, 1030.0)


def test_a_reset_of_slurms_counters_is_not_a_main_cycle_but_the_cycles_after_it_are() -> None:
    assert activity((5, 3, 2, 8, 9)).main_cycles_since(7)
    assert not activity((5, 3, 2, 7, 9)).main_cycles_since(7)
    assert not activity((0, 0, 0, 0, 0)).main_cycles_since(7)  # reset at midnight, no cycle since
    assert activity((0, 0, 0, 2, 0)).main_cycles_since(7)  # reset, then two cycles
    assert activity((0, 0, 0, 1, 0)).main_cycles_since(0)


def test_a_job_past_its_end_is_one_slurm_has_not_ended_yet() -> None:
    assert ends_due(1022.0, {7: 1002.0, 8: 1010.0}, {7: 20.0, 8: 20.0}) == 1
    assert ends_due(1021.0, {7: 1002.0}, {7: 20.0}) == 0


def test_one_look_is_squeues_rows_and_sdiags_counters() -> None:
    sdiag = {
        "statistics": {
            "jobs_submitted": 5, "jobs_started": 3, "jobs_completed": 2, "schedule_cycle_total": 7,
            "bf_cycle_counter": 9, "bf_when_last_cycle": {"set": True, "infinite": False, "number": 1030},
            "agent_queue_size": 0, "agent_count": 0, "bf_active": False,
        }
    }  # fmt: skip
    rows, act = split_look(f"RUNNING t1 2026-01-01T00:00:00\n@@rc 0\n{json.dumps(sdiag)}\n")
    assert rows == ["RUNNING t1 2026-01-01T00:00:00"] and act == activity()
    sdiag["statistics"]["agent_count"] = 2
    assert split_look(f"\n@@rc 0\n{json.dumps(sdiag)}\n") == ([], activity(busy=True))
    assert split_look("squeue: error: timeout\n@@rc 1\nnot json\n") == (None, None)
    assert split_look("") == (None, None)
    assert parse_sdiag('{"statistics": {}}') is None


def test_the_controller_shell_answers_every_look_and_starts_again_when_it_dies() -> None:
    def start() -> subprocess.Popen:
        return subprocess.Popen(
            ["sh"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )

    shell = ControllerShell(start)
    try:
        script = look_script(["printf", "%s\\n", "RUNNING t1 x"]).replace("sdiag --json", "echo nosdiag")
        for _ in range(3):
            assert split_look(shell.run(script, timeout=5) or "") == (["RUNNING t1 x"], None)
        assert shell.run("exit 3\n", timeout=5) is None  # the shell died: None, then a new one
        assert split_look(shell.run(script, timeout=5) or "")[0] == ["RUNNING t1 x"]
        assert shell.run("sleep 2\n", timeout=0.2) is None  # no answer in time
    finally:
        shell.close()


class HeldClock:
    def __init__(self, now: float) -> None:
        self.at = now
        self.lag = 0.0
        self.moves: list[tuple[float, float]] = []  # (page, daemons) after each move

    def now(self) -> float:
        return self.at

    def daemons_now(self) -> float:
        return self.at - self.lag

    def set(self, instant: float, rate: float) -> None:
        self.at = instant

    def jump(self, instant: float, daemons_lag: float = 0.0) -> None:
        self.at, self.lag = instant, daemons_lag
        self.moves.append((instant, instant - daemons_lag))


def test_the_driver_waits_for_the_start_marker_and_slurms_signals_not_for_a_fixed_time() -> None:
    """One job submitted at 0 runs for 100 s; its start marker comes late (after three looks):
    the clock does not move before it; then Slurm's signals (nothing pending) move it after
    SETTLE_S, not FALLBACK_S, and it goes to the job's end."""
    plan = pd.DataFrame({"job_id": [1], "submit": [0.0], "runtime": [100.0], "walltime": [200.0]})
    clock = HeldClock(1000.0)
    looks = {"n": 0}
    queue = (("RUNNING", "t1", "1970-01-01T00:16:40"),)  # 1000 s after the epoch

    def observe() -> Observation:
        looks["n"] += 1
        return Observation(1000.0, 1, queue, True, activity(), 1 if looks["n"] <= 3 else 0)

    driver = EventDriver(clock, plan, observe, lambda obs: {1: 1000.0})  # type: ignore[arg-type]
    began = time.monotonic()
    driver.start()
    while clock.at < 1100.0 and time.monotonic() - began < 5:
        time.sleep(0.01)
    driver.stop()
    assert clock.at >= 1100.0 and looks["n"] > 3
    assert driver.moves["jump"] >= 1 and driver.moves["fallback"] == 0 and driver.moves["forced"] == 0
    assert driver._ready(observe(), None, 1000.0, SETTLE_S) == ""  # Slurm's signals, after SETTLE_S


# submitted ahead (harness replay --submit-ahead): INSTANTS from t0 = 1000 are eligible at
# 1000, 1030, 1030 and 1096 (95.5 rounded up to Slurm's whole second)


def test_submitting_ahead_the_next_instant_is_the_next_eligible_second() -> None:
    assert next_begin(999.0, 1000.0, INSTANTS) == 1000.0
    assert next_begin(1000.0, 1000.0, INSTANTS) == 1030.0
    assert next_begin(1030.0, 1000.0, INSTANTS) == 1096.0
    assert next_begin(1096.0, 1000.0, INSTANTS) is None
    assert next_begin(5.0, None, INSTANTS) is None
    # the clock goes there whatever the replay has submitted (it submits one instant early)
    assert next_event(1000.0, 1000.0, INSTANTS, 3, {}, {}, ahead=True) == 1030.0
    assert next_event(1000.0, 1000.0, INSTANTS, 4, {7: 1002.0}, {7: 20.0}, ahead=True) == 1022.0
    assert next_event(1030.0, 1000.0, INSTANTS, 4, {}, {}, ahead=True) == 1096.0
    assert next_event(1096.0, 1000.0, INSTANTS, 4, {}, {}, ahead=True) == 1097.0


def test_submitting_ahead_the_clock_waits_for_the_next_instants_jobs() -> None:
    # before 1000: the first job; at 1000: the two of 1030 too; from 1030 on: all four
    assert submissions_ahead_due(999.0, 1000.0, INSTANTS) == 1
    assert submissions_ahead_due(1000.0, 1000.0, INSTANTS) == 3
    assert submissions_ahead_due(1030.0, 1000.0, INSTANTS) == 4
    assert submissions_ahead_due(1200.0, 1000.0, INSTANTS) == 4
    assert submissions_ahead_due(5.0, None, INSTANTS) == 0
    idle = (("RUNNING", "t1", "1000"),)
    assert quiescent(Observation(1000.0, 3, idle, False), 1000.0, INSTANTS, ahead=True)
    assert not quiescent(Observation(1000.0, 1, idle, False), 1000.0, INSTANTS, ahead=True)
    assert quiescent(Observation(1000.0, 1, idle, False), 1000.0, INSTANTS)  # on time: one was due


def test_a_job_waiting_for_its_begin_is_neither_a_change_nor_pending() -> None:
    submit_of = {1: 0.0, 2: 30.0, 3: 95.5}
    queue = (("RUNNING", "t1", "1000"), ("PENDING", "t2", ""), ("PENDING", "t3", ""))
    obs = Observation(1000.0, 3, queue, True, activity(backfill_at=1000.0))
    # at 1000 only job 1 has come: 2 and 3 wait for 1030 and 1096
    at_1000 = as_at(obs, 1000.0, submit_of)
    assert at_1000.queue == queue[:1] and at_1000.submitted == 1 and at_1000.done
    # ... so nothing is pending for Slurm's passes (a backfill pass at 1000 is not needed)
    assert slurm_settled(replace_backfill(at_1000, 999.0), None, 1000.0)
    at_1030 = as_at(obs, 1030.0, submit_of)
    assert at_1030.queue == queue[:2] and at_1030.submitted == 2
    # job 2 pending from 1030: a change since 1000 (the clock steps a second after it)
    assert at_1030.jobs != at_1000.jobs
    assert not slurm_settled(replace_backfill(at_1030, 1000.0), None, 1030.0)
    assert as_at(obs, 1096.0, submit_of).queue == queue
    # a running job waits for nothing; the replay not started: nothing to filter
    assert as_at(Observation(None, 0, queue, False), 1096.0, submit_of).queue == queue


def replace_backfill(obs: Observation, backfill_at: float) -> Observation:
    return Observation(obs.t0, obs.submitted, obs.queue, obs.done, activity(backfill_at=backfill_at))


def test_without_backfill_pending_jobs_need_no_backfill_pass() -> None:
    # sched/builtin (slurm-fcfs, the agent's policies): no backfill pass ever comes
    stale = Observation(1000.0, 3, PENDING, False, activity(backfill_at=0.0))
    assert not slurm_settled(stale, None, 1030.0)
    assert slurm_settled(stale, None, 1030.0, backfill=False)


def test_the_agent_looking_is_not_a_change_of_the_cluster() -> None:
    first = Observation(1000.0, 1, PENDING, False, activity(), 0, agent_looked=5.0)
    assert first == Observation(1000.0, 1, PENDING, False, activity(), 0, agent_looked=9.0)


def test_with_an_agent_the_clock_waits_for_its_look_after_the_last_change() -> None:
    """One held job; the agent's looks begin before the driver saw the cluster (they are
    stale) for 0.3 s, then after: the clock moves only then."""
    plan = pd.DataFrame({"job_id": [1], "submit": [0.0], "runtime": [100.0], "walltime": [200.0]})
    began = time.time()
    fresh_from = began + 0.3
    moved_at: list[float] = []

    def observe() -> Observation:
        now = time.time()
        looked = now - 0.02 if now >= fresh_from else began - 1.0
        return Observation(1000.0, 1, (("PENDING", "t1", ""),), True, activity(), 0, agent_looked=looked)

    class Recording(HeldClock):
        def jump(self, instant: float, daemons_lag: float = 0.0) -> None:
            moved_at.append(time.time())
            super().jump(instant, daemons_lag)

    clock = Recording(1000.0)
    driver = EventDriver(clock, plan, observe, lambda obs: {}, agent=True, backfill=False)  # type: ignore[arg-type]
    driver.start()
    while not moved_at and time.time() - began < 5:
        time.sleep(0.01)
    driver.stop()
    assert moved_at and moved_at[0] >= fresh_from
    assert driver.moves["forced"] == 0 and driver.moves["fallback"] == 0


def test_a_jump_to_a_jobs_end_lets_it_end_before_the_daemons_get_there() -> None:
    """Job 1 (started at 1000, 100 s) ends at 1100: the page goes to 1100 with the daemons at
    1099; only once Slurm has ended the job do the daemons (and Slurm's passes) reach 1100.
    Job 2 is submitted ahead at 1100 + 50: the clock then jumps there in one move (no end)."""
    plan = pd.DataFrame({"job_id": [1, 2], "submit": [0.0, 150.0], "runtime": [100.0, 10.0],
                         "walltime": [200.0, 20.0]})  # fmt: skip
    clock = HeldClock(1000.0)
    gone_at: list[float] = []

    def observe() -> Observation:
        # the job leaves the queue 0.2 s after the page reached its end
        if clock.at >= 1100.0 and not gone_at:
            gone_at.append(time.monotonic())
        ended = clock.at >= 1100.0 and time.monotonic() - gone_at[0] >= 0.2
        queue = () if ended else (("RUNNING", "t1", "1970-01-01T00:16:40"),)
        return Observation(1000.0, 2, queue, False, activity(backfill_at=clock.daemons_now()))

    def running(obs: Observation) -> dict[int, float]:
        return {1: 1000.0} if obs.queue else {}

    driver = EventDriver(clock, plan, observe, running, ahead=True)  # type: ignore[arg-type]
    began = time.monotonic()
    driver.start()
    while len(clock.moves) < 4 and time.monotonic() - began < 5:
        time.sleep(0.01)
    driver.stop()
    # a first step (the start is a change); to the end with the daemons a second behind; the
    # daemons; then (the job gone: a change) one second on, nothing ending: both together
    assert clock.moves[:4] == [(1001.0, 1001.0), (1100.0, 1099.0), (1100.0, 1100.0), (1101.0, 1101.0)]


@pytest.mark.parametrize("cycle", ["poked", "periodic", "reset"])
def test_with_jobs_pending_slurm_settles_on_the_second_before_an_end_and_runs_its_main_cycle_there(
    cycle: str,
) -> None:
    """Job 1 (started at 1000, 100 s) ends at 1100 while job 2 waits for its nodes. The clock
    first approaches 1099 (page and daemons), Slurm settles there; a main cycle must have run at
    1099 (``periodic``: Slurm's own; else the driver pokes for one, once) before the page leads
    to 1100 with the daemons at 1099; then the daemons follow, and job 2 starts at 1100 only.
    ``reset``: slurmctld's midnight falls at 1099 and sets its cycle counter to 0, which is not
    a cycle: the driver still pokes for one."""
    periodic = cycle == "periodic"
    plan = pd.DataFrame({"job_id": [1, 2], "submit": [0.0, 0.0], "runtime": [100.0, 50.0],
                         "walltime": [200.0, 200.0]})  # fmt: skip
    clock = HeldClock(1000.0)
    pokes: list[float] = []

    def observe() -> Observation:
        at_1099 = clock.daemons_now() >= 1099.0
        main = (0 if cycle == "reset" and at_1099 else 7) + len(pokes) + (1 if periodic and at_1099 else 0)
        if clock.at < 1100.0:
            queue = (("RUNNING", "t1", "x"), ("PENDING", "t2", ""))
        else:  # job 1 has ended on the page's instant; job 2 starts once the daemons are there
            queue = (("RUNNING", "t2", "x"),) if clock.daemons_now() >= 1100.0 else (("PENDING", "t2", ""),)
        counters = (2, 1, 0 if clock.at < 1100.0 else 1, main, 9)
        return Observation(1000.0, 2, queue, True, activity(counters, backfill_at=clock.daemons_now()))

    def running(obs: Observation) -> dict[int, float]:
        return {
            int(row[1][1:]): 1000.0 if row[1] == "t1" else 1100.0
            for row in obs.queue or ()
            if row[0] == "RUNNING"
        }

    driver = EventDriver(
        clock, plan, observe, running, ahead=True, poke=lambda: pokes.append(clock.daemons_now())
    )  # type: ignore[arg-type]
    began = time.monotonic()
    driver.start()
    while len(clock.moves) < 4 and time.monotonic() - began < 5:
        time.sleep(0.01)
    driver.stop()
    assert clock.moves[:4] == [(1001.0, 1001.0), (1099.0, 1099.0), (1100.0, 1099.0), (1100.0, 1100.0)]
    assert pokes == ([] if periodic else [1099.0])
    assert driver.moves["approach"] == 1 and driver.moves["unpoked"] == 0 and driver.moves["forced"] == 0


def test_the_poke_is_a_partition_update_to_its_own_state_then_the_end_marker() -> None:
    script = poke_script("batch")
    assert script.startswith("scontrol update PartitionName=batch State=UP ")
    assert script.endswith(f"echo {END}\n")


def test_the_event_clocks_estimate_goes_by_jobs_not_by_the_traces_span() -> None:
    from harness.emulation.run.estimate import Estimate
    from harness.model.timescale import TimeScale

    est = Estimate(
        jobs=1000, span_s=30 * 86400.0, scale=TimeScale(), warmup_s=2.0, cluster="docker",
        policies=("slurm-backfill-1", "slurm-fcfs"), events=True,
    )  # fmt: skip
    # per run: 60 s of set-up and collection + 1.15 s for each of 1,000 jobs; two policies
    assert est.per_run_s == pytest.approx(1210.0)
    assert est.wall_s == pytest.approx(2420.0)
    # live I/O: 3.4 s a job (its transfers and phases are events too): 60 + 3,400
    assert replace(est, live_io=True).per_run_s == pytest.approx(3460.0)


@pytest.mark.parametrize("reset", [False, True])
def test_after_the_agents_release_a_main_cycle_runs_at_the_same_second_before_the_clock_moves(
    reset: bool,
) -> None:
    """The agent released job 1 at 1000 after Slurm's main cycle of 1000 had run (it runs once
    per instant on a held clock). The driver nudges the daemons within 1000, pokes slurmctld
    once, and does not move the clock until the cycle came (0.2 s later: job 1 starts at 1000).
    ``reset``: slurmctld's midnight set its cycle counter to 0 after the poke; the cycle that
    follows counts from 0 and is seen at once, not after the poke's longest wait."""
    plan = pd.DataFrame({"job_id": [1], "submit": [0.0], "runtime": [100.0], "walltime": [200.0]})
    began = time.time()
    pokes: list[float] = []
    nudged: list[float] = []

    moved_at: list[float] = []

    class Nudged(HeldClock):
        def jump(self, instant: float, daemons_lag: float = 0.0) -> None:
            moved_at.append(time.time())
            super().jump(instant, daemons_lag)

        def nudge(self) -> float:
            self.lag -= 0.001
            nudged.append(self.daemons_now())
            return self.daemons_now()

    clock = Nudged(1000.0)

    def observe() -> Observation:
        cycled = bool(pokes) and time.time() - pokes[0] >= 0.2
        queue = (("RUNNING", "t1", "x"),) if cycled else (("PENDING", "t1", ""),)
        main = (0 if reset and pokes else 7) + int(cycled)
        counters = (1, int(cycled), 0, main, 9)
        return Observation(1000.0, 1, queue, True, activity(counters), 0, time.time() - 0.01, began)

    driver = EventDriver(
        clock, plan, observe, lambda obs: {1: 1000.0} if obs.queue[0][0] == "RUNNING" else {},  # type: ignore[index]
        agent=True, backfill=False, poke=lambda: pokes.append(time.time()),
    )  # type: ignore[arg-type]  # fmt: skip
    start = time.time()
    driver.start()
    while not clock.moves and time.time() - start < 5:
        time.sleep(0.01)
    driver.stop()
    assert nudged == [pytest.approx(1000.001)] and len(pokes) == 1
    assert moved_at[0] >= pokes[0] + 0.2  # not before the cycle
    assert clock.moves and clock.moves[0][0] == 1001.0 and clock.moves[0][1] == pytest.approx(1001.0)
    assert driver.moves["release"] == 1 and driver.moves["unpoked"] == 0


def test_with_the_agent_an_end_is_led_to_without_approaching_the_second_before() -> None:
    """Job 1 ends at 1100 while job 2 is held for the agent: Slurm can start nothing at 1099,
    so the page leads straight to 1100 (daemons at 1099), then the daemons follow."""
    plan = pd.DataFrame({"job_id": [1, 2], "submit": [0.0, 0.0], "runtime": [100.0, 50.0],
                         "walltime": [200.0, 200.0]})  # fmt: skip
    clock = HeldClock(1000.0)

    def observe() -> Observation:
        queue = (("RUNNING", "t1", "x"),) if clock.at < 1100.0 else ()
        counters = (2, 1, 0 if clock.at < 1100.0 else 1, 7, 9)
        return Observation(1000.0, 2, (*queue, ("PENDING", "t2", "")), True, activity(counters), 0,
                           time.time())  # fmt: skip

    def running(obs: Observation) -> dict[int, float]:
        return {1: 1000.0} if obs.queue and obs.queue[0][0] == "RUNNING" else {}

    driver = EventDriver(clock, plan, observe, running, agent=True, backfill=False)  # type: ignore[arg-type]
    began = time.monotonic()
    driver.start()
    while len(clock.moves) < 3 and time.monotonic() - began < 5:
        time.sleep(0.01)
    driver.stop()
    assert clock.moves[:3] == [(1001.0, 1001.0), (1100.0, 1099.0), (1100.0, 1100.0)]
    assert driver.moves["approach"] == 0
