"""A run as named steps recorded in the run directory (harness.emulation.run.steps, harness.model.rundir):
what is recorded, and a run taken up again after its collect step, without a cluster."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from harness.emulation.collect.results import build_results, lag_stats
from harness.emulation.run.experiment import run_steps, scheduler_for_run
from harness.emulation.run.specs import ReplaySpec, RunOptions, WorkloadSpec
from harness.emulation.run.steps import STEPS, RunContext
from harness.model import rundir
from harness.model.commands import CommandResult
from harness.platform import load_platform
from harness.workload.plan import save_plan

T0 = 1_795_000_000.0
PLAN = pd.DataFrame({"job_id": [1, 2], "submit": [0.0, 1.0], "runtime": [5.0, 5.0], "walltime": [10.0, 10.0],
                     "nodes": [1, 2], "bb_per_node_mb": [10, 20]})  # fmt: skip
SUBS = [
    {"index": 0, "job_id": 1, "slurm_job_id": 11, "intended": T0, "actual": T0 + 0.001, "lag": 0.001},
    {"index": 1, "job_id": 2, "slurm_job_id": 12, "intended": T0 + 1, "actual": T0 + 1.002, "lag": 0.002},
]
RECORDS = [
    {"job_id": 1, "start": T0 + 0.5, "end": T0 + 5.5, "running": 5.0, "reason": "completed"},
    {"job_id": 2, "start": T0 + 5.7, "end": T0 + 10.7, "running": 5.0, "reason": "completed"},
]


class HeadlessBackend:
    """Answers ``sinfo --version`` only: a run taken up after its collect step needs no more."""

    name = "headless"
    platform = load_platform()

    def exec(self, cmd: list[str], user: str | None = None, timeout: float | None = None) -> CommandResult:
        assert cmd == ["sinfo", "--version"], cmd
        return CommandResult(0, "slurm 24.11.0\n", "")

    def __getattr__(self, name: str):
        raise AssertionError(f"a resumed run must not call backend.{name}")


def collected_run(run_dir: Path, replay: dict) -> RunContext:
    """A run directory whose steps up to collect are done (shrink 0.5: every time doubles)."""
    run_dir.mkdir()
    save_plan(
        PLAN, {"format": "harness-plan", "shrink": 0.5, "input": {"sha256": "abc"}}, run_dir / rundir.PLAN
    )
    build_results(PLAN, SUBS, RECORDS, T0).to_parquet(run_dir / rundir.RESULTS, index=False)
    for name, info in (("plan", {"jobs": 2}), ("cluster", {}), ("replay", replay)):
        rundir.record_step(run_dir, name, info)
    sections = {"submission": lag_stats(SUBS)}
    rundir.record_step(run_dir, "collect", {"t0": T0, "missing": 0, "rejected": 0, "sections": sections})
    opts = RunOptions(WorkloadSpec(shrink=0.5), replay=ReplaySpec(policy="slurm-backfill-1"))
    sched = scheduler_for_run("slurm-backfill-1")
    return RunContext(opts, run_dir, "r1", HeadlessBackend(), sched, lambda _: None, "2026-01-01T00:00:00")  # type: ignore[arg-type]


def test_record_step_keeps_the_order_and_records_a_step_once(tmp_path: Path) -> None:
    rundir.record_step(tmp_path, "plan", {"jobs": 3})
    rundir.record_step(tmp_path, "cluster", {})
    rundir.record_step(tmp_path, "plan", {"jobs": 4})  # done again: the newer record, last
    steps = rundir.done_steps(tmp_path)
    assert list(steps) == ["cluster", "plan"] and steps["plan"]["info"] == {"jobs": 4}
    assert json.loads((tmp_path / rundir.STEPS).read_text())["steps"][1]["name"] == "plan"
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_run_taken_up_after_collect_measures_and_reports(tmp_path: Path) -> None:
    ctx = collected_run(tmp_path / "run", {"complete": True, "reason": ""})
    run_steps(ctx, rundir.done_steps(ctx.run_dir))
    assert list(rundir.done_steps(ctx.run_dir)) == [name for name, _ in STEPS]
    metrics = json.loads((ctx.run_dir / rundir.METRICS).read_text())
    # waits 0.499 and 4.698 shrunk seconds, x2 in original time: mean (0.998 + 9.396) / 2
    assert metrics["jobs"] == 2 and metrics["mean_wait"] == pytest.approx(5.197)
    assert metrics["submission"]["submitted"] == 2 and "fidelity" not in metrics
    manifest = json.loads((ctx.run_dir / rundir.MANIFEST).read_text())
    assert manifest["complete"] and manifest["t0"] == T0 and manifest["input_sha256"] == "abc"
    assert manifest["options"]["workload"]["shrink"] == 0.5 and manifest["slurm_version"] == "slurm 24.11.0"
    assert (ctx.run_dir / rundir.REPORT_MD).exists()


def test_the_replay_verdict_reaches_the_manifest(tmp_path: Path) -> None:
    ctx = collected_run(tmp_path / "run", {"complete": False, "reason": "the replay stopped early (exit 3)"})
    run_steps(ctx, rundir.done_steps(ctx.run_dir))
    manifest = json.loads((ctx.run_dir / rundir.MANIFEST).read_text())
    assert not manifest["complete"] and manifest["incomplete_reason"] == "the replay stopped early (exit 3)"


def test_plan_step_takes_the_workload_options_and_the_run_platform(tmp_path: Path) -> None:
    """`harness run --procs-per-node/--window/...`: the plan is prepared for the cluster's platform."""
    from harness.emulation.run.steps import make_plan
    from harness.workload.platforms import sized_platform

    class SizedBackend:
        name = "sized"
        platform = sized_platform(4)  # 4 compute nodes

    trace = Path(__file__).resolve().parents[1] / "data" / "eight_per_node.swf"
    spec = WorkloadSpec(trace=trace, shrink=0.0, window=(0.0, 45.0), prepare={"procs_per_node": 16})
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    ctx = RunContext(RunOptions(spec), run_dir, "r1", SizedBackend(), scheduler_for_run("slurm-fcfs"),  # type: ignore[arg-type]
                     lambda _: None, "2026-01-01T00:00:00")  # fmt: skip
    # 16, 8, 12, 24 and 64 processors at 16 per node: 1, 1, 1, 2 and 4 nodes, all within 4 nodes;
    # the window [0, 45) s leaves out job 6 (submitted at 50)
    found = make_plan(ctx)
    assert found["jobs"] == 5 and found["run_id"] == ctx.run_id
    assert found["options"] == ctx.opts.as_dict()  # what `harness run --resume` takes up again
    plan, manifest = ctx.plan()
    assert plan["nodes"].tolist() == [1, 1, 1, 2, 4]
    assert manifest["cleaning"]["node_size"]["source"] == "option"
    assert manifest["platform"]["compute_count"] == 4 and manifest["cleaning"]["rules"]["too_large"] == 0


