"""`harness run` option handling, without a cluster: bad choices fail clearly, early."""

from __future__ import annotations

from click.testing import CliRunner

from harness.cli import main
from harness.emulation.collect.fidelity import simulator_twin
from harness.emulation.run.experiment import scheduler_for_run


def test_unknown_cluster_is_a_clear_error() -> None:
    result = CliRunner().invoke(main, ["run", "--cluster", "nowhere", "--repeat", "1", "--compare-sim"])
    assert result.exit_code != 0
    assert "unknown cluster 'nowhere'" in result.output


def test_unknown_policy_is_a_clear_error() -> None:
    result = CliRunner().invoke(main, ["run", "--policy", "fastest-first"])
    assert result.exit_code != 0
    assert "unknown policy" in result.output and "slurm-fcfs" in result.output


def test_policy_kinds() -> None:
    assert scheduler_for_run("slurm-backfill-2").reserve_depth == 2
    agent = scheduler_for_run("plan-square-0")
    assert agent.external_ordering and agent.mode == "builtin"
    assert simulator_twin("slurm-fcfs") == "fcfs"
    assert simulator_twin("slurm-backfill-no-future-1") == "backfill-no-future-1"
    assert simulator_twin("plan-square-0") == "plan-square-0"


class GrowingFiles:
    """A backend stand-in that serves byte ranges of in-memory files."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.bytes_read = 0

    def read_from(self, rel: str, offset: int) -> bytes | None:
        data = self.files.get(rel)
        if data is None:
            return None
        self.bytes_read += len(data) - offset
        return data[offset:]


def test_jsonl_tail_reads_only_new_complete_lines() -> None:
    from harness.emulation.head.watch import JsonlTail

    files = GrowingFiles()
    tail = JsonlTail(files, "log")  # type: ignore[arg-type]
    assert tail.poll() == []  # not written yet
    files.files["log"] = b'{"a": 1}\n{"a": 2'
    assert tail.poll() == [{"a": 1}]  # the half-written line waits
    files.files["log"] += b'}\n{"a": 3}\n'
    assert tail.poll() == [{"a": 1}, {"a": 2}, {"a": 3}]
    assert tail.offset == len(files.files["log"])
    before = files.bytes_read
    assert tail.poll() == [{"a": 1}, {"a": 2}, {"a": 3}]
    assert files.bytes_read == before  # nothing new: nothing read again


def test_watcher_asks_squeue_every_few_seconds_while_submitting_then_at_every_look(monkeypatch) -> None:
    import types

    import pandas as pd

    from harness.emulation.head import watch as run_mod

    clock = [100.0]
    monkeypatch.setattr(run_mod.time, "monotonic", lambda: clock[0])
    calls = []
    exp = types.SimpleNamespace(backend=None, queue_counts=lambda: calls.append(clock[0]) or (len(calls), 0),
                                observe_faults=lambda answered: None)  # fmt: skip
    plan = pd.DataFrame({"job_id": [1], "submit": [0.0], "runtime": [1.0]})
    watcher = run_mod.Watcher(exp, plan, "runs/x", quiet=True)
    for _ in range(12):  # one look per second while the replay submits
        watcher._queue_counts(fresh=False)
        clock[0] += 1.0
    assert calls == [100.0, 105.0, 110.0]
    assert watcher._queue_counts(fresh=False) == (3, 0)  # the cached counts in between
    watcher._queue_counts(fresh=True)
    watcher._queue_counts(fresh=True)
    assert len(calls) == 5


def test_watcher_ends_a_run_only_after_the_queue_is_seen_empty_for_the_whole_grace(monkeypatch) -> None:
    """A busy slurmctld makes squeue fail now and then; an unanswered look, or one empty look
    between looks that see jobs, must not end a run whose jobs are still queued."""
    import types

    import pandas as pd

    from harness.emulation.head import watch

    clock = [0.0]
    monkeypatch.setattr(watch.time, "monotonic", lambda: clock[0])
    answers: list[tuple[int, int] | None] = []
    head = types.SimpleNamespace(backend=None, timeout=None, queue_counts=lambda: answers.pop(0),
                                 observe_faults=lambda answered: None, ended_early=lambda ids: 0)  # fmt: skip
    plan = pd.DataFrame({"job_id": [1, 2, 3], "submit": [0.0, 0.0, 0.0], "runtime": [1.0, 1.0, 1.0]})
    watcher = watch.Watcher(head, plan, "runs/x", quiet=True)
    replay = types.SimpleNamespace(poll=lambda: None)
    subs = [{"job_id": i - 10, "slurm_job_id": i} for i in (11, 12, 13)]

    def look(answer: tuple[int, int] | None, at: float) -> tuple[bool, str] | None:
        clock[0] = at
        answers.append(answer)
        counts = watcher._queue_counts(fresh=True)
        return watcher._verdict(replay, {"done": True}, subs, 1, None if counts is None else sum(counts))

    assert look((0, 0), 0.0) is None  # one empty look: the grace starts
    assert look(None, 5.0) is None  # squeue did not answer
    assert look((2, 0), 8.0) is None  # jobs are there after all
    assert look((0, 0), 12.0) is None  # 12 s after the first empty look, but only 0 s of this one
    assert look(None, 30.0) is None  # failing squeue is not an empty queue
    assert look((0, 0), 31.0) is None
    assert look((0, 0), 41.5) == (False, "2 job(s) left the queue without a sigsleep record")
