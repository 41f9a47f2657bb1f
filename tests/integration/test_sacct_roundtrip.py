"""A site's own history round-trips ([site-whatif] #31): the real ``sacct --json`` of the
project's accounting cluster, replayed on the platform read from the slurm.conf that cluster
was made from, gives back every job with its partition, GRES and user mapping
(docs/site-whatif.md, "Round trip").

1. A site slurm.conf (4 CPU nodes in ``batch``, 2 nodes of 2 typed GPUs ``gpu:a100:2`` in
   ``gpu``) becomes a platform (``harness platform from-slurm``); its cluster ``bbrt``
   (controller port 7420, slurmd ports 31951-31957, accounting on, slurmdbd on a free port)
   comes up.
2. Users ``alice`` (account ``phys``) and ``bob`` (``chem``) are made at run time in every
   container (controller, nodes, dbd) and given an association; with ``emu`` (``harness``)
   they submit 11 sbatch calls, 15 Slurm jobs: both partitions, 1 to 4 nodes, 1 to 16 CPUs,
   ``--gres=gpu:1``, ``gpu:a100:1``, ``gpu:a100:2``, ``-N2 --gres=gpu:1`` and ``gpu:2``,
   a 4-task array and a job without ``-p`` (the default partition).
3. The cluster's own ``sacct --json --allusers`` becomes a plan (``harness workload
   from-sacct``, users pseudonymised), replayed by ``harness run --platform`` the same
   site.toml on the same cluster: one cluster at a time on the shared host, and the replay's
   jobs are told from the history's by the run's own Slurm ids (``results.parquet``) and
   names (``t<plan job id>``); the run's collection reads sacct for those ids only.
4. Job by job, through the plan's job ids (the history's Slurm ids): the replay's own sacct
   record has the original's partition, GRES (Slurm's TRES, the job's), nodes and CPUs; the
   array's tasks are plan rows and replayed jobs of their own; every replayed job is
   ``emu``'s (``--as-emu``; replaying the users is test_site_fairshare's) and the plan's
   ``user_name`` carries the mapping: one pseudonym per original user, distinct users
   distinct pseudonyms, each the HMAC of the salt kept beside the plan. The same history as
   ``sacct -P`` text gives the same plan.

39 to 41 s (2026-11-27, two runs on 2 shared cores; about 17 s more with an image build when
the sources changed). ``HARNESS_SACCT_RT_PORTS`` (``CONTROLLER:SLURMD_BASE``) moves the ports.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.cluster.containers.backend import SUBMIT_USER, DockerCluster
from harness.platform import load_platform
from harness.workload.pseudonyms import SALT_FILE, pseudonym
from tests.platforms import platform_from_slurm_conf

pytestmark = pytest.mark.integration

NAME = "bbrt"
PORTS = os.environ.get("HARNESS_SACCT_RT_PORTS", "7420:31951")
CONTROLLER_PORT, SLURMD_BASE_PORT = (int(port) for port in PORTS.split(":"))
SITE_CONF = """\
ClusterName=rtsite
SlurmctldHost=head
GresTypes=gpu
AccountingStorageTRES=gres/gpu
NodeName=cn[1-4] CPUs=8 RealMemory=16000 State=UNKNOWN
NodeName=gpu[1-2] CPUs=8 RealMemory=32000 Gres=gpu:a100:2 Features=a100 State=UNKNOWN
PartitionName=batch Nodes=cn[1-4] Default=YES MaxTime=24:00:00 State=UP
PartitionName=gpu Nodes=gpu[1-2] MaxTime=12:00:00 State=UP
"""
# user -> (uid, account); emu (uid 1000, account harness) is the image's own
USERS = {"alice": (1001, "phys"), "bob": (1002, "chem")}
ACCOUNTS = {"alice": "phys", "bob": "chem", SUBMIT_USER: "harness"}
ARRAY_TASKS = 4
TEXT_FIELDS = (
    "JobIDRaw,JobID,Submit,Eligible,Start,End,Timelimit,ReqNodes,NNodes,ReqCPUS,NCPUS,ReqMem,ReqTRES,"
    "Partition,QOS,User,Account,State,Licenses,SubmitLine"
)


@dataclass(frozen=True)
class Submission:
    user: str
    options: tuple[str, ...]
    seconds: int
    partition: str  # where Slurm must run it
    gres: dict[str, int]  # Slurm's TRES of the whole job: gres/NAME[:TYPE] -> count
    nodes: int
    cpus: int  # of each job (each array task)


HISTORY = (
    Submission("alice", ("-p", "batch", "-N2", "-n16"), 5, "batch", {}, 2, 16),
    Submission("alice", ("-p", "batch", "-N1", "-n4"), 4, "batch", {}, 1, 4),
    Submission("alice", ("-p", "batch", "-n1", f"--array=0-{ARRAY_TASKS - 1}"), 3, "batch", {}, 1, 1),
    Submission("alice", ("-p", "gpu", "-n1", "--gres=gpu:a100:1"), 4, "gpu", {"gpu": 1, "gpu:a100": 1}, 1, 1),
    Submission("bob", ("-p", "gpu", "-n1", "--gres=gpu:1"), 5, "gpu", {"gpu": 1}, 1, 1),
    Submission("bob", ("-p", "gpu", "-n2", "--gres=gpu:a100:2"), 4, "gpu", {"gpu": 2, "gpu:a100": 2}, 1, 2),
    Submission("bob", ("-p", "batch", "-N1", "-n2"), 3, "batch", {}, 1, 2),
    Submission("bob", ("-p", "gpu", "-N2", "-n2", "--gres=gpu:1"), 3, "gpu", {"gpu": 2}, 2, 2),
    Submission(SUBMIT_USER, ("-p", "gpu", "-N2", "-n4", "--gres=gpu:2"), 4, "gpu", {"gpu": 4}, 2, 4),
    Submission(SUBMIT_USER, ("-p", "batch", "-N4", "-n4"), 3, "batch", {}, 4, 4),
    Submission(SUBMIT_USER, ("-n8",), 3, "batch", {}, 1, 8),  # no -p: the default partition
    Submission(SUBMIT_USER, ("-p", "batch", "-N3", "-n6"), 3, "batch", {}, 3, 6),
)
JOBS = len(HISTORY) - 1 + ARRAY_TASKS  # Slurm jobs: the array's tasks are jobs of their own


@pytest.fixture(scope="module")
def site_platform(tmp_path_factory: pytest.TempPathFactory) -> Path:
    moved = {"controller_port": CONTROLLER_PORT, "slurmd_base_port": SLURMD_BASE_PORT, "node_containers": 2}
    platform = platform_from_slurm_conf(tmp_path_factory.mktemp("rtsite"), SITE_CONF, moved)
    assert load_platform(str(platform)).deployment.accounting.enabled  # the default: on
    return platform


@dataclass
class RoundTrip:
    submitted: dict[int, Submission]  # Slurm id of each sbatch (an array's: its array job id)
    history: list[dict[str, Any]]  # the cluster's sacct --json jobs
    plan: pd.DataFrame
    plan_text: pd.DataFrame  # the same history's sacct -P, converted with the same salt
    salt: bytes
    run_dir: Path
    replayed: dict[int, dict[str, Any]]  # plan job id -> the replay's own sacct record


def _add_users(cluster: DockerCluster) -> None:
    """alice and bob in every container (jobs run as them on the nodes, slurmctld and sacct
    resolve their names), each with an association of their own account."""
    for container in cluster.containers():
        for user, (uid, _) in USERS.items():
            made = container.exec_run(["useradd", "--uid", str(uid), "--create-home", user])
            assert made.exit_code == 0, (container.name, made.output)
    accounts = ",".join(account for _, account in USERS.values())
    commands = [["sacctmgr", "-i", "add", "account", accounts]]
    commands += [
        ["sacctmgr", "-i", "add", "user", user, f"account={account}"] for user, (_, account) in USERS.items()
    ]
    for command in commands:
        res = cluster.exec(command, timeout=60)
        assert res.ok, (command, res.stdout, res.stderr)


def _submit_history(cluster: DockerCluster) -> dict[int, Submission]:
    submitted = {}
    for job in HISTORY:
        cmd = ["sbatch", "--parsable", "--chdir=/tmp", "--output=/dev/null", "--time=2", *job.options,
               f"--wrap=sleep {job.seconds}"]  # fmt: skip
        res = cluster.exec(cmd, user=job.user, timeout=60)
        assert res.ok, (job, res.stderr)
        submitted[int(res.stdout.strip().split(";")[0])] = job
    return submitted


def _sacct_history(cluster: DockerCluster, timeout: float = 180.0) -> list[dict[str, Any]]:
    """Every job of every user, once all have ended in the database (slurmctld sends records
    asynchronously)."""
    cmd = ["sacct", "--json", "--allusers", "--starttime=2020-01-01T00:00:00"]
    deadline, jobs = time.monotonic() + timeout, []
    while time.monotonic() < deadline:
        res = cluster.exec(cmd, timeout=60)
        assert res.ok, res.stderr
        jobs = json.loads(res.stdout)["jobs"]
        if len(jobs) == JOBS and all(
            job["time"]["end"] and job["state"]["current"] == ["COMPLETED"] for job in jobs
        ):
            return jobs
        time.sleep(2.0)
    raise AssertionError(
        f"the history did not complete in {timeout:g} s: {[(j['job_id'], j['state']) for j in jobs]}"
    )


def _sacct_text(cluster: DockerCluster) -> str:
    """The same jobs as sacct -P prints them with the fields docs/site-whatif.md lists."""
    res = cluster.exec(["sacct", "--allusers", "-P", "--starttime=2020-01-01T00:00:00", "-o", TEXT_FIELDS],
                       timeout=60)  # fmt: skip
    assert res.ok, res.stderr
    return res.stdout


@pytest.fixture(scope="module")
def roundtrip(site_platform: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RoundTrip]:
    tmp = tmp_path_factory.mktemp("roundtrip")
    cluster = DockerCluster(NAME, load_platform(str(site_platform)))
    cluster.down()
    try:
        cluster.up(progress=print)
        _add_users(cluster)
        submitted = _submit_history(cluster)
        history = _sacct_history(cluster)
        (tmp / "history.json").write_text(json.dumps({"jobs": history}))
        (tmp / "history.txt").write_text(_sacct_text(cluster))
        runner = CliRunner()
        for source, plan in (("history.json", "plan.parquet"), ("history.txt", "plan-text.parquet")):
            made = runner.invoke(main, ["workload", "from-sacct", str(tmp / source), "-o", str(tmp / plan)])
            assert made.exit_code == 0, made.output  # the second reuses the first's salt file
        ran = runner.invoke(
            main,
            ["run", str(tmp / "plan.parquet"), "--platform", str(site_platform), "--name", NAME,
             "--shrink", "0", "--as-emu", "--timeout", "300", "--yes", "-o", str(tmp / "runs")],
        )  # fmt: skip
        assert ran.exit_code == 0, ran.output
        (run_dir,) = (tmp / "runs").iterdir()  # the one run
        results = pd.read_parquet(run_dir / "results.parquet")
        records = {
            job["job_id"]: job for job in json.loads((run_dir / "slurm" / "sacct.json").read_text())["jobs"]
        }
        replayed = {int(r.job_id): records[int(r.slurm_job_id)] for r in results.itertuples()}
        salt = (tmp / SALT_FILE).read_text().strip().encode()
        plans = [pd.read_parquet(tmp / name) for name in ("plan.parquet", "plan-text.parquet")]
        yield RoundTrip(submitted, history, *plans, salt, run_dir, replayed)
    finally:
        cluster.down()


def _gres(record: dict[str, Any]) -> dict[str, int]:
    """gres/NAME[:TYPE] -> count of a sacct record's requested TRES (the whole job's)."""
    return {t["name"]: int(t["count"]) for t in record["tres"]["requested"] if t["type"] == "gres"}


def _tres(record: dict[str, Any], kind: str) -> int:
    return next(int(t["count"]) for t in record["tres"]["requested"] if t["type"] == kind)


def _submission(rt: RoundTrip, record: dict[str, Any]) -> Submission:
    return rt.submitted[record["array"]["job_id"] or record["job_id"]]


def test_the_history_is_recorded_as_submitted(roundtrip: RoundTrip) -> None:
    """The cluster's own sacct: every job with its user, account, partition and GRES (the
    GRES need AccountingStorageTRES=gres/gpu,gres/gpu:a100, which the site's render sets)."""
    assert len(roundtrip.history) == JOBS
    for record in roundtrip.history:
        job = _submission(roundtrip, record)
        got = (record["user"], record["account"], record["partition"], _gres(record), _tres(record, "node"))
        assert got == (job.user, ACCOUNTS[job.user], job.partition, job.gres, job.nodes), record["job_id"]
    assert {record["user"] for record in roundtrip.history} == {"alice", "bob", SUBMIT_USER}


