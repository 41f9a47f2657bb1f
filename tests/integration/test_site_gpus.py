"""A site's machine from its slurm.conf on the real Slurm 24.11 (``harness platform from-slurm``,
docs/site-whatif.md): GPUs without GPUs.

A slurm.conf of 4 CPU nodes and 2 nodes of 2 GPUs each, in a ``batch`` and a ``gpu`` partition,
becomes a platform (cluster ``bbsite``, controller port 7402, slurmd ports 31901-31907); its
emulated cluster has the site's partitions and nodes, and slurmctld places ``--gres=gpu:N``
jobs as on the real machine: two 1-GPU jobs share a node on distinct GPUs, a 2-GPU job takes
the other node's two.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

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
def site_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DockerCluster]:
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
    cluster = DockerCluster(NAME, load_platform(str(platform)))
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
