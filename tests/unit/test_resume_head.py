"""A run whose head-node processes die (the replay or agent killed, the controller container
restarted): which plan jobs a resumed replay must not submit again, the jobs left in Slurm,
the replay step left undone and the run marked to be resumed (no cluster)."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pandas as pd
import pytest

from harness.cluster.base import ClusterError
from harness.cluster.containers.diagnostics import stopped_in_start_order
from harness.emulation.head import launch
from harness.emulation.head.launch import HeadRun
from harness.emulation.head.replay import Replayer, ReplayOptions
from harness.emulation.head.resubmit import jobs_to_adopt
from harness.emulation.head.watch import HeadProcessDied
from harness.emulation.run import experiment
from harness.emulation.run.experiment import RunToResume, run_steps
from harness.emulation.run.specs import ReplaySpec
from harness.model import rundir
from harness.model.commands import CommandResult
from harness.model.jsonio import read_json
from harness.model.rundir import SIGSLEEP_LOG, STATUS, SUBMISSIONS
from harness.platform import load_platform
from tests.unit.test_replay import FakeClock, plan_of


def test_jobs_submitted_without_a_record_are_adopted_from_slurm_or_their_own_log() -> None:
    # plan 1-6: 1 and 2 recorded; 3 in Slurm only (the replay died after sbatch answered);
    # 4 only in the sigsleep log (it ran and Slurm forgot it past MinJobAge); 5 in both;
    # 6 nowhere: submitted at its instant. 9 is another plan's job.
    adopted = jobs_to_adopt(
        plan_ids=[1, 2, 3, 4, 5, 6],
        recorded={1, 2},
        in_slurm={1: 11, 3: 13, 5: 15, 9: 19},
        ran={4: 14, 5: 55},
    )
    assert adopted == {3: 13, 4: 14, 5: 15}  # Slurm's id wins: the log's may be an agent's copy


def test_a_resumed_replay_does_not_submit_a_job_slurm_forgot_but_whose_record_is_there(
    tmp_path: Path,
) -> None:
    clock = FakeClock(start=1010.0)
    calls: list[int] = []

    def submit(cmd: list[str]) -> tuple[int | None, str]:
        calls.append(int(next(a for a in cmd if a.startswith("--job-name=t"))[len("--job-name=t") :]))
        return 600 + len(calls), ""

    (tmp_path / STATUS).write_text(json.dumps({"run_id": "r1", "jobs": 3, "t0": 1002.0, "submitted": 1}))
    (tmp_path / SUBMISSIONS).write_text(json.dumps({"index": 0, "job_id": 100, "slurm_job_id": 401}) + "\n")
    (tmp_path / SIGSLEEP_LOG).write_text(
        json.dumps({"job_id": 101, "slurm_job_id": 402, "reason": "completed"}) + "\n"
    )
    opts = ReplayOptions(run_dir=tmp_path, run_id="r1", workers=1, resume=True)
    status = Replayer(plan_of([0.0, 1.0, 2.0]), opts, submit_fn=submit, clock=clock.time, sleep=clock.sleep,
                      run_jobs=lambda name: {}).run()  # fmt: skip
    assert calls == [102]  # overdue (due at 1004): at once, its lag recorded
    lines = [json.loads(x) for x in (tmp_path / SUBMISSIONS).read_text().splitlines()]
    assert [(ln["job_id"], ln.get("adopted", False)) for ln in lines] == [
        (100, False),
        (101, True),
        (102, False),
    ]
    assert lines[2]["intended"] == 1004.0 and lines[2]["lag"] == pytest.approx(6.0)
    assert (status.adopted, status.submitted, status.resumes) == (1, 3, 1)


class QuietBackend:
    """Notes every command; the shared directory is empty (a first replay)."""

    name = "quiet"
    platform = load_platform()

    def __init__(self) -> None:
        self.commands: list[list[str]] = []

    def exec(self, cmd: list[str], user: str | None = None, timeout: float | None = None) -> CommandResult:
        self.commands.append(cmd)
        return CommandResult(0, "", "")

    def spawn(self, cmd: list[str], user: str | None = None) -> types.SimpleNamespace:
        return types.SimpleNamespace(poll=lambda: 1, stdout=None)

    def read_text(self, rel: str) -> str | None:
        return None

    def shared_path(self, rel: str) -> str:
        return f"/shared/{rel}"


def head_whose_watch_ends_with(
    monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> tuple[HeadRun, QuietBackend]:
    class Watcher:
        def __init__(self, *_: object) -> None:
            pass

        def wait(self, *_: object) -> tuple[bool, str]:
            raise error

    monkeypatch.setattr(launch, "Watcher", Watcher)
    backend = QuietBackend()
    return HeadRun(backend, "r1", ReplaySpec(), 0, False, lambda _: None), backend  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "error",
    [HeadProcessDied("the replay stopped early (killed by SIGKILL)"), ClusterError("ctld is restarting")],
)
def test_a_dead_replay_leaves_its_jobs_in_slurm_and_is_not_a_verdict(
    monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> None:
    head, backend = head_whose_watch_ends_with(monkeypatch, error)
    with pytest.raises(HeadProcessDied):
        head.run(pd.DataFrame({"job_id": [1]}))
    assert not [cmd for cmd in backend.commands if cmd[0] in ("scancel", "scontrol")]
    assert head.monitor.events[-1]["event"] in (
        "the replay stopped early (killed by SIGKILL)",
        "the head node did not answer",
    )


def test_a_deliberate_stop_still_cancels_the_runs_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    head, backend = head_whose_watch_ends_with(monkeypatch, KeyboardInterrupt())
    head.backend.read_text = lambda rel: (
        '{"job_id": 1, "slurm_job_id": 7}\n' if rel.endswith(SUBMISSIONS) else None
    )  # type: ignore[method-assign]
    assert head.run(pd.DataFrame({"job_id": [1]}))[0] is False
    assert ["scancel", "7"] in backend.commands


def test_a_run_whose_head_died_is_marked_to_resume_and_its_replay_step_stays_undone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def replay(_: object) -> dict:
        raise HeadProcessDied("the replay stopped early (exit 137)", "Killed")

    manifests: list[tuple[bool, str]] = []
    monkeypatch.setattr(experiment, "STEPS", (("plan", lambda _: {"jobs": 1}), ("replay", replay)))
    monkeypatch.setattr(
        experiment, "write_manifest", lambda ctx, complete, why: manifests.append((complete, why))
    )
    ctx = types.SimpleNamespace(run_dir=tmp_path)
    with pytest.raises(RunToResume, match=r"exit 137(.|\n)*harness run --resume"):
        run_steps(ctx, {})  # type: ignore[arg-type]
    assert list(rundir.done_steps(tmp_path)) == ["plan"]
    [(complete, why)] = manifests
    assert not complete and why.startswith("replay: the replay stopped early (exit 137); its jobs are left")
    assert f"harness run --resume {tmp_path}" in why
    assert read_json(tmp_path / rundir.STEPS)["steps"][0]["name"] == "plan"


def test_a_resume_starts_the_stopped_containers_in_the_order_up_does() -> None:
    def ctr(name: str, status: str) -> types.SimpleNamespace:
        return types.SimpleNamespace(name=name, status=status)

    found = [
        ctr("c-nodes0", "exited"),
        ctr("c-ctld", "exited"),
        ctr("c-nodes1", "running"),
        ctr("c-dbd", "exited"),
    ]
    assert [c.name for c in stopped_in_start_order(found, "c")] == ["c-dbd", "c-ctld", "c-nodes0"]  # type: ignore[arg-type]
    with pytest.raises(ClusterError, match="cluster 'c' was removed"):
        stopped_in_start_order([], "c")


def test_on_the_event_clock_the_agents_search_is_not_cut_by_the_wall_clock() -> None:
    """The event clock waits for the agent: a wall-clock cut of a plan search would depend on
    the host's load, so only the policy's own budget bounds it there (the wall clock keeps the
    agent's default limit)."""
    from dataclasses import replace as replaced

    head = HeadRun(QuietBackend(), "r1", ReplaySpec(policy="plan-square-0"), 0, True, lambda _: None)  # type: ignore[arg-type]
    assert "--time-limit" not in head.agent_command()
    head.spec = replaced(head.spec, events=True)
    command = head.agent_command()
    assert command[command.index("--time-limit") + 1] == "600"
