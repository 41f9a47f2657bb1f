"""A run whose controller container restarts mid-replay, taken up with ``harness run --resume``
(issue [robustness] item 5, docs/run.md "Daemon faults during a replay").

A cluster of its own (``hres0``: 16 compute and 2 BB nodes in one node container, controller
port 7600, slurmd ports 31201-31218). A 45-job plan of short jobs (one every 2 s of Slurm's
time, 5-20 s each, 1-4 nodes: the machine is busy but keeps up) is replayed at shrink 0.9
(90 s of submissions). A third of the way in, ``docker restart hres0-ctld`` kills the replay with
the container (slurmctld's state survives on the cluster's spool volume): the first ``harness
run`` ends INCOMPLETE (exit 3) with the replay step not done and the run's jobs left in Slurm.
``harness run --resume`` then completes the plan: every plan job once in Slurm's records and
once in the results, completed; the jobs submitted after the resume on their original
instants (from the run's first t0); the restart and the resume in the report's faults.
Slurm's commands wait 5 s for an answer (``message_timeout``): the resume's wait for a launch
lost with the controller, ``BatchStartTimeout + MessageTimeout``, is 15 s. Runs in about 3 minutes.

``HARNESS_RESUME_TEST_CLUSTER`` and ``HARNESS_RESUME_TEST_PORTS`` (``CONTROLLER:SLURMD_BASE``)
move the cluster to another name and other ports (a shared host).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from harness.cluster.containers.backend import DockerCluster
from harness.model import rundir
from harness.model.exitcodes import EXIT_INCOMPLETE
from harness.model.jsonio import read_json, read_jsonl
from harness.platform import load_platform
from harness.workload.plan import save_plan
from tests.platforms import platform_toml

pytestmark = pytest.mark.integration

NAME = os.environ.get("HARNESS_RESUME_TEST_CLUSTER", "hres0")
PORTS = os.environ.get("HARNESS_RESUME_TEST_PORTS", "7600:31201")  # controller : first slurmd
CONTROLLER_PORT, SLURMD_BASE_PORT = (int(port) for port in PORTS.split(":"))
JOBS = 45  # 90 s of submissions: a third before the fault, a third after the resume
SHRINK = 0.9  # the plan's times are trace seconds: Slurm's are a tenth
RESTART_AFTER = JOBS // 3  # submissions made when the controller container restarts


def short_plan(jobs: int = JOBS) -> pd.DataFrame:
    """Jobs one every 20 trace seconds, of 50-200 s on 1-4 nodes (2 s, 5-20 s in Slurm's time)."""
    runtimes = [50.0 + 25.0 * (i % 7) for i in range(jobs)]
    return pd.DataFrame({
        "job_id": range(1, jobs + 1), "submit": [20.0 * i for i in range(jobs)], "runtime": runtimes,
        "walltime": [r + 600.0 for r in runtimes], "nodes": [1 + i % 4 for i in range(jobs)],
        "bb_per_node_mb": [100 * (i % 3) for i in range(jobs)],
    })  # fmt: skip


def plan_file(folder: Path, jobs: int) -> Path:
    path = folder / f"plan-{jobs}.parquet"
    save_plan(short_plan(jobs), {"format": "harness-plan", "version": 1, "shrink": 0.0, "seed": 0}, path)
    return path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DockerCluster, Path]]:
    platform = tmp_path_factory.mktemp("resume") / "platform.toml"
    platform.write_text(platform_toml(name="resume", controller_port=CONTROLLER_PORT,
                                      slurmd_base_port=SLURMD_BASE_PORT, chassis_per_group=2,
                                      node_containers=1)
                        # Slurm's commands wait 5 s for an answer (30 by default): the resume
                        # waits out BatchStartTimeout + MessageTimeout for a lost launch
                        .replace('bb_license = "bb"', 'bb_license = "bb"\nmessage_timeout = 5'))  # fmt: skip
    backend = DockerCluster(NAME, load_platform(str(platform)))
    backend.down()
    try:
        yield backend, platform
    finally:
        backend.down()


