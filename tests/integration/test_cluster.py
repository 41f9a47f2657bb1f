"""The containerised cluster against the [cluster] acceptance list, on real Slurm."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import docker
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.cluster.containers.backend import LABEL
from harness.slurm.config import render_slurm_files
from tests.platforms import platform_toml

SMALL_PLATFORM = platform_toml(name="small-8+1", controller_port=7917, slurmd_base_port=27001)


def test_all_nodes_idle_in_their_partitions(slurm_cluster) -> None:
    res = slurm_cluster.exec(["sinfo", "--json"])
    assert res.rc == 0, res.stderr
    by_partition: dict[str, set[str]] = {}
    for entry in json.loads(res.stdout)["sinfo"]:
        part = entry["partition"]["name"]
        states = entry["node"]["state"]
        assert states == ["IDLE"], f"{part}: {states}"
        by_partition.setdefault(part, set()).update(entry["nodes"]["nodes"])
    assert len(by_partition["compute"]) == 96
    assert len(by_partition["bb"]) == 12


def test_bb_license_total(slurm_cluster) -> None:
    res = slurm_cluster.exec(["scontrol", "show", "licenses"])
    assert "LicenseName=bb" in res.stdout
    assert "Total=480000" in res.stdout


def test_bb_nodes_carry_capacity_gres(slurm_cluster) -> None:
    res = slurm_cluster.exec(["scontrol", "show", "node", "bb07"])
    assert "Gres=bb:40000" in res.stdout


def test_whole_machine_job_with_all_bb_completes(clean_queue) -> None:
    job = clean_queue.sbatch("--nodes=96", "--licenses=bb:480000", "--time=1", "--wrap=sleep 1")
    assert clean_queue.wait_state(job, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}, 60) == "COMPLETED"
    comp = (clean_queue.state.log / "jobcomp.log").read_text()
    line = next(ln for ln in comp.splitlines() if f"JobId={job} " in ln)
    assert "NodeCnt=96" in line and "JobState=COMPLETED" in line


def test_bb_request_above_capacity_is_rejected(clean_queue) -> None:
    res = clean_queue.exec(
        ["sbatch", "--chdir=/shared/jobs", "--licenses=bb:480001", "--wrap=true"], user="emu"
    )
    assert res.rc != 0
    assert "exceeds the platform's 480000 MB" in res.stderr


def test_rendered_config_on_disk_equals_template(slurm_cluster) -> None:
    # the cluster's platform: the built-in one with the slurmdbd port its cluster took
    platform = slurm_cluster.backend.platform
    assert platform.deployment.accounting.dbd_port is not None
    expected = render_slurm_files(platform, slurm_cluster.backend.sched, cluster_name="bbtest")
    for name, text in expected.items():
        assert (slurm_cluster.state.etc / name).read_text() == text
    # and it is what slurmctld actually read
    res = slurm_cluster.exec(["scontrol", "show", "config"])
    assert "SchedulerType           = sched/backfill" in res.stdout


def test_daemons_listen_on_loopback_only(slurm_cluster) -> None:
    ports = {slurm_cluster.platform.deployment.controller_port, *slurm_cluster.platform.ports().values()}
    out = subprocess.run(["ss", "-Hltn"], capture_output=True, text=True, check=True).stdout
    listeners = [line.split()[3] for line in out.splitlines()]
    ours = [addr for addr in listeners if int(addr.rsplit(":", 1)[1]) in ports]
    assert len(ours) == len(ports), "every slurmd and slurmctld listens"
    assert all(addr.startswith("127.0.0.1:") for addr in ours), ours


def test_every_container_uses_host_networking(slurm_cluster) -> None:
    containers = slurm_cluster.backend.containers()
    # the controller, the node containers and the accounting container (on by default)
    assert len(containers) == 2 + len(slurm_cluster.platform.node_groups())
    for ctr in containers:
        assert ctr.attrs["HostConfig"]["NetworkMode"] == "host"


def _cluster_processes(marker: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if marker in line]


@pytest.fixture
def small_platform_file(tmp_path: Path) -> Path:
    path = tmp_path / "small.toml"
    path.write_text(SMALL_PLATFORM)
    return path


def test_cli_up_twice_status_down_leaves_nothing(
    small_platform_file: Path, tmp_path: Path, monkeypatch
) -> None:
    """A second, small cluster beside the session one (other ports): the CLI lifecycle."""
    monkeypatch.setenv("HARNESS_STATE_DIR", str(tmp_path / "state"))
    runner = CliRunner()
    name = ["--name", "bbsmall"]
    first = runner.invoke(main, ["cluster", "up", *name, "--platform", str(small_platform_file)])
    try:
        assert first.exit_code == 0, first.output
        assert "8 compute + 1 burst-buffer nodes idle" in first.output
        second = runner.invoke(main, ["cluster", "up", *name, "--platform", str(small_platform_file)])
        assert second.exit_code == 0 and "already up" in second.output
        status = runner.invoke(main, ["cluster", "status", *name])
        assert status.exit_code == 0
        assert "compute* up 8 idle s[01-08]" in status.output
        assert len(_cluster_processes("slurmd -D -N s0")) == 8
    finally:
        down = runner.invoke(main, ["cluster", "down", *name])
    assert down.exit_code == 0, down.output
    client = docker.from_env()
    assert client.containers.list(all=True, filters={"label": f"{LABEL}=bbsmall"}) == []
    assert _cluster_processes("slurmd -D -N s0") == []
    assert _cluster_processes("slurmd -D -N sbb") == []
    assert not (tmp_path / "state" / "bbsmall").exists()
    again = runner.invoke(main, ["cluster", "down", *name])
    assert again.exit_code == 0 and "removed 0 container(s)" in again.output
