"""A site's machine from its slurm.conf on the real Slurm 24.11 (``harness platform from-slurm``,
docs/site-whatif.md): GPUs without GPUs.

A slurm.conf of 4 CPU nodes and 2 nodes of 2 GPUs each, in a ``batch`` and a ``gpu`` partition,
becomes a platform (cluster ``bbsite``, controller port 7402, slurmd ports 31901-31907); its
emulated cluster has the site's partitions and nodes, and slurmctld places ``--gres=gpu:N``
jobs as on the real machine: two 1-GPU jobs share a node on distinct GPUs, a 2-GPU job takes
the other node's two.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.cluster.containers.backend import SUBMIT_USER, DockerCluster
from harness.platform import load_platform

pytestmark = pytest.mark.integration

NAME = "bbsite"
SITE_CONF = """\
ClusterName=demo
SlurmctldHost=head
GresTypes=gpu
NodeName=cn[1-4] CPUs=8 RealMemory=16000 State=UNKNOWN
NodeName=gpu[1-2] CPUs=8 RealMemory=32000 Gres=gpu:2 Features=a100 State=UNKNOWN
PartitionName=batch Nodes=cn[1-4] Default=YES MaxTime=24:00:00 State=UP
PartitionName=gpu Nodes=gpu[1-2] MaxTime=12:00:00 State=UP
"""


@pytest.fixture(scope="module")
def site_platform(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("site")
    (tmp / "slurm.conf").write_text(SITE_CONF)
    platform = tmp / "site.toml"
    result = CliRunner().invoke(
        main, ["platform", "from-slurm", str(tmp / "slurm.conf"), "-o", str(platform)]
    )
    assert result.exit_code == 0, result.output
    text = platform.read_text()
    for key, port in (("controller_port", 7402), ("slurmd_base_port", 31901), ("dbd_port", 7403)):
        text = "\n".join(
            f"{key} = {port}" if line.startswith(f"{key} =") else line for line in text.splitlines()
        )
    platform.write_text(text + "\n")
    return platform


@pytest.fixture(scope="module")
def site_cluster(site_platform: Path) -> Iterator[DockerCluster]:
    cluster = DockerCluster(NAME, load_platform(str(site_platform)))
    cluster.down()
    try:
        cluster.up()
        yield cluster
    finally:
        cluster.down()


def _sbatch(cluster: DockerCluster, gpus: int) -> int:
    wrap = "echo $SLURM_JOB_GPUS > /shared/jobs/gpus_$SLURM_JOB_ID; sleep 15"
    res = cluster.exec(["sbatch", "--parsable", "-p", "gpu", f"--gres=gpu:{gpus}", "-n1", "--time=2",
                        "--chdir=/shared/jobs", "--output=/dev/null", f"--wrap={wrap}"],
                       user=SUBMIT_USER, timeout=60)  # fmt: skip
    assert res.ok, res.stderr
    return int(res.stdout.strip())


def test_the_sites_partitions_and_gpu_nodes_are_emulated(site_cluster: DockerCluster) -> None:
    sinfo = site_cluster.exec(["sinfo", "-h", "-o", "%R %N %l %T"], timeout=30).stdout.split("\n")
    assert "batch cn[1-4] 1-00:00:00 idle" in sinfo and "gpu gpu[1-2] 12:00:00 idle" in sinfo
    node = site_cluster.exec(["scontrol", "show", "node", "gpu1"], timeout=30).stdout
    assert "Gres=gpu:2" in node and "AvailableFeatures=a100" in node


def test_gpu_jobs_are_placed_as_on_the_real_machine(site_cluster: DockerCluster) -> None:
    jobs = [_sbatch(site_cluster, gpus) for gpus in (1, 1, 2)]
    deadline, nodes = time.monotonic() + 30, {}
    while time.monotonic() < deadline and len(nodes) < 3:
        out = site_cluster.exec(["squeue", "-h", "-t", "RUNNING", "-o", "%i %N"], timeout=30).stdout
        nodes = {int(i): n for i, n in (line.split() for line in out.splitlines() if line.strip())}
        time.sleep(0.5)
    # the two 1-GPU jobs share a node, the 2-GPU job has the other one whole
    assert nodes[jobs[0]] == nodes[jobs[1]] != nodes[jobs[2]], nodes
    gpus = {}
    for job in jobs:
        out = ""
        for _ in range(20):
            out = site_cluster.exec(["cat", f"/shared/jobs/gpus_{job}"], timeout=30).stdout.strip()
            if out:
                break
            time.sleep(0.5)
        gpus[job] = out
    assert sorted([gpus[jobs[0]], gpus[jobs[1]]]) == ["0", "1"] and gpus[jobs[2]] == "0,1", gpus
    site_cluster.exec(["scancel", "-u", SUBMIT_USER], timeout=30)


# a site's own history (sacct -P, hand-written for SITE_CONF): 16 CPUs over two batch nodes
# with 8,000 MB each, two 1-GPU jobs and a 2-GPU job in gpu, all at once, 12 s each
SACCT_P = """\
JobIDRaw|JobID|Submit|Eligible|Start|End|Timelimit|ReqNodes|NNodes|ReqCPUS|NCPUS|ReqMem|ReqTRES|Partition|QOS|User|Account|State|Licenses|SubmitLine|
1|1|2024-05-01T10:00:00|2024-05-01T10:00:00|2024-05-01T10:00:00|2024-05-01T10:00:12|00:02:00|2|2|16|16|8000Mn|cpu=16,mem=16000M,node=2|batch|normal|alice|phys|COMPLETED||sbatch -p batch -N2 -n16 --mem=8000M a.sh|
2|2|2024-05-01T10:00:01|2024-05-01T10:00:01|2024-05-01T10:00:01|2024-05-01T10:00:13|00:02:00|1|1|1|1|1000Mn|cpu=1,gres/gpu=1,mem=1000M,node=1|gpu|normal|bob|chem|COMPLETED||sbatch -p gpu --gres=gpu:1 b.sh|
3|3|2024-05-01T10:00:01|2024-05-01T10:00:01|2024-05-01T10:00:01|2024-05-01T10:00:13|00:02:00|1|1|1|1|1000Mn|cpu=1,gres/gpu=1,mem=1000M,node=1|gpu|normal|bob|chem|COMPLETED||sbatch -p gpu --gres=gpu:1 b.sh|
4|4|2024-05-01T10:00:02|2024-05-01T10:00:02|2024-05-01T10:00:02|2024-05-01T10:00:14|00:02:00|1|1|2|2|1000Mn|cpu=2,gres/gpu=2,mem=1000M,node=1|gpu|normal|carol|chem|COMPLETED||sbatch -p gpu --gres=gpu:2 c.sh|
"""  # noqa: E501


def test_a_sites_own_jobs_get_their_partition_cpus_memory_and_gpus(
    site_cluster: DockerCluster, site_platform: Path, tmp_path: Path
) -> None:
    (tmp_path / "site.txt").write_text(SACCT_P)
    runner = CliRunner()
    made = runner.invoke(
        main, ["workload", "from-sacct", str(tmp_path / "site.txt"), "-o", str(tmp_path / "plan.parquet")]
    )
    assert made.exit_code == 0, made.output
    ran = runner.invoke(
        main,
        ["run", str(tmp_path / "plan.parquet"), "--platform", str(site_platform), "--name", NAME,
         "--shrink", "0", "--as-emu", "--yes", "-o", str(tmp_path / "runs")],
    )  # fmt: skip
    assert ran.exit_code == 0, ran.output
    shown = json.loads(site_cluster.exec(["scontrol", "show", "job", "--json"], timeout=30).stdout)
    jobs = {job["name"]: job for job in shown["jobs"] if job["user_name"] == SUBMIT_USER}
    assert jobs["t1"]["partition"] == "batch" and jobs["t1"]["cpus"]["number"] == 16
    assert jobs["t1"]["node_count"]["number"] == 2 and jobs["t1"]["memory_per_node"]["number"] == 8000
    assert {jobs[name]["partition"] for name in ("t2", "t3", "t4")} == {"gpu"}
    # the GPUs each asked for (per node, as scontrol shows it; sacct has the job's gres/gpu
    # TRES, test_sacct_roundtrip.py, but no index), and where they went: the two 1-GPU jobs on
    # one node's two GPUs, the 2-GPU job on the other node (with GPUs not counted, all three
    # fit one node)
    asked = {name: jobs[name]["tres_per_node"] for name in ("t2", "t3", "t4")}
    assert asked == {"t2": "gres/gpu:1", "t3": "gres/gpu:1", "t4": "gres/gpu:2"}, asked
    assert jobs["t2"]["nodes"] == jobs["t3"]["nodes"] != jobs["t4"]["nodes"]
