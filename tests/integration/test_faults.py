"""Daemon faults during a replay, on the real containerised Slurm ([faults] item 3).

One small cluster for the module (4 compute nodes, 1 BB node, 2 node containers; slurmctld
declares a silent node DOWN after 10 s, Slurm commands give up after 4 s) and four runs of
a few short jobs, each with one fault injected while it runs (harness.cluster.containers.faults):
a slurmd killed, slurmctld restarted, the replay process killed and resumed, a node
container stopped and started. Each report must show the fault and the jobs it touched,
and every job of the plan must be accounted for.

``HARNESS_FAULTS_TEST_CLUSTER`` and ``HARNESS_FAULTS_TEST_PORTS`` (``CONTROLLER:SLURMD_BASE``,
default ``bbfault0`` and ``6980:23001``) move the cluster to another name and other ports (a
shared host).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.cluster.base import node_states
from harness.cluster.containers import faults
from harness.cluster.containers.backend import DockerCluster
from harness.emulation.run.experiment import Experiment
from harness.emulation.run.specs import ClusterSpec, ReplaySpec, RunOptions, WorkloadSpec
from harness.model.jsonio import read_jsonl
from harness.platform import load_platform
from harness.workload.plan import save_plan
from tests.platforms import platform_toml

CLUSTER = os.environ.get("HARNESS_FAULTS_TEST_CLUSTER", "bbfault0")
PORTS = os.environ.get("HARNESS_FAULTS_TEST_PORTS", "6980:23001")  # controller : first slurmd
CONTROLLER_PORT, SLURMD_BASE_PORT = (int(port) for port in PORTS.split(":"))
SHRINK = 0.9  # plan times below are original seconds: emulated ones are a tenth
POLICY = "slurm-fcfs"
OUTCOMES = {"completed", "failed-by-fault", "cancelled"}


@pytest.fixture(scope="module")
def fault_cluster(tmp_path_factory) -> Iterator[tuple[DockerCluster, Path]]:
    tmp = tmp_path_factory.mktemp("faults")
    text = platform_toml(
        name="faults",
        controller_port=CONTROLLER_PORT,
        slurmd_base_port=SLURMD_BASE_PORT,
        compute_per_chassis=4,
    )
    platform = tmp / "platform.toml"
    platform.write_text(
        text.replace('bb_license = "bb"', 'bb_license = "bb"\nslurmd_timeout = 10\nmessage_timeout = 4')
    )
    cluster = DockerCluster(name=CLUSTER, platform=load_platform(platform))
    cluster.down()
    try:
        cluster.up(progress=print)
        yield cluster, platform
    finally:
        cluster.down()


def plan_file(tmp: Path, submits: list[float], runtimes: list[float]) -> Path:
    n, runtimes = len(submits), [float(r) for r in runtimes]
    plan = pd.DataFrame({
        "job_id": range(1, n + 1), "submit": [float(x) for x in submits], "runtime": runtimes,
        "walltime": [r + 300.0 for r in runtimes], "nodes": [1] * n, "bb_per_node_mb": [100] * n,
    })  # fmt: skip
    path = tmp / "plan.parquet"
    save_plan(plan, {"format": "harness-plan", "version": 1, "shrink": 0.0, "seed": 0}, path)
    return path


def run_with_fault(platform: Path, plan: Path, runs: Path, fault: Callable[[], None]) -> Path:
    """Run the plan; ``fault`` runs in a thread beside it (its exception fails the test)."""
    errors: list[BaseException] = []

    def inject() -> None:
        try:
            fault()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=inject, daemon=True)
    thread.start()
    opts = RunOptions(WorkloadSpec(trace=plan, shrink=SHRINK),
                      ClusterSpec(name=CLUSTER, platform=str(platform)),
                      ReplaySpec(policy=POLICY, timeout=120), runs_dir=runs, quiet=True)  # fmt: skip
    run_dir = Experiment(opts, progress=print).execute()
    thread.join(timeout=120)
    assert not errors, errors
    return run_dir


def wait_for(what: str, check: Callable[[], object], timeout: float = 90.0) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def running_on(cluster: DockerCluster) -> dict[str, int]:
    """node -> a job running there (the submit user's)."""
    res = cluster.exec(
        ["squeue", "--noheader", "--states=RUNNING", "--user=emu", "--format=%N %i"], timeout=10
    )
    return {n: int(j) for n, j in (ln.split() for ln in res.stdout.splitlines() if len(ln.split()) == 2)}


def node_down(cluster: DockerCluster, node: str) -> bool:
    return "down" in node_states(cluster).get(node, "")


def slurm_jobs_of(cluster: DockerCluster, run_id: str) -> list[int]:
    """Every job Slurm has of the run (its comment names the run), one line per submission."""
    res = cluster.exec(["squeue", "--noheader", "--states=all", "--format=%i|%k"], timeout=10)
    return [int(ln.split("|")[0]) for ln in res.stdout.splitlines() if f"run={run_id}" in ln.split()]


def outcome_of(run_dir: Path) -> tuple[dict, dict, pd.DataFrame]:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    metrics = json.loads((run_dir / "metrics.json").read_text())
    results = pd.read_parquet(run_dir / "results.parquet")
    faults_ = metrics["faults"]
    assert sum(faults_["outcomes"].values()) == len(results)
    assert set(faults_["outcomes"]) <= OUTCOMES, faults_["outcomes"]
    return manifest, faults_, results


def test_a_killed_slurmd_fails_its_job_and_the_run_goes_on(fault_cluster, tmp_path: Path) -> None:
    cluster, platform = fault_cluster
    crashed: dict[str, object] = {}

    def fault() -> None:
        node, _job = next(iter(wait_for("a running job", lambda: running_on(cluster)).items()))
        crashed.update(node=node, jobs=faults.crash_node(cluster, node))
        wait_for(f"{node} down", lambda: node_down(cluster, node))
        time.sleep(3.0)  # long enough for the run's watcher to see it
        faults.revive_node(cluster, node)

    plan = plan_file(tmp_path, [0, 0, 0, 0, 60, 60], [150, 150, 150, 150, 50, 50])
    run_dir = run_with_fault(platform, plan, tmp_path / "runs", fault)
    manifest, found, _results = outcome_of(run_dir)
    assert manifest["complete"], manifest["incomplete_reason"]
    assert found["outcomes"] == {"completed": 5, "failed-by-fault": 1}
    [failed] = [j for j in found["affected_jobs"] if j["outcome"] == "failed-by-fault"]
    assert [failed["slurm_job_id"]] == crashed["jobs"] and "NODE_FAIL" in failed["what"]
    assert any(e["event"] == "nodes down" and crashed["node"] in e["nodes"] for e in found["events"])
    report = (run_dir / "report.md").read_text()
    assert "## Faults" in report and "NODE_FAIL" in report and crashed["node"] in report


def test_slurmctld_restarted_mid_run_loses_no_job(fault_cluster, tmp_path: Path) -> None:
    cluster, platform = fault_cluster
    down: list[float] = []

    def fault() -> None:
        wait_for("a running job", lambda: running_on(cluster))
        down.append(faults.restart_controller(cluster, down_s=6.0))

    plan = plan_file(tmp_path, [0, 15, 30, 45, 60, 75, 90, 105], [80] * 8)
    run_dir = run_with_fault(platform, plan, tmp_path / "runs", fault)
    manifest, found, results = outcome_of(run_dir)
    assert manifest["complete"], manifest["incomplete_reason"]
    assert found["outcomes"] == {"completed": 8}
    assert found["submission_retries"] >= 1, found
    assert any("slurmctld unreachable" in e["event"] for e in found["events"]), found["events"]
    assert results["slurm_job_id"].is_unique
    assert sorted(slurm_jobs_of(cluster, run_dir.name)) == sorted(results["slurm_job_id"].astype(int))
    report = (run_dir / "report.md").read_text()
    assert "## Faults" in report and "submitted after" in report


def test_a_killed_replay_resumes_without_submitting_twice(fault_cluster, tmp_path: Path) -> None:
    cluster, platform = fault_cluster
    plan = plan_file(tmp_path, [0, 10, 20, 30, 100, 110, 120, 130], [40] * 8)
    runs = tmp_path / "runs"
    cmd = [sys.executable, "-m", "harness", "run", str(plan), "--shrink", str(SHRINK), "--policy", POLICY,
           "--name", CLUSTER, "--platform", str(platform), "--runs-dir", str(runs), "-q"]  # fmt: skip
    host = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        run_dir = Path(wait_for("the run directory", lambda: next(iter(runs.glob("*")), None)))  # type: ignore[arg-type]
        shared = cluster.state.shared / "runs" / run_dir.name / "submissions.jsonl"
        wait_for("four submissions", lambda: shared.exists() and len(read_jsonl(shared)) >= 4)
    finally:
        os.killpg(host.pid, signal.SIGKILL)  # the host side of the run, and ...
        host.wait(timeout=30)
    head = cluster.exec(["pgrep", "-f", f"harness replay .*{run_dir.name}"]).stdout.split()
    assert head, "the head-node replay had already ended"
    cluster.exec(["kill", "-KILL", *head], timeout=10)  # ... the replay beside slurmctld
    before = len(read_jsonl(shared))
    result = CliRunner().invoke(main, ["run", "--resume", str(run_dir)])
    assert result.exit_code == 0, result.output
    manifest, found, _results = outcome_of(run_dir)
    assert manifest["complete"], manifest["incomplete_reason"]
    assert found["outcomes"] == {"completed": 8} and found["resumes"] == 1
    assert 4 <= before < 8
    ids = [int(j["slurm_job_id"]) for j in read_jsonl(run_dir / "raw" / "submissions.jsonl")]
    assert len(ids) == len(set(ids)) == 8
    assert sorted(slurm_jobs_of(cluster, run_dir.name)) == sorted(ids)  # nothing submitted twice
    assert "resumed 1 time(s)" in (run_dir / "report.md").read_text()


def test_a_node_container_stopped_and_started_comes_back(fault_cluster, tmp_path: Path) -> None:
    cluster, platform = fault_cluster
    stopped: list[str] = []

    def fault() -> None:
        nodes = cluster.platform.node_groups()[1]
        wait_for("jobs running in the second container", lambda: set(running_on(cluster)) & set(nodes))
        stopped.extend(faults.stop_node_container(cluster, 1))
        wait_for("its nodes down", lambda: any(node_down(cluster, n) for n in stopped))
        time.sleep(3.0)
        faults.start_node_container(cluster, 1)

    plan = plan_file(tmp_path, [0, 0, 0, 0, 150, 150], [250, 250, 250, 250, 50, 50])
    run_dir = run_with_fault(platform, plan, tmp_path / "runs", fault)
    manifest, found, _results = outcome_of(run_dir)
    assert manifest["complete"], manifest["incomplete_reason"]
    # The jobs on the stopped container fail, and so may one that Slurm placed there before it
    # noticed the nodes down; every job is either completed or failed by the fault.
    outcomes = found["outcomes"]
    assert outcomes["failed-by-fault"] >= 1 and outcomes["completed"] >= 2
    assert outcomes["failed-by-fault"] + outcomes["completed"] == 6, outcomes
    kinds = [e["event"] for e in found["events"]]
    assert "nodes down" in kinds and "nodes back" in kinds, found["events"]
    states = node_states(cluster)
    assert all("down" not in states[n] for n in stopped), states
    assert "## Faults" in (run_dir / "report.md").read_text()
