"""A site's users and accounts replayed, so that fairshare acts as on the real machine
(docs/site-whatif.md, "Users and accounts").

The site (two 4-CPU nodes in ``batch``) runs ``priority/multifactor`` with only the fairshare
weight (``PriorityWeightFairshare=100000``, every other weight 0) and ``PriorityCalcPeriod=1``
(a usage pass every 60 s), under Slurm's own sched/builtin (``slurm-fcfs``). Its history, as
``sacct -P`` text, has three jobs, each on both nodes:

====  =====  =======  ======  =======
job   user   account  submit  runtime
====  =====  =======  ======  =======
1     alice  phys     0 s     63 s
2     alice  phys     1 s     4 s
3     bob    chem     2 s     4 s
====  =====  =======  ======  =======

Jobs 2 and 3 wait for the nodes job 1 holds. By hand: a new association's fairshare factor is
0 until slurmctld's first usage pass, so both wait with priority 1 and job 2 (submitted first)
would go first. Job 1 runs from about t = 0.5 s to 63.5 s; the usage pass comes every 60 s, so
one falls while it runs (any 60 s of the 63 s), charges alice (``phys``) the CPU-seconds job 1
has run so far (8 CPUs x its seconds) and leaves bob (``chem``) at 0. Fair tree ranks the
cluster's four user associations (root's, emu's, bob's, alice's) by usage over shares (1 each):
the three without usage tie at the top with factor 1, alice's comes last with 1/4. So job 3's
priority is 100000 x 1 = 100000 and job 2's 100000 x 1/4 = 25000 (set at the pass for a job
already waiting). When job 1 ends, job 3 starts first although job 2 was submitted a second
earlier; replayed as emu (one user), job 2 goes first. Checked by hand with ``sprio`` and
``sshare`` on the same cluster: alice 455 CPU-seconds after the pass, fairshare 0.25 and
priority 25000; bob 0, 1.0 and 100000.

The plan (``harness workload from-sacct``: pseudonyms ``u-...``, ``a-...``) is replayed by
``harness run --policy slurm-fcfs`` on the platform from the site's slurm.conf: the run makes
the two users in every container and their associations, applies the site's priority
settings (its manifest says which), submits each job as its user with its account, and its
own ``sacct`` record of each job has the pseudonyms. Cluster ``fsh``, controller port 7810,
slurmdbd 7811, slurmd ports 32401-32402; the cluster is brought down at the end. 102 s on 2
shared cores at a host load of 3 to 4 (the 63-s job is the floor: a usage pass must fall while
it runs); an image build after a change of the sources adds about 12 s.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.cluster.containers.backend import DockerCluster
from harness.platform import load_platform
from harness.workload.pseudonyms import SALT_FILE, pseudonym
from tests.platforms import platform_from_slurm_conf

pytestmark = pytest.mark.integration

NAME = "fsh"
PORTS = {"controller_port": 7810, "dbd_port": 7811, "slurmd_base_port": 32401, "node_containers": 1}
SITE_CONF = """\
ClusterName=fshsite
SlurmctldHost=head
PriorityType=priority/multifactor
PriorityWeightFairshare=100000
PriorityWeightAge=0
PriorityWeightJobSize=0
PriorityWeightPartition=0
PriorityWeightQOS=0
PriorityDecayHalfLife=7-0
PriorityCalcPeriod=1
NodeName=cn[1-2] CPUs=4 RealMemory=8000 State=UNKNOWN
PartitionName=batch Nodes=cn[1-2] Default=YES MaxTime=1:00:00 State=UP
"""
HEADER = (
    "JobIDRaw|JobID|Submit|Eligible|Start|End|Timelimit|ReqNodes|NNodes|ReqCPUS|NCPUS|ReqMem|ReqTRES|"
    "Partition|QOS|User|Account|State|Licenses|SubmitLine"
)
# job -> (user, account, submit second, runtime seconds); each on both nodes, 8 CPUs
HISTORY = {1: ("alice", "phys", 0, 63), 2: ("alice", "phys", 1, 4), 3: ("bob", "chem", 2, 4)}


def _sacct_text() -> str:
    lines = [HEADER]
    for job, (user, account, submit, runtime) in HISTORY.items():
        at = f"2024-05-01T10:00:{submit:02d}"
        end = pd.Timestamp(at) + pd.Timedelta(seconds=runtime)
        lines.append(
            f"{job}|{job}|{at}|{at}|{at}|{end.isoformat()}|00:05:00|2|2|8|8|1000Mn|cpu=8,node=2|batch|normal|"
            f"{user}|{account}|COMPLETED||sbatch -N2 -n8 job.sh"
        )
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def site_platform(tmp_path_factory: pytest.TempPathFactory) -> Path:
    platform = platform_from_slurm_conf(tmp_path_factory.mktemp("fshsite"), SITE_CONF, PORTS)
    return platform


@pytest.fixture(scope="module")
def replayed(site_platform: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The run directory of the replay, on a cluster of its own (down at the end)."""
    tmp = tmp_path_factory.mktemp("fshrun")
    (tmp / "history.txt").write_text(_sacct_text())
    cluster = DockerCluster(NAME, load_platform(str(site_platform)))
    cluster.down()
    try:
        runner = CliRunner()
        plan = tmp / "plan.parquet"
        made = runner.invoke(main, ["workload", "from-sacct", str(tmp / "history.txt"), "-o", str(plan)])
        assert made.exit_code == 0, made.output
        ran = runner.invoke(
            main,
            ["run", str(plan), "--platform", str(site_platform), "--name", NAME,
             "--policy", "slurm-fcfs", "--shrink", "0", "--timeout", "120", "--yes", "-o", str(tmp / "runs")],
        )  # fmt: skip
        assert ran.exit_code == 0, ran.output
        print(ran.output)  # the run's lines: the users made, the priority applied (pytest -s)
        (run_dir,) = (tmp / "runs").iterdir()
        yield run_dir
    finally:
        cluster.down()


def _salt(run_dir: Path) -> bytes:
    return (run_dir.parent.parent / SALT_FILE).read_text().strip().encode()


def test_each_job_runs_as_its_user_and_account_and_fairshare_starts_bobs_first(replayed: Path) -> None:
    results = pd.read_parquet(replayed / "results.parquet")
    records = {
        job["job_id"]: job for job in json.loads((replayed / "slurm" / "sacct.json").read_text())["jobs"]
    }
    salt = _salt(replayed)
    by_plan = {int(r.job_id): records[int(r.slurm_job_id)] for r in results.itertuples()}
    for job, (user, account, _, _) in HISTORY.items():
        record = by_plan[job]
        assert record["state"]["current"] == ["COMPLETED"], job
        assert (record["user"], record["account"]) == (
            pseudonym(salt, "user", user),
            pseudonym(salt, "account", account),
        ), job
    start = {int(r.job_id): float(r.start) for r in results.itertuples()}
    assert start[1] < start[3] < start[2], start  # bob's job 3 before alice's job 2, submitted earlier
    manifest = json.loads((replayed / "manifest.json").read_text())
    site = manifest["site"]
    assert site["users"]["replayed"] and site["users"]["users"] == 2 and site["users"]["accounts"] == 2
    assert site["priority"]["applied"]["PriorityWeightFairshare"] == 100000
    assert site["priority"]["applied"]["PriorityType"] == "priority/multifactor"
