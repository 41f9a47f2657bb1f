"""The processes of a run on the head node: the replay (``python -m harness replay``, beside
slurmctld) and, for simulator policies, the ordering agent (``python -m harness agent``); started
through the backend, watched until the run is over, stopped by a STOP file in the shared
run directory, and their leftover jobs cancelled when the run was stopped (Ctrl-C, ``--timeout``).
When one of them dies instead (killed, its container restarted), the jobs are left running and
:class:`HeadProcessDied` is raised: the run is not over, it is to be resumed.

A run taken up again (``harness run --resume``) finds the replay's status in the shared run
directory: it stops a replay of the killed run that may still be running there, then starts
``harness replay --resume`` (same t0, nothing submitted twice)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from harness.cluster.base import SUBMIT_USER, ClusterBackend, ClusterError, Spawned, node_states
from harness.emulation.head.ahead import ahead_options
from harness.emulation.head.event_times import job_durations
from harness.emulation.head.events import EventDriver, Observation
from harness.emulation.head.faultlog import FaultMonitor
from harness.emulation.head.io_watch import LiveIOWatch
from harness.emulation.head.leftovers import cancel_submitted, submitted_ids
from harness.emulation.head.progress import RunObserver
from harness.emulation.head.quiescence import (
    ControllerShell,
    SlurmActivity,
    look_script,
    poke_script,
    queue_row,
    running_since,
    split_look,
)
from harness.emulation.head.release_holds import HoldTally, ReleaseHolds
from harness.emulation.head.site_requests import uses_site_requests
from harness.emulation.head.watch import HeadProcessDied, Watcher
from harness.emulation.iolive.staging_results import wait_for_stage_outs
from harness.emulation.run.specs import ReplaySpec
from harness.model import rundir
from harness.model.clock import DEFAULT_POLL_S, VirtualClock, WallClock
from harness.model.exitcodes import INTERRUPTED
from harness.model.jsonio import parse_jsonl
from harness.model.rundir import CLOCK_PAGE
from harness.platform import built_in_name
from harness.slurm.config import HARNESS_PYTHON
from harness.slurm.passes import PassTally, read_pass_exits

# Slurm's states of a job that ended without running to its end (a fault, or a cancel)
ENDED_EARLY = (
    "NODE_FAIL",
    "FAILED",
    "BOOT_FAIL",
    "OUT_OF_MEMORY",
    "DEADLINE",
    "TIMEOUT",
    "PREEMPTED",
    "CANCELLED",
)
REPLAY_ALIVE_S = 5.0  # a replay whose status is fresher than this may still be running
# the event clock waits for the agent's decision, so a search is not cut by the wall clock
# (a cut depends on the host's load: the same run would plan differently); the policies'
# deterministic budgets (plan-*: placements) bound it
EVENTS_SEARCH_LIMIT_S = 600.0


class HeadRun:
    """The replay and agent of one run; :meth:`run` returns ``(complete, reason)``."""

    def __init__(
        self, backend: ClusterBackend, run_id: str, spec: ReplaySpec, seed: int, uses_agent: bool,
        say: Callable[[str], None], quiet: bool = False, verbose: bool = False, backfill: bool = True,
        site_users: bool = False, live_io: bool = False,
    ) -> None:  # fmt: skip
        """``backfill``: slurmctld runs sched/backfill (its passes are among the event clock's signals);
        ``site_users``: each job is submitted as its plan user (the replay runs as root);
        ``live_io``: an io-aware run (no submitting ahead at a fixed speed-up: ahead_options)."""
        self.backend = backend
        self.run_id = run_id
        self.spec = spec
        self.seed = seed
        self.uses_agent = uses_agent
        self.backfill = backfill
        self.site_users = site_users
        self.live_io = live_io
        self.say = say
        self.quiet = quiet
        self.verbose = verbose
        self.running_since: dict[int, float] = {}  # plan job id -> start (epoch s), from squeue
        self.io_watch: LiveIOWatch | None = None  # on the event clock, an io-aware run's transfers
        self.hold_tally: HoldTally | None = None  # at a fixed speed-up, what the release holds did
        self.shared = f"{rundir.SHARED_RUNS}/{run_id}"
        self.observer: RunObserver | None = None  # writes progress and interim results as the run goes
        self.passes = PassTally()  # slurmctld's scheduling passes during the run
        self.monitor = FaultMonitor()
        self.resume = False
        self.site_requests = False  # the plan's partition, CPUs, memory and GRES (a site's history)
        # plan job id -> its start as its sigsleep read it (its start marker): on the event
        # clock a job Slurm starts while the daemons are a second behind the page starts at the
        # page's instant, a second after Slurm's stamp
        self.started: dict[int, float] = {}
        self._started_offset = 0
        opener = getattr(backend, "open_shell", None)  # the Docker backend: one shell for every look
        self.shell = ControllerShell(opener) if opener is not None else None
        virtual = backend.virtual_clock() if spec.virtual else None  # (None: the wall clock)
        self.clock: WallClock | VirtualClock = virtual or WallClock()

    @property
    def timeout(self) -> float | None:
        return self.spec.timeout

    def run(self, plan: pd.DataFrame) -> tuple[bool, str]:
        if isinstance(self.clock, VirtualClock) and self.spec.speedup is not None:
            self.clock.set(None, self.spec.speedup, DEFAULT_POLL_S)  # the run's pace from now on
        self.resume = self._take_over()
        if self.resume:  # a fault event: the replay (and agent) started again
            self.monitor.events.append({"at": round(self.clock.now(), 3), "event": "replay resumed"})
        self.site_requests = uses_site_requests(plan.columns, self.backend.platform.machine.site)
        agent = self.backend.spawn(self.agent_command()) if self.uses_agent else None
        # only root may submit as another user (sbatch --uid)
        proc = self.backend.spawn(self.replay_command(), user=None if self.site_users else SUBMIT_USER)
        driver = self._event_driver(plan)
        holds = self._release_holds(plan)
        complete, reason, died = False, "", None
        try:
            complete, reason = Watcher(self, plan, self.shared, self.quiet, self.verbose).wait(proc, agent)
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM as Terminated
            reason = str(exc) or INTERRUPTED
            self.say(f"\n{reason}: stopping the replay")
        except HeadProcessDied as exc:
            died = exc
        except ClusterError as exc:  # the controller container stopped or restarting under the watcher
            died = HeadProcessDied("the head node did not answer", str(exc))
        finally:
            if driver is not None:
                self._end_events(driver, complete)
            if holds is not None:
                self.hold_tally = holds.stop()
                self.say(self.hold_tally.summary())
            self.stop(proc)
            if agent is not None:
                self.stop(agent)  # the same STOP file ends the agent
            # a deliberate stop cancels the jobs (unless --keep-jobs); a death of the head
            # node's processes leaves them to run, for `harness run --resume` to take up
            if not complete and died is None:
                self.cancel_or_keep()
        if died is not None:
            self.monitor.events.append({"at": round(self.clock.now(), 3), "event": died.what})
            self.say(f"{died}\nthe run's jobs are left in Slurm")
            raise died
        return complete, reason

    def _end_events(self, driver: EventDriver, complete: bool) -> None:
        if complete and self.io_watch is not None:  # the last stage-outs move on the clock's events
            wait_for_stage_outs(self.backend, SUBMIT_USER)
        driver.stop()
        if self.shell is not None:
            self.shell.close()
        moves = driver.moves
        self.say(
            f"event clock: {moves['jump']} jumps, {moves['creep']} one-second steps, "
            f"{moves['approach']} approaches, {moves['poke']} main cycles asked for "
            f"({moves['unpoked']} never came), {moves['release']} after the agent's releases; "
            f"{moves['fallback']} moved on the settle time alone, {moves['forced']} forced"
        )

    def _event_driver(self, plan: pd.DataFrame) -> EventDriver | None:
        """With ``--clock events``: the driver of the held clock, started."""
        if not (self.spec.events and isinstance(self.clock, VirtualClock)):
            return None
        self.io_watch = LiveIOWatch.of_run(self.backend, plan)
        driver = EventDriver(
            self.clock, plan, self._observe, self._running,
            ahead=not self.uses_agent, agent=self.uses_agent, backfill=self.backfill,
            poke=self._poke if self.shell is not None else None,
        )  # fmt: skip
        driver.start()
        return driver

    def _release_holds(self, plan: pd.DataFrame) -> ReleaseHolds | None:
        """At a fixed speed-up (not with live I/O, whose ends its phases decide): the clock held
        at each job's end until Slurm has released the job (release_holds.py), started."""
        if self.spec.speedup is None or self.live_io or self.shell is None:
            return None
        assert isinstance(self.clock, VirtualClock)
        holds = ReleaseHolds(
            self.clock, self.spec.speedup, job_durations(plan), self._read_started, self._rows
        )
        holds.start()
        return holds

    def _rows(self) -> list[list[str]] | None:
        lines = self._look()[0]
        return None if lines is None else [line.split() for line in lines]

    def _observe(self) -> Observation:
        status = self._status()
        # the agent's status before Slurm's: a release it reports then went through before
        # this look's counters (the driver waits for a main cycle after them)
        looked, released = self._agent_status() if self.uses_agent else (None, None)
        lines, activity = self._look()
        rows = tuple(queue_row(line.split()) for line in lines) if lines is not None else None
        t0 = float(status["t0"]) if status.get("t0") else None
        submitted = int(status.get("submitted", 0)) + int(status.get("failed", 0))
        self._read_started()
        running = {int(r[1][1:]) for r in rows or () if r[0] == "RUNNING" and r[1][1:].isdigit()}
        io = self.io_watch.state(self.clock.now(), running, rows) if self.io_watch is not None else None
        return Observation(
            t0, submitted, rows, bool(status.get("done")), activity, len(running - self.started.keys()),
            looked, released, io,
        )  # fmt: skip

    def _poke(self) -> None:
        """Asks slurmctld for a main scheduling cycle (the event driver, before a lead)."""
        assert self.shell is not None
        self.shell.run(poke_script(self.backend.platform.compute.partition))

    def _agent_status(self) -> tuple[float | None, float | None]:
        """When the agent's last look began and when it last released jobs (wall clock), from
        its status; None: not yet."""
        data = self.backend.read_from(f"{self.shared}/{rundir.AGENT_STATUS}", 0)
        try:
            status = json.loads(data or b"{}")
        except ValueError:
            return None, None
        return _number(status.get("looked")), _number(status.get("released"))

    def _look(self) -> tuple[list[str] | None, SlurmActivity | None]:
        """squeue's rows of the run's jobs (None: no answer) and slurmctld's activity (sdiag)."""
        columns = LiveIOWatch.squeue_columns() if self.io_watch is not None else ["--format=%T %j %S"]
        cmd = ["squeue", "--noheader", *self.users_filter(), *columns]
        if self.shell is not None:
            return split_look(self.shell.run(look_script(cmd)) or "")
        res = self.backend.exec(cmd, timeout=30)
        return ([line for line in res.stdout.splitlines() if line.strip()] if res.ok else None), None

    def _read_started(self) -> list[tuple[int, float]]:
        """The start markers sigsleep wrote since the last look (whole lines only), noted in
        :attr:`started`; returned as (plan job id, start)."""
        data = self.backend.read_from(f"{self.shared}/{rundir.STARTED}", self._started_offset)
        if not data or b"\n" not in data:
            return []
        whole = data[: data.rindex(b"\n") + 1]
        self._started_offset += len(whole)
        new = [
            (int(m["job_id"]), float(m.get("start") or 0.0))
            for m in parse_jsonl(whole.decode(errors="replace"))
            if "job_id" in m
        ]
        self.started.update(new)
        return new

    def _running(self, obs: Observation) -> dict[int, float]:
        """Plan job id -> start of the running jobs: sigsleep's own (its marker), else Slurm's."""
        return {job: self.started.get(job) or start for job, start in _running_of(obs).items()}

    def replay_command(self) -> list[str]:
        cdir = self.backend.shared_path(self.shared)
        platform = self.backend.platform
        return [
            HARNESS_PYTHON, "-m", "harness", "replay", f"{cdir}/{rundir.PLAN}", "--run-dir", cdir,
            "--run-id", self.run_id,
            "--warmup", f"{self.spec.warmup:g}", "--drift", f"{self.spec.drift:g}",
            "--bb-license", platform.deployment.bb_license, "--partition", platform.compute.partition,
            *(["--resume"] if self.resume else []),
            *(["--clock-page", self.backend.shared_path(CLOCK_PAGE)] if self.spec.virtual else []),
            # a fixed speed-up: the launch's real ms would be seconds of the job (docs/virtual-time.md)
            *(["--from-slurm-start"] if self.spec.speedup is not None else []),
            *ahead_options(
                self.uses_agent, self.spec.events, self.spec.speedup, self.backfill, self.live_io
            ),
            *(["--no-bandwidth-license"] if self.uses_agent else []),  # the agent schedules bandwidth
            *(["--site-requests"] if self.site_requests else []),
            *(["--site-users"] if self.site_users else []),
        ]  # fmt: skip

    def users_filter(self) -> list[str]:
        """squeue's words for the run's jobs: the submit user's, or every user's when the jobs
        are the site's users' (the cluster runs one run at a time)."""
        return [] if self.site_users else [f"--user={SUBMIT_USER}"]

    def agent_command(self) -> list[str]:
        return [
            HARNESS_PYTHON, "-m", "harness", "agent", "--policy", self.spec.policy,
            "--policy-seed", str(self.spec.policy_seed),
            "--run-dir", self.backend.shared_path(self.shared), "--user", SUBMIT_USER,
            "--platform", self.platform_on_head(),
            *(["--clock-page", self.backend.shared_path(CLOCK_PAGE)] if self.spec.virtual else []),
            *(["--time-limit", f"{EVENTS_SEARCH_LIMIT_S:g}"] if self.spec.events else []),
            *(arg for pair in self.spec.policy_params for arg in ("--policy-param", pair)),
        ]  # fmt: skip

    def platform_on_head(self) -> str:
        """The platform file as the head node sees it (copied into the shared run directory)."""
        source = self.backend.platform.source
        name = built_in_name(source)
        if name is not None:
            return name
        self.backend.put(Path(source), f"{self.shared}/{rundir.PLATFORM_FILE}")
        return self.backend.shared_path(f"{self.shared}/{rundir.PLATFORM_FILE}")

    def stop(self, proc: Spawned) -> None:
        if proc.poll() is None:
            # a head node that does not answer is restarting: the process ends with it (or is killed)
            with contextlib.suppress(ClusterError):
                self.backend.exec(
                    ["touch", self.backend.shared_path(f"{self.shared}/{rundir.STOP_FILE}")], timeout=30
                )
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if proc.stdout is not None:  # the pipe is ours to close, read or not
            proc.stdout.close()

    def cancel_or_keep(self) -> None:
        if self.spec.keep_jobs:
            kept = len(submitted_ids(self.backend, self.run_id))
            self.say(f"--keep-jobs: leaving {kept} submitted job(s) in Slurm")
            return
        cancel_submitted(self.backend, self.run_id, self.say)

    def _status(self) -> dict:
        try:
            return json.loads(self.backend.read_text(f"{self.shared}/{rundir.STATUS}") or "{}")
        except json.JSONDecodeError:
            return {}

    def _take_over(self) -> bool:
        """Whether a replay of this run started before (resume it); one still running is stopped."""
        status = self._status()
        if not status.get("t0"):
            return False
        stop = self.backend.shared_path(f"{self.shared}/{rundir.STOP_FILE}")
        if self._alive(status):
            self.say("a replay of this run may still be running: stopping it")
            self.backend.exec(["touch", stop], timeout=30)
            while self._alive(self._status()):  # a live replay notes its status every 0.5 s
                time.sleep(0.5)
        self.backend.exec(["rm", "-f", stop], timeout=30)
        self.say(
            f"resuming the replay (t0 {status['t0']:.0f}, {status.get('submitted', 0)} job(s) submitted)"
        )
        return True

    @staticmethod
    def _alive(status: dict) -> bool:
        return not status.get("stopped") and time.time() - float(status.get("updated", 0.0)) < REPLAY_ALIVE_S

    def observe_faults(self, queue_answered: bool) -> None:
        """Note nodes going down or back, and slurmctld not answering (:class:`FaultMonitor`);
        count slurmctld's passes (:class:`PassTally`: its counters reset at its midnight)."""
        states = node_states(self.backend) if queue_answered else None
        self.monitor.observe(self.clock.now(), states or None)
        if queue_answered:
            self.count_passes()

    def count_passes(self) -> None:
        self.passes.add(read_pass_exits(lambda cmd: self.backend.exec(cmd, timeout=30)))

    def ended_early(self, slurm_ids: set[int]) -> int:
        """How many of ``slurm_ids`` Slurm ended without their own record (fault or cancel)."""
        res = self.backend.exec(
            ["squeue", "--noheader", "--states=all", *self.users_filter(), "--format=%i|%T"], timeout=30
        )
        if not res.ok:
            return 0
        ended = {int(i) for i, _, st in (ln.partition("|") for ln in res.stdout.split()) if st in ENDED_EARLY}
        return len(ended & slurm_ids)

    def queue_counts(self) -> tuple[int, int] | None:
        """(pending, running) jobs of the run, from squeue; None if it failed (slurmctld busy)."""
        cmd = ["squeue", "--noheader", *self.users_filter(), "--format=%T %j %S"]
        res = self.backend.exec(cmd, timeout=30)
        if not res.ok:
            return None
        rows = [line.split() for line in res.stdout.splitlines() if line.strip()]
        states = [row[0] for row in rows]
        self.running_since = running_since(rows)
        return states.count("PENDING"), states.count("RUNNING") + states.count("COMPLETING")


def _running_of(obs: Observation) -> dict[int, float]:
    return running_since([list(row) for row in obs.queue or ()])


def _number(value: object) -> float | None:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
