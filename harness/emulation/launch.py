"""The processes of a run on the head node: the replay (``harness replay``, beside
slurmctld) and, for simulator policies, the ordering agent (``harness agent``); started
through the backend, watched until the run is over, stopped by a STOP file in the shared
run directory, and their leftover jobs cancelled when the run did not complete."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from harness.cluster.base import ClusterBackend
from harness.emulation.observe import RunObserver
from harness.emulation.specs import ReplaySpec
from harness.emulation.watch import Watcher
from harness.model import rundir
from harness.model.jsonio import parse_jsonl

SUBMIT_USER = "emu"
CANCEL_CHUNK = 500  # job ids per scontrol/scancel call


class HeadRun:
    """The replay and agent of one run; :meth:`run` returns ``(complete, reason)``."""

    def __init__(
        self, backend: ClusterBackend, run_id: str, spec: ReplaySpec, seed: int, uses_agent: bool,
        say: Callable[[str], None], quiet: bool = False,
    ) -> None:  # fmt: skip
        self.backend = backend
        self.run_id = run_id
        self.spec = spec
        self.seed = seed
        self.uses_agent = uses_agent
        self.say = say
        self.quiet = quiet
        self.shared = f"{rundir.SHARED_RUNS}/{run_id}"
        self.observer: RunObserver | None = None  # writes progress and interim results as the run goes

    @property
    def timeout(self) -> float | None:
        return self.spec.timeout

    def run(self, plan: pd.DataFrame) -> tuple[bool, str]:
        agent = self.backend.spawn(self.agent_command()) if self.uses_agent else None
        proc = self.backend.spawn(self.replay_command(), user=SUBMIT_USER)
        complete, reason = False, ""
        try:
            complete, reason = Watcher(self, plan, self.shared, self.quiet).wait(proc, agent)
        except KeyboardInterrupt:
            reason = "interrupted by the user (Ctrl-C)"
            self.say(f"\n{reason}: stopping the replay")
        finally:
            self.stop(proc)
            if agent is not None:
                self.stop(agent)  # the same STOP file ends the agent
            if not complete:
                self.cancel_or_keep()
        return complete, reason

    def replay_command(self) -> list[str]:
        cdir = self.backend.shared_path(self.shared)
        platform = self.backend.platform
        return [
            "harness", "replay", f"{cdir}/{rundir.PLAN}", "--run-dir", cdir, "--run-id", self.run_id,
            "--warmup", f"{self.spec.warmup:g}", "--drift", f"{self.spec.drift:g}",
            "--bb-license", platform.deployment.bb_license, "--partition", platform.compute.partition,
        ]  # fmt: skip

    def agent_command(self) -> list[str]:
        return [
            "harness", "agent", "--policy", self.spec.policy, "--seed", str(self.seed),
            "--run-dir", self.backend.shared_path(self.shared), "--user", SUBMIT_USER,
            "--platform", self.platform_on_head(),
        ]  # fmt: skip

    def platform_on_head(self) -> str:
        """The platform file as the head node sees it (copied into the shared run directory)."""
        source = self.backend.platform.source
        if source.startswith("<"):
            return "default"
        self.backend.put(Path(source), f"{self.shared}/{rundir.PLATFORM_FILE}")
        return self.backend.shared_path(f"{self.shared}/{rundir.PLATFORM_FILE}")

    def stop(self, proc: subprocess.Popen) -> None:
        if proc.poll() is None:
            self.backend.exec(
                ["touch", self.backend.shared_path(f"{self.shared}/{rundir.STOP_FILE}")], timeout=30
            )
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()

    def cancel_or_keep(self) -> None:
        text = self.backend.read_text(f"{self.shared}/{rundir.SUBMISSIONS}") or ""
        ids = [str(s["slurm_job_id"]) for s in parse_jsonl(text) if s.get("slurm_job_id")]
        if self.spec.keep_jobs:
            self.say(f"--keep-jobs: leaving {len(ids)} submitted job(s) in Slurm")
            return
        for chunk in range(0, len(ids), CANCEL_CHUNK):
            part = ids[chunk : chunk + CANCEL_CHUNK]
            # a suspended job that is cancelled gets SIGKILL at once and leaves no record
            self.backend.exec(["scontrol", "resume", ",".join(part)], timeout=60)
            self.backend.exec(["scancel", *part], timeout=60)
        self.say(f"asked Slurm to cancel the run's {len(ids)} submitted job(s)")

    def queue_counts(self) -> tuple[int, int] | None:
        """(pending, running) jobs of the submit user, from squeue; None if squeue failed
        (a busy slurmctld times out): that says nothing about the queue."""
        res = self.backend.exec(["squeue", "--noheader", f"--user={SUBMIT_USER}", "--format=%T"], timeout=30)
        if not res.ok:
            return None
        states = res.stdout.split()
        return states.count("PENDING"), states.count("RUNNING") + states.count("COMPLETING")