def harness(*args: str) -> subprocess.CompletedProcess[str]:
    """``harness ARGS`` from this checkout, as a user runs it."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, env=env,
                          check=False, timeout=600)  # fmt: skip


def run_until_fault(
    platform: Path, shared: Path, plan: Path, runs: Path, after: int, fault: list[str]
) -> tuple[Path, float]:
    """``harness run`` of ``plan`` until ``after`` submissions, then ``docker FAULT...``: the run
    must end INCOMPLETE, to be resumed; its directory and when the fault began."""
    first = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", str(plan), "--shrink", str(SHRINK), "--policy",
         "slurm-backfill-1", "--name", NAME, "--platform", str(platform), "--runs-dir", str(runs), "-q"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    )  # fmt: skip
    try:
        at = fault_after(shared, runs, after, fault)
        _, err = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == EXIT_INCOMPLETE, err[-3000:]
    assert "harness run --resume" in err, err[-3000:]
    [run_dir] = runs.iterdir()
    assert "replay" not in rundir.done_steps(run_dir)  # not a done step: to be taken up
    manifest = read_json(run_dir / rundir.MANIFEST)
    assert not manifest["complete"] and "--resume" in manifest["incomplete_reason"]
    return run_dir, at


def fault_after(shared: Path, runs: Path, after: int, fault: list[str]) -> float:
    """Once ``after`` jobs of the run in ``runs`` are submitted (the replay's submissions file,
    in the shared directory under the run's name): ``docker FAULT...``."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        files = [shared / rundir.SHARED_RUNS / run.name / rundir.SUBMISSIONS for run in runs.glob("*")]
        if files and len(read_jsonl(files[0])) >= after:
            subprocess.run(["docker", *fault], check=True, capture_output=True)
            return time.time()
        time.sleep(0.5)
    raise AssertionError(f"no {after} submissions within 300 s (in {shared})")


def assert_every_job_once_and_completed(backend: DockerCluster, run_dir: Path, jobs: int) -> None:
    """In Slurm's records, the submissions and the results: each plan job exactly once."""
    manifest = read_json(run_dir / rundir.MANIFEST)
    assert manifest["complete"] is True, manifest.get("incomplete_reason")
    assert slurm_names(backend, run_dir.name) == Counter(f"t{j}" for j in range(1, jobs + 1))
    results = pd.read_parquet(run_dir / rundir.RESULTS)
    assert sorted(results["job_id"]) == list(range(1, jobs + 1))
    assert (results["status"] == "completed").all(), results["status"].value_counts().to_dict()
    assert results["slurm_job_id"].is_unique
    subs = read_jsonl(run_dir / rundir.RAW_DIR / rundir.SUBMISSIONS)
    assert sorted(s["job_id"] for s in subs) == list(range(1, jobs + 1))


def the_death_and_the_resume_are_in_the_report(run_dir: Path, jobs: int) -> None:
    faults = read_json(run_dir / rundir.METRICS)["faults"]
    assert faults["resumes"] == 1 and faults["outcomes"] == {"completed": jobs}, faults
    kinds = [e["event"] for e in faults["events"]]
    died = [k for k in kinds if "stopped early" in k or "did not answer" in k]
    assert "replay resumed" in kinds and died, kinds
    report = (run_dir / "report.md").read_text()
    assert "## Faults" in report and "resumed 1 time(s)" in report


def slurm_names(backend: DockerCluster, run_id: str) -> Counter[str]:
    """How many jobs of each name Slurm holds for the run (its comment names the run)."""
    res = backend.exec(["squeue", "--noheader", "--states=all", "--format=%j|%T|%k"], timeout=30)
    rows = [line.split("|", 2) for line in res.stdout.splitlines()]
    return Counter(name for name, _state, comment in rows if f"run={run_id}" in comment.split())


def test_a_controller_restart_mid_run_is_resumed_without_a_job_lost_or_twice(cluster, tmp_path: Path) -> None:
    backend, platform = cluster
    restart = ["restart", backend.controller_name]
    run_dir, restarted = run_until_fault(
        platform, backend.state.shared, plan_file(tmp_path, JOBS), tmp_path / "runs", JOBS // 3, restart
    )
    left = slurm_names(backend, run_dir.name)
    assert JOBS // 3 <= sum(left.values()) < JOBS, left  # the jobs in Slurm were left there

    resumed = harness("run", "--resume", str(run_dir))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert_every_job_once_and_completed(backend, run_dir, JOBS)
    # every submission on its plan instant from the first t0; those due while the head node
    # was away went at once on the resume (their lag recorded), the later ones on time
    t0 = read_json(run_dir / rundir.RAW_DIR / rundir.STATUS)["t0"]
    submit = dict(zip(short_plan()["job_id"], short_plan()["submit"] * (1 - SHRINK), strict=True))
    made = [
        s for s in read_jsonl(run_dir / rundir.RAW_DIR / rundir.SUBMISSIONS) if s.get("actual") is not None
    ]
    assert all(abs(s["intended"] - (t0 + submit[s["job_id"]])) < 1e-3 for s in made)
    late = [s for s in made if s["actual"] > restarted]
    assert late and any(s["lag"] > 1.0 for s in late), late[:5]
    resumed_at = min(s["actual"] for s in late)
    on_time = [s for s in late if s["intended"] > resumed_at + 5.0]
    assert on_time and all(s["lag"] < 1.0 for s in on_time), on_time
    the_death_and_the_resume_are_in_the_report(run_dir, JOBS)


def test_a_stopped_controller_container_is_started_again_by_the_resume(cluster, tmp_path: Path) -> None:
    backend, platform = cluster
    jobs = 12  # a third submitted before the stop: the rest after the resume
    stop = ["stop", backend.controller_name]
    run_dir, _ = run_until_fault(
        platform, backend.state.shared, plan_file(tmp_path, jobs), tmp_path / "runs", jobs // 3, stop
    )
    assert backend.client.containers.get(backend.controller_name).status == "exited"

    resumed = harness("run", "--resume", str(run_dir))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"starting the stopped container {backend.controller_name}" in resumed.stderr
    assert_every_job_once_and_completed(backend, run_dir, jobs)
    the_death_and_the_resume_are_in_the_report(run_dir, jobs)