def test_live_io_is_the_plugin_of_an_io_aware_run_and_gives_the_plan_its_columns(tmp_path: Path) -> None:
    """`--model io-aware`: the live I/O plug-in switches Slurm to burst_buffer/lua and the plan
    step gives every job Kopański's I/O columns, the run's time scale and sigsleep's phases;
    an alloc-only run has no plug-in and keeps the license."""
    from harness.emulation.iolive.phases import PLAN_COLUMN as PHASES_COLUMN
    from harness.emulation.iolive.plugin import LiveIO
    from harness.emulation.run.slurm_time import plan_on_clock
    from harness.emulation.run.steps import make_plan, plugins_for
    from harness.model.io_models import IO_AWARE
    from harness.workload.io.kopanski import COLUMNS as KOPANSKI_COLUMNS

    class Backend:
        name = "io"
        platform = load_platform()

    trace = Path(__file__).resolve().parents[1] / "data" / "eight_per_node.swf"
    spec = WorkloadSpec(trace=trace, shrink=0.5, model=IO_AWARE, prepare={"procs_per_node": 16})
    assert plugins_for(RunOptions(WorkloadSpec(trace=trace))) == []
    [plugin] = plugins_for(RunOptions(spec))
    assert isinstance(plugin, LiveIO)
    sched = scheduler_for_run("slurm-backfill-1")
    assert sched.burst_buffer == "licenses" and plugin.configure(sched).burst_buffer == "lua"
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    ctx = RunContext(RunOptions(spec), run_dir, "r1", Backend(), plugin.configure(sched),  # type: ignore[arg-type]
                     lambda _: None, "2026-01-01T00:00:00")  # fmt: skip
    make_plan(ctx)
    plan, manifest = ctx.plan()
    assert manifest["model"] == IO_AWARE
    assert set(KOPANSKI_COLUMNS) <= set(plan.columns)
    # the head node's copy is in Slurm's seconds, with the time scale and sigsleep's phases
    target = run_dir / rundir.REPLAY_PLAN
    replayed = plan_on_clock(plan, manifest, ctx.scale, [plugin], Backend.platform, target)
    pd.testing.assert_frame_equal(ctx.replayed_plan(), replayed)
    assert (replayed["io_time_scale"] == 2.0).all()  # 1 / (1 - 0.5)
    assert replayed["io_compute_s"].tolist() == pytest.approx((plan["io_compute_s"] / 2).tolist())
    assert replayed["submit"].tolist() == pytest.approx((plan["submit"] / 2).tolist())
    assert replayed[PHASES_COLUMN].str.len().gt(0).all() and PHASES_COLUMN not in plan.columns


