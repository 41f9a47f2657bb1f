"""ansible/site.yml against stand-in VMs: a working cluster, idempotence, the Docker path's smoke
test, a short `harness run --cluster ssh://...`, and ansible-lint. Tests run in file order:
the replay last, since it re-renders the head's slurm.conf."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from harness.cluster.hosts.backend import HostCluster
from harness.model.paths import repo_path
from tests.ansible.conftest import (
    CLUSTER_NAME,
    HEAD,
    PLATFORM_FILE,
    SSH_PORTS,
    TIMINGS,
    WORKERS,
    PlaybookRun,
    StandIns,
)

pytestmark = pytest.mark.timeout(1200)
SUBMIT_USER = "emu"
DONE = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"}


def job_state(cluster: HostCluster, job: int) -> str:
    res = cluster.exec(["scontrol", "show", "job", str(job)], timeout=30)
    for token in res.stdout.split():
        if token.startswith("JobState="):
            return token.split("=", 1)[1]
    return "UNKNOWN"


def wait_done(cluster: HostCluster, job: int, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    state = job_state(cluster, job)
    while state not in DONE and time.monotonic() < deadline:
        time.sleep(0.5)
        state = job_state(cluster, job)
    return state


def sbatch(cluster: HostCluster, *args: str) -> int:
    res = cluster.exec(
        ["sbatch", "--parsable", "--chdir=/shared/jobs", "--output=/dev/null", *args],
        user=SUBMIT_USER,
        timeout=60,
    )
    assert res.ok, f"sbatch failed: {res.stderr}"
    return int(res.stdout.strip().split(";")[0])


# -- the deployment ------------------------------------------------------------------------------
def test_first_run_deploys_every_host(first_run: PlaybookRun) -> None:
    assert set(first_run.recap) >= {HEAD, *WORKERS, "localhost"}
    for host, counts in first_run.recap.items():
        assert counts["failed"] == 0 and counts["unreachable"] == 0, host
    assert all(first_run.recap[h]["changed"] > 0 for h in (HEAD, *WORKERS))


def test_second_run_changes_nothing(first_run: PlaybookRun, standins: StandIns) -> None:
    second = standins.run_playbook("run 2")
    assert second.rc == 0, second.tail()
    changed = {host: c["changed"] for host, c in second.recap.items() if c["changed"]}
    assert not changed, f"not idempotent: {changed}\n" + "\n".join(second.changed_tasks())
    assert set(second.recap) >= {HEAD, *WORKERS, "localhost"}


def test_each_worker_runs_its_share_of_slurmd(deployed: HostCluster, standins: StandIns) -> None:
    for worker in WORKERS:
        res = standins.docker_exec(worker, ["pgrep", "-c", "-x", "slurmd"])
        assert res.stdout.strip() == "54", f"{worker}: {res.stdout} {res.stderr}"
    head = standins.docker_exec(HEAD, ["pgrep", "-c", "-x", "slurmd"])
    assert head.stdout.strip() == "0"
    layout = json.loads(deployed.read_bytes("/etc/harness/cluster.json"))
    assert layout["workers"]["worker1"]["hostlist"] == "c[001-054]"
    assert layout["workers"]["worker2"]["first_port"] == 28055


def test_every_slurmd_reads_the_slurm_conf_of_its_own_node(deployed: HostCluster, standins: StandIns) -> None:
    """The platform is own-node: each worker has its nodes' files only, each slurmd its ``-f``."""
    for worker, first, last in ((WORKERS[0], "c001", "c054"), (WORKERS[1], "c055", "bb12")):
        res = standins.docker_exec(worker, ["pgrep", "-a", "-x", "slurmd"])
        argvs = [line.split()[1:] for line in res.stdout.splitlines()]
        assert len(argvs) == 54, f"{worker}: {res.stdout} {res.stderr}"
        for argv in argvs:
            node = argv[argv.index("-N") + 1]
            assert argv[argv.index("-f") + 1] == f"/etc/slurm/nodes/slurm-{node}.conf", argv
        files = standins.docker_exec(worker, ["ls", "/etc/slurm/nodes"]).stdout.split()
        assert len(files) == 54 + 2 and f"slurm-{first}.conf" in files and f"slurm-{last}.conf" in files
    conf = deployed.read_bytes("/etc/slurm/slurm.conf").decode()
    assert "TreeWidth=65533" in conf.splitlines() and "DebugFlags=NO_CONF_HASH" in conf.splitlines()


def test_one_munge_key_private_to_munge(deployed: HostCluster, standins: StandIns) -> None:
    sums = set()
    for host in (HEAD, *WORKERS):
        res = standins.docker_exec(host, ["stat", "-c", "%U %a %s", "/etc/munge/munge.key"])
        assert res.stdout.split() == ["munge", "400", "1024"], host
        sums.add(standins.docker_exec(host, ["sha256sum", "/etc/munge/munge.key"]).stdout.split()[0])
    assert len(sums) == 1
    rendered = standins.src / "ansible" / ".rendered" / CLUSTER_NAME / "munge.key"
    assert rendered.stat().st_mode & 0o777 == 0o600


