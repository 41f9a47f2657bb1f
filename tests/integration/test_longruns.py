"""Long runs on the real containerised Slurm ([long-runs] acceptance): a run started with
``--detach`` outlives the command that started it, ``harness runs`` shows it running then
complete, ``runs watch`` attaches mid-run, interim metrics appear during the run and equal
the final ones for the jobs they cover; ``runs stop`` leaves an incomplete run directory and
no job of the run in Slurm.

A cluster of its own (``bblong``, controller port 6995, slurmd ports from 24501) and a
hand-made trace of 20 short jobs (about 20 s at shrink 0.85).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from harness.analysis.metrics import summary
from harness.cluster.containers.backend import DockerCluster
from harness.platform import Platform, load_platform
from harness.platform.writing import save_platform

ROOT = Path(__file__).resolve().parents[2]
NAME = "bblong"
JOBS = 20
SHRINK = 0.85


def _platform(tmp: Path) -> Platform:
    moved = load_platform().redeployed(controller_port=6995, slurmd_base_port=24501)
    return save_platform(moved, tmp / "platform-long.toml")


def _trace(tmp: Path) -> Path:
    """20 jobs, one every 4 s, running 16-40 s on 1-8 nodes (original time)."""
    lines = ["; Version: 2.2", "; MaxNodes: 96", "; MaxProcs: 96"]
    for i in range(JOBS):
        runtime, nodes = 16 + 6 * (i % 5), 1 + i % 8
        lines.append(
            f"{i + 1} {4 * i} 0 {runtime} {nodes} -1 -1 {nodes} {runtime + 30} -1 1 1 1 -1 -1 -1 -1 -1"
        )
    path = tmp / "short.swf"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def long_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    tmp = tmp_path_factory.mktemp("longruns")
    platform = _platform(tmp)
    backend = DockerCluster(name=NAME, platform=platform)
    backend.down()
    backend.up(progress=print)
    try:
        yield {"tmp": tmp, "platform": platform, "trace": _trace(tmp), "backend": backend}
    finally:
        backend.down()


def harness(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip


def start(env: dict, runs: Path) -> Path:
    began = time.monotonic()
    where = ["--name", NAME, "--platform", env["platform"].source, "-o", str(runs)]
    res = harness(
        "run", str(env["trace"]), "--shrink", str(SHRINK), *where, "--detach", "--interim-every", "3s"
    )
    assert res.returncode == 0, res.stderr
    assert time.monotonic() - began < 30  # it returned; the run goes on
    return Path(res.stdout.strip().splitlines()[-1])


def listing(runs: Path) -> dict[str, dict]:
    res = harness("runs", "--dir", str(runs), "--json")
    assert res.returncode == 0, res.stderr
    return {Path(r["path"]).name: r for r in json.loads(res.stdout)}


def wait_for(check, timeout: float, every: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(every)
    raise AssertionError(f"not within {timeout} s")


def test_detached_run_completes_watched_with_interim_results(long_env: dict) -> None:
    runs = long_env["tmp"] / "runs-a"
    run_dir = start(long_env, runs)
    assert listing(runs)[run_dir.name]["state"] == "running", (run_dir / "run.log").read_text()
    progress = run_dir / "progress.json"
    wait_for(lambda: progress.exists() and json.loads(progress.read_text())["finished"] < JOBS, 60)
    command = [sys.executable, "-m", "harness", "runs", "watch", str(run_dir), "--interval", "1"]
    watch = subprocess.Popen(command, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    snapshot = long_env["tmp"] / "interim-copy"

    def interim_while_running() -> bool:
        metrics = run_dir / "interim" / "metrics.json"
        if not metrics.exists() or listing(runs)[run_dir.name]["state"] != "running":
            return False
        shutil.copytree(run_dir / "interim", snapshot, dirs_exist_ok=True)
        return json.loads((snapshot / "metrics.json").read_text())["interim"]["finished"] > 0

    wait_for(interim_while_running, 90, every=1.0)
    out, err = watch.communicate(timeout=120)
    assert watch.returncode == 0, out + err
    assert "running  step" in err and out.startswith("complete:")
    assert listing(runs)[run_dir.name]["state"] == "complete"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["complete"], manifest["incomplete_reason"]
    # interim metrics equal the final ones computed on the same jobs
    interim = json.loads((snapshot / "metrics.json").read_text())
    covered = pd.read_parquet(snapshot / "results.parquet")
    assert interim.pop("interim")["finished"] == len(covered) < JOBS
    final = pd.read_parquet(run_dir / "results.parquet")
    final = final[final["job_id"].isin(covered["job_id"])]
    again = summary(final, long_env["platform"])
    assert again == pytest.approx(interim)
    assert "INTERIM" in (snapshot / "report.md").read_text()


def test_stop_leaves_an_incomplete_run_and_no_job(long_env: dict) -> None:
    runs = long_env["tmp"] / "runs-b"
    run_dir = start(long_env, runs)
    progress = run_dir / "progress.json"
    wait_for(lambda: progress.exists() and json.loads(progress.read_text())["submitted"] >= 2, 60)
    res = harness("runs", "stop", str(run_dir), timeout=120)
    assert res.returncode == 3, res.stdout + res.stderr
    assert res.stdout.startswith("incomplete:")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    reason = manifest["incomplete_reason"]
    assert not manifest["complete"] and ("interrupted" in reason or "stopped" in reason), reason
    assert listing(runs)[run_dir.name]["state"] == "incomplete"
    queue = long_env["backend"].exec(["squeue", "--noheader", "--user", "emu"], timeout=30)
    assert queue.ok and not queue.stdout.strip()
