"""Slurm accounting on the real containerised Slurm: slurmdbd + MariaDB in their own
container, sacct as Slurm's view of a run ([accounting] acceptance).

One module-scoped cluster ``bbacct`` (8 + 1 nodes, controller 6950, slurmdbd 7150, slurmd
22001-22009) replays a short plan while the dbd container is restarted mid-run.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from harness.cluster.containers.accounting import dbd_container_name, restart_dbd
from harness.cluster.containers.backend import DockerCluster
from harness.emulation.run.experiment import Experiment
from harness.emulation.run.specs import ClusterSpec, ReplaySpec, RunOptions, WorkloadSpec
from harness.platform import load_platform
from harness.workload.plan import save_plan
from tests.platforms import platform_toml

CLUSTER = "bbacct"
DBD_PORT = 7150
JOBS = 16
PLATFORM = platform_toml(
    name="acct-8+1", controller_port=6950, slurmd_base_port=22001, accounting_off=False
) + (f"\n[deployment.accounting]\nenabled = true\ndbd_port = {DBD_PORT}\n")


def _plan(tmp: Path) -> Path:
    """16 jobs over ~8 s (half-second apart), 2-4 s each on 1-4 nodes, half with burst buffers."""
    plan = pd.DataFrame({
        "job_id": range(1, JOBS + 1), "submit": [1.0 * i for i in range(JOBS)],
        "runtime": [4.0 + 2.0 * (i % 3) for i in range(JOBS)], "walltime": [20.0] * JOBS,
        "nodes": [1 + i % 4 for i in range(JOBS)], "bb_per_node_mb": [(i % 2) * 500 for i in range(JOBS)],
    })  # fmt: skip
    path = tmp / "acct.parquet"
    save_plan(plan, {"format": "harness-plan", "version": 1, "shrink": 0.0, "seed": 0}, path)
    return path


class RestartMidRun(threading.Thread):
    """Restarts the dbd container once jobs of the run are in Slurm's queue."""

    def __init__(self, cluster: DockerCluster) -> None:
        super().__init__(daemon=True)
        self.cluster, self.queued_at_restart = cluster, 0
        self.error: BaseException | None = None

    def run(self) -> None:
        deadline = time.monotonic() + 120
        try:
            while time.monotonic() < deadline:
                queue = self.cluster.exec(["squeue", "--noheader", "--format=%i"], timeout=10).stdout.split()
                if len(queue) >= 3:
                    self.queued_at_restart = len(queue)
                    restart_dbd(self.cluster)
                    return
                time.sleep(0.3)
        except BaseException as exc:  # reported by the test
            self.error = exc


@pytest.fixture(scope="module")
def acct_run(tmp_path_factory) -> Iterator[tuple[DockerCluster, Path, RestartMidRun]]:
    tmp = tmp_path_factory.mktemp("acct")
    (tmp / "platform.toml").write_text(PLATFORM)
    cluster = DockerCluster(CLUSTER, load_platform(tmp / "platform.toml"))
    cluster.down()
    try:
        cluster.up(progress=print)
        restarter = RestartMidRun(cluster)
        restarter.start()
        spec = ClusterSpec(name=CLUSTER, platform=str(tmp / "platform.toml"))
        replay = ReplaySpec(policy="slurm-backfill-1")
        opts = RunOptions(
            WorkloadSpec(trace=_plan(tmp), shrink=0.5), spec, replay, runs_dir=tmp / "runs", quiet=True
        )
        run_dir = Experiment(opts, progress=print).execute()
        restarter.join(timeout=60)
        yield cluster, run_dir, restarter
    finally:
        cluster.down()


def test_sacct_lists_every_job_and_agrees_with_sigsleep(acct_run) -> None:
    _, run_dir, restarter = acct_run
    assert restarter.error is None and restarter.queued_at_restart >= 3, "slurmdbd was restarted mid-run"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["complete"], manifest.get("incomplete_reason")
    steps = json.loads((run_dir / "steps.json").read_text())["steps"]
    check = next(s for s in steps if s["name"] == "collect")["info"]["sections"]["cross_check"]
    assert check["source"] == "sacct"
    assert check["ok"] and check["compared"] == JOBS, check
    assert check["max_start_diff_s"] <= 2.0 and check["max_end_diff_s"] <= 2.0
    sacct = json.loads((run_dir / "slurm/sacct.json").read_text())["jobs"]
    assert len({j["job_id"] for j in sacct}) == JOBS, "no record lost over the slurmdbd restart"
    assert {s for j in sacct for s in j["state"]["current"]} == {"COMPLETED"}
    assert all(j["association"]["account"] == "harness" and j["user"] == "emu" for j in sacct)
    records = json.loads((run_dir / "slurm/jobs.json").read_text())
    assert records["source"] == "sacct" and len(records["jobs"]) == JOBS
    with_bb = [r for r in records["jobs"].values() if r["licenses"]]
    assert len(with_bb) == JOBS // 2 and all(r["licenses"].startswith("bb:") for r in with_bb)


def test_mariadb_has_no_tcp_port_and_slurmdbd_listens_on_loopback(acct_run) -> None:
    out = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, check=True).stdout
    assert "mariadbd" not in out and "mysqld" not in out
    dbd = [line.split()[3] for line in out.splitlines() if "slurmdbd" in line]
    assert [a for a in dbd if a.endswith(f":{DBD_PORT}")] == [f"127.0.0.1:{DBD_PORT}"], dbd
    assert all(a.startswith("127.0.0.1:") for a in dbd), dbd  # other clusters' slurmdbd too


def test_database_credentials_are_not_in_the_image(acct_run) -> None:
    cluster, _, _ = acct_run
    secret = (cluster.state.dbd / "storage.pass").read_text().strip()
    assert len(secret) >= 32 and secret in (cluster.state.dbd / "slurmdbd.conf").read_text()
    image = cluster.client.containers.get(dbd_container_name(CLUSTER)).image.tags[0]
    history = subprocess.run(["docker", "history", "--no-trunc", image], capture_output=True, text=True)
    assert history.returncode == 0 and secret not in history.stdout
    grep = subprocess.run(["docker", "run", "--rm", "--network", "host", "--entrypoint", "grep", image,
                           "-rlsF", secret, "/etc", "/opt", "/usr/local", "/var/lib", "/root", "/home"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert grep.returncode == 1 and not grep.stdout, grep.stdout  # 1: no file holds it
    ctld = cluster.exec(["grep", "-rlsF", secret, "/etc", "/cluster", "/shared", "/var/spool/slurm"])
    assert ctld.rc == 1, "the controller container does not see the password"