# -- the Docker path's smoke test ----------------------------------------------------------------
def test_all_nodes_idle_in_their_partitions(deployed: HostCluster) -> None:
    res = deployed.exec(["sinfo", "--json"], timeout=60)
    assert res.ok, res.stderr
    by_partition: dict[str, set[str]] = {}
    for entry in json.loads(res.stdout)["sinfo"]:
        assert entry["node"]["state"] == ["IDLE"], entry["partition"]["name"]
        by_partition.setdefault(entry["partition"]["name"], set()).update(entry["nodes"]["nodes"])
    assert len(by_partition["compute"]) == 96
    assert len(by_partition["bb"]) == 12


def test_bb_licenses_and_gres(deployed: HostCluster) -> None:
    assert "Total=480000" in deployed.exec(["scontrol", "show", "licenses"], timeout=30).stdout
    assert "Gres=bb:40000" in deployed.exec(["scontrol", "show", "node", "bb07"], timeout=30).stdout


def test_whole_machine_job_with_all_bb_completes(deployed: HostCluster) -> None:
    job = sbatch(deployed, "--nodes=96", "--licenses=bb:480000", "--time=1", "--wrap=sleep 1")
    assert wait_done(deployed, job, 90) == "COMPLETED"
    comp = (deployed.read_bytes("/var/log/slurm/jobcomp.log") or b"").decode()
    line = next(ln for ln in comp.splitlines() if f"JobId={job} " in ln)
    assert "NodeCnt=96" in line and "JobState=COMPLETED" in line


def test_sacct_on_the_head_lists_jobs_of_the_submit_user(deployed: HostCluster) -> None:
    """The slurmdbd role: MariaDB without TCP, slurmdbd on the head, the association of 'emu'."""
    job = sbatch(deployed, "--nodes=2", "--licenses=bb:100", "--time=1", "--wrap=true")
    assert wait_done(deployed, job, 60) == "COMPLETED"
    fields = ""
    for _ in range(40):  # the record reaches slurmdbd asynchronously
        res = deployed.exec(
            ["sacct", "-n", "-P", "-X", "-j", str(job), "-o", "State,User,Account,NNodes"], timeout=30
        )
        fields = res.stdout.strip()
        if fields.startswith("COMPLETED"):
            break
        time.sleep(0.5)
    assert fields == "COMPLETED|emu|harness|2", fields
    listeners = subprocess.run(
        ["ss", "-Hltnp"], capture_output=True, text=True, check=True
    ).stdout  # host network
    assert "mariadbd" not in listeners and "127.0.0.1:7152" in listeners, listeners


def test_job_on_a_worker_writes_to_shared(deployed: HostCluster, standins: StandIns) -> None:
    # sigsleep (built on the head, installed on the workers) runs on a worker node and its
    # output reaches the head through /shared.
    wrap = "--wrap=/usr/local/bin/sigsleep --help >/shared/jobs/sigsleep-help.txt 2>&1"
    job = sbatch(deployed, "--partition=bb", "--nodelist=bb12", "--time=1", wrap)  # on worker2
    assert wait_done(deployed, job, 60) == "COMPLETED"
    text = deployed.read_text("jobs/sigsleep-help.txt")
    assert text and "sigsleep" in text.lower()
    assert (standins.shared / "jobs" / "sigsleep-help.txt").exists()


# -- an experiment over ssh:// -------------------------------------------------------------------
def test_harness_run_over_ssh(deployed: HostCluster, standins: StandIns, tmp_path: Path) -> None:
    url = f"ssh://debian@127.0.0.1:{SSH_PORTS[HEAD]}"
    cmd = [sys.executable, "-m", "harness", "run", "--cluster", url, "--platform", str(PLATFORM_FILE),
           "--first-n", "20", "--shrink", "0.999", "-o", str(tmp_path), "--quiet",
           "--timeout", "300"]  # fmt: skip
    start = time.monotonic()
    res = subprocess.run(
        cmd, capture_output=True, text=True, timeout=900, env=standins.ssh_env(), check=False
    )
    TIMINGS["harness run (20 jobs)"] = time.monotonic() - start
    assert res.returncode == 0, res.stderr[-3000:]
    run_dir = Path(res.stdout.strip().splitlines()[-1])
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["complete"], manifest["incomplete_reason"]
    assert manifest["cluster"] == {"backend": url, "name": CLUSTER_NAME}
    results = pd.read_parquet(run_dir / "results.parquet")
    assert len(results) == 20 and (results["status"] != "missing").all()
    assert (run_dir / "slurm" / "etc" / "slurm.conf").exists()
    assert "SlurmctldPort=8817" in (run_dir / "slurm" / "etc" / "slurm.conf").read_text()
    assert (run_dir / "slurm" / "jobcomp.log").exists() and (run_dir / "slurm" / "slurmctld.log").exists()
    check = json.loads((run_dir / "metrics.json").read_text())["cross_check"]
    assert check["ok"], check  # sigsleep's records and Slurm's jobcomp agree


# -- lint --------------------------------------------------------------------------------------
def test_ansible_lint_production_profile() -> None:
    res = subprocess.run(["ansible-lint", "--nocolor"], cwd=repo_path("ansible"), capture_output=True,
                         text=True, timeout=600, check=False)  # fmt: skip
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    assert "Profile 'production' was required, and it passed" in res.stdout + res.stderr