def test_every_job_replayed_in_its_partition_with_its_gres(roundtrip: RoundTrip) -> None:
    plan, history = roundtrip.plan, {record["job_id"]: record for record in roundtrip.history}
    assert sorted(plan["job_id"]) == sorted(history) and sorted(roundtrip.replayed) == sorted(history)
    for job_id, original in history.items():
        replay = roundtrip.replayed[job_id]
        assert replay["name"] == f"t{job_id}" and replay["state"]["current"] == ["COMPLETED"], job_id
        expected = _submission(roundtrip, original)
        got = (replay["partition"], _gres(replay), _tres(replay, "node"), _tres(replay, "cpu"))
        assert got == (
            original["partition"],
            _gres(original),
            _tres(original, "node"),
            _tres(original, "cpu"),
        )
        assert got == (expected.partition, expected.gres, expected.nodes, expected.cpus), job_id
    # the plan's GRES is sbatch's per-node --gres: -N2 --gres=gpu:2, recorded gres/gpu=4, is gpu:2
    gres = dict(zip(plan["job_id"], plan["gres"], strict=True))
    by_options = {job.options: gres[i] for i, job in roundtrip.submitted.items() if job.gres}
    assert by_options == {
        ("-p", "gpu", "-n1", "--gres=gpu:a100:1"): "gpu:a100:1",
        ("-p", "gpu", "-n1", "--gres=gpu:1"): "gpu:1",
        ("-p", "gpu", "-n2", "--gres=gpu:a100:2"): "gpu:a100:2",
        ("-p", "gpu", "-N2", "-n2", "--gres=gpu:1"): "gpu:1",
        ("-p", "gpu", "-N2", "-n4", "--gres=gpu:2"): "gpu:2",
    }
    metrics = json.loads((roundtrip.run_dir / "metrics.json").read_text())
    assert metrics["cross_check"]["ok"] and metrics["cross_check"]["compared"] == JOBS