def test_the_plan_step_takes_the_plan_the_estimate_prepared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`harness run` prepares the plan once: for its estimate, then handed to the plan step."""
    from harness.emulation.run import steps

    def prepare_again(*_: object) -> None:
        raise AssertionError("the plan was prepared a second time")

    monkeypatch.setattr(steps, "plan_for", prepare_again)

    class Backend:
        name = "prepared"
        platform = load_platform()

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    prepared = (PLAN, {"format": "harness-plan", "shrink": 0.5})
    sched = scheduler_for_run("slurm-fcfs")
    opts = RunOptions(WorkloadSpec(shrink=0.5))
    ctx = RunContext(opts, run_dir, "r1", Backend(), sched, lambda _: None, "2026-01-01", prepared)  # type: ignore[arg-type]
    assert steps.make_plan(ctx)["jobs"] == len(PLAN)
    assert ctx.plan()[0]["job_id"].tolist() == PLAN["job_id"].tolist()


def test_first_n_selects_the_earliest_jobs_of_a_prepared_plan_file(tmp_path: Path) -> None:
    """A stored plan keeps its BB requests; --first-n still cuts it (it was silently ignored)."""
    from harness.emulation.run.specs import plan_for

    plan = pd.DataFrame({
        "job_id": [5, 6, 7], "submit": [20.0, 0.0, 10.0], "runtime": [1.0] * 3, "walltime": [2.0] * 3,
        "nodes": [1, 2, 3], "bb_per_node_mb": [0, 10, 20],
    })  # fmt: skip
    path = tmp_path / "plan.parquet"
    save_plan(plan, {"format": "harness-plan", "version": 1, "shrink": 0.0, "seed": 0}, path)
    cut, manifest = plan_for(WorkloadSpec(trace=path, first_n=2), load_platform())
    assert cut["job_id"].tolist() == [6, 7] and cut["bb_per_node_mb"].tolist() == [10, 20]
    assert manifest["first_n"] == 2
    whole, _ = plan_for(WorkloadSpec(trace=path), load_platform())
    assert len(whole) == 3


def test_the_agents_failed_looks_are_counted_apart_from_decisions_it_could_not_carry_out() -> None:
    from harness.emulation.collect.results import decision_stats

    stats = decision_stats([
        {"t": 1.0, "latency_s": 0.002, "started": [4, 5]},
        {"t": 2.0, "look_failed": "slurm_load_jobs error: Zero Bytes were transmitted or received"},
        {"t": 3.0, "error": "scontrol release 6: Invalid job id specified"},
        {"t": 4.0, "latency_s": 0.004, "started": []},
    ])  # fmt: skip
    assert (stats["decisions"], stats["started"], stats["errors"], stats["failed_looks"]) == (2, 2, 1, 1)
    assert stats["latency_max_s"] == 0.004
