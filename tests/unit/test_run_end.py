"""The end of `harness run` without a cluster: exit statuses, signal names, the ETA, the
summary block (the report's counts), one run's jobcomp records."""

from __future__ import annotations

import types
from pathlib import Path

import pandas as pd
import pytest

from harness.analysis.document import status_counts
from harness.emulation.head import watch
from harness.emulation.head.leftovers import leftover_advice
from harness.emulation.head.quiescence import running_since
from harness.emulation.run.summary import exit_code, format_run_summary, run_summary
from harness.model.exitcodes import INTERRUPTED, describe_exit
from harness.model.jsonio import write_json
from harness.slurm.jobcomp import keep_jobs, read_jobcomp


@pytest.mark.parametrize(("rc", "text"), [(1, "exit 1"), (0, "exit 0"), (-9, "killed by SIGKILL"),
                                          (137, "killed by SIGKILL"), (143, "killed by SIGTERM"),
                                          (-2, "killed by SIGINT"), (None, "still running")])  # fmt: skip
def test_exit_statuses_name_the_signal(rc: int | None, text: str) -> None:
    assert describe_exit(rc) == text


def test_exit_codes_of_a_run() -> None:
    assert exit_code(True, "") == 0
    assert exit_code(False, INTERRUPTED) == 130
    assert exit_code(False, "timed out 5 s after the last submission instant") == 3
    assert exit_code(False, "stopped by SIGTERM") == 3


def test_running_jobs_from_squeue_rows() -> None:
    rows = [["RUNNING", "t12", "2026-11-22T07:27:19"], ["PENDING", "t13", "N/A"],  # %T %j %S
            ["COMPLETING", "t14", "2026-11-22T07:27:20"], ["RUNNING", "x", "N/A"]]  # fmt: skip
    assert running_since(rows) == {12: 1795332439.0, 14: 1795332440.0}


def test_eta_waits_for_a_running_job_and_reaches_zero_only_at_the_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr(watch.time, "time", lambda: now[0])
    head = types.SimpleNamespace(backend=None, running_since={})
    plan = pd.DataFrame({"job_id": [1, 2], "submit": [0.0, 10.0], "runtime": [50.0, 5.0]})
    w = watch.Watcher(head, plan, "runs/x", quiet=True)  # type: ignore[arg-type]
    t0 = {"t0": 990.0}
    # job 1 waits (pending): at the earliest it ends 50 s from now; job 2 at 990 + 10 + 5
    assert w._eta(t0) == 50.0
    head.running_since = {1: 995.0}  # job 1 started 5 s ago: ends at 1045
    assert w._eta(t0) == 45.0
    now[0] = 1060.0
    assert w._eta(t0) == 5.0  # job 2 has not started: 5 s from now at the earliest
    w.finished_ids = {2}
    assert w._eta(t0) == 1.0  # job 1 is past its runtime (e.g. suspended) but not over: never zero
    w.finished_ids = {1, 2}
    assert w._eta(t0) == 0.0


def _run_dir(tmp_path: Path, complete: bool, reason: str) -> Path:
    results = pd.DataFrame(
        {"job_id": [1, 2, 3, 4], "status": ["completed", "completed", "timeout", "missing"]}
    )
    results.to_parquet(tmp_path / "results.parquet")
    write_json(tmp_path / "manifest.json", {"run_id": "r1", "policy": "fcfs", "complete": complete,
                                            "incomplete_reason": reason})  # fmt: skip
    write_json(tmp_path / "metrics.json", {"mean_wait": 12.5, "util_compute": 0.5, "jobs": 3})
    return tmp_path


def test_summary_counts_are_the_reports_and_the_block_says_how_to_stop(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path, False, "1 job(s) have no record, 0 rejected by Slurm")
    summary = run_summary(run_dir, {"backend": "docker", "name": "bbemu", "up": True})
    assert summary["jobs"] == status_counts(pd.read_parquet(run_dir / "results.parquet"))
    assert summary["jobs"] == {"completed": 2, "timeout": 1, "missing": 1} and summary["exit_code"] == 3
    assert format_run_summary(summary).splitlines() == [
        "=== run r1 (fcfs): INCOMPLETE (1 job(s) have no record, 0 rejected by Slurm)",
        "jobs      4: completed 2, timeout 1, missing 1",
        "metrics   mean wait 12.50 s; util compute 50.00 %",
        f"run dir   {run_dir} (report.md, report.html)",
        "cluster   'bbemu' is still up; stop it with `harness cluster down --name bbemu`",
    ]


def test_a_run_keeps_only_its_own_jobcomp_records(tmp_path: Path) -> None:
    log = tmp_path / "jobcomp.log"
    line = "JobId={} JobState=COMPLETED StartTime=2026-11-22T07:27:19 EndTime=2026-11-22T07:27:29"
    log.write_text("".join(line.format(i) + "\n" for i in (1, 2, 3, 4)))
    assert keep_jobs(log, {3, 4}) == 2
    assert sorted(read_jobcomp(log)) == [3, 4]
    assert keep_jobs(tmp_path / "absent.log", {1}) == 0


class _Exited:
    """A replay process that has exited (status 0), its output read."""

    returncode = 0
    stdout = None

    def poll(self) -> int:
        return 0


def test_a_replay_that_wrote_done_and_exited_after_the_status_was_read_did_not_stop_early() -> None:
    status_file = {"text": '{"done": false}'}
    backend = types.SimpleNamespace(read_text=lambda rel: status_file["text"])
    head = types.SimpleNamespace(backend=backend, running_since={}, timeout=0.0)
    plan = pd.DataFrame({"job_id": [1], "submit": [0.0], "runtime": [5.0]})
    w = watch.Watcher(head, plan, "runs/x", quiet=True)  # type: ignore[arg-type]
    subs = [{"job_id": 1, "slurm_job_id": 7}]
    stale = {"done": False}
    # the replay wrote "done" and exited between the status read and the look at the process
    status_file["text"] = '{"done": true}'
    assert w._verdict(_Exited(), stale, subs, records=0, queued=1) is None  # type: ignore[arg-type]
    # it exited without writing "done": it died, the run is to be resumed (no verdict)
    status_file["text"] = '{"done": false}'
    with pytest.raises(watch.HeadProcessDied, match=r"^the replay stopped early \(exit 0\)"):
        w._verdict(_Exited(), stale, subs, records=0, queued=1)  # type: ignore[arg-type]


def test_leftover_advice_cancels_the_run_users_jobs() -> None:
    assert leftover_advice("docker", "bbx") == (
        "see them with `harness cluster status --name bbx`, cancel them with "
        "`harness cluster exec --name bbx -- scancel --user emu`"
    )
    # a site's history ran as its own users: by state, which root applies to every user
    site = leftover_advice("docker", "bbx", every_user=True)
    by_state = "scancel --state=PENDING; scancel --state=RUNNING; scancel --state=SUSPENDED"
    assert site.endswith(f"-- sh -c '{by_state}'`")
    assert leftover_advice("ssh", "vm", every_user=True) == f"cancel them on the head node with `{by_state}`"