def test_array_tasks_became_jobs_of_their_own(roundtrip: RoundTrip) -> None:
    """docs/workload.md: each task a plan row with its Slurm id, array id and task id; the
    replay submits each as a plain job (arrays as such are not carried)."""
    array_id = next(i for i, job in roundtrip.submitted.items() if "--array" in " ".join(job.options))
    tasks = roundtrip.plan[roundtrip.plan["array_job_id"] == array_id]
    assert sorted(tasks["array_task_id"]) == list(range(ARRAY_TASKS)) and tasks["job_id"].is_unique
    assert array_id in set(tasks["job_id"])  # Slurm gives the array's own id to one of its tasks
    for job_id in tasks["job_id"]:
        replay = roundtrip.replayed[int(job_id)]
        assert replay["array"]["job_id"] == 0 and replay["partition"] == "batch", job_id
    assert roundtrip.plan["array_job_id"].isna().sum() == JOBS - ARRAY_TASKS  # every other job


def test_user_pseudonyms_are_consistent_and_the_replay_is_one_user(roundtrip: RoundTrip) -> None:
    """With --as-emu the replay submits every job as emu: the mapping is the plan's user_name
    (and account_name), one pseudonym per original name."""
    assert {record["user"] for record in roundtrip.replayed.values()} == {SUBMIT_USER}
    original = {record["job_id"]: record for record in roundtrip.history}
    plan = roundtrip.plan.set_index("job_id")
    pairs = {(original[int(i)]["user"], plan.at[i, "user_name"]) for i in plan.index}
    users = dict(pairs)
    assert len(pairs) == len(users) == 3 and len(set(users.values())) == 3  # a function, one-to-one
    assert users == {name: pseudonym(roundtrip.salt, "user", name) for name in ("alice", "bob", SUBMIT_USER)}
    accounts = {(original[int(i)]["account"], plan.at[i, "account_name"]) for i in plan.index}
    assert accounts == {
        (name, pseudonym(roundtrip.salt, "account", name)) for name in ("phys", "chem", "harness")
    }
    numbers = {(plan.at[i, "user_name"], int(plan.at[i, "user"])) for i in plan.index}
    assert len(numbers) == 3 and len({n for _, n in numbers}) == 3  # the numbered column too
    assert not any(name in set(plan["user_name"]) | set(plan["account_name"]) for name in ACCOUNTS)


def test_the_same_history_as_sacct_p_text_gives_the_same_plan(roundtrip: RoundTrip) -> None:
    """sacct -P of the same cluster (where JSON is not available): the same jobs, times,
    requests, arrays and pseudonyms."""
    same = ["job_id", "submit", "eligible", "start", "end", "runtime", "walltime", "nodes", "cpus", "mem_mb",
            "gpus", "gres", "partition_name", "qos_name", "user_name", "account_name", "state",
            "array_job_id", "array_task_id"]  # fmt: skip
    pd.testing.assert_frame_equal(roundtrip.plan_text[same], roundtrip.plan[same])
