"""A site's own jobs on its own machine (harness.emulation.head.site_requests): what each job
asks Slurm for besides its nodes, and the check that the site's machine can hold it, computed
by hand from a two-partition site."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from harness.emulation.head.replay import ReplayOptions, sbatch_command
from harness.emulation.head.site_requests import (
    check_site_plan,
    site_partition,
    site_request_words,
    uses_site_requests,
)
from harness.model.checks import InputError
from harness.platform.from_slurm import read_site
from harness.platform.site import Site

SITE_CONF = """\
ClusterName=demo
GresTypes=gpu
NodeName=cn[1-4] CPUs=8 RealMemory=16000
NodeName=gpu[1-2] CPUs=8 RealMemory=32000 Gres=gpu:a100:2
PartitionName=batch Nodes=cn[1-4] Default=YES MaxTime=24:00:00 State=UP
PartitionName=gpu Nodes=gpu[1-2] MaxTime=12:00:00 State=UP
"""


@pytest.fixture
def site(tmp_path: Path) -> Site:
    (tmp_path / "slurm.conf").write_text(SITE_CONF)
    return read_site(tmp_path / "slurm.conf").site


def job(**kw: object) -> dict:
    row: dict = {"job_id": 7, "nodes": 2, "runtime": 60.0, "walltime": 120.0, "bb_per_node_mb": 0}
    return row | kw


def test_a_jobs_cpus_memory_and_gres_become_sbatch_options_per_node() -> None:
    # 12 CPUs as 12 one-CPU tasks over its 2 nodes; 10,001 MB for the job: 5,000.5 -> 5,001 MB a node
    words = site_request_words(job(cpus=12, mem_mb=10001.0, gres="gpu:a100:1"))
    assert words == ["--ntasks=12", "--mem=5001M", "--gres=gpu:a100:1"]
    # nothing recorded (sacct's NaN, NA, an empty GRES): nothing asked
    assert site_request_words(job(cpus=pd.NA, mem_mb=float("nan"), gres="")) == []
    assert site_partition(job(partition_name="gpu")) == "gpu"
    assert site_partition(job(partition_name=pd.NA)) is None


def test_the_replay_asks_the_sites_partition_and_resources_only_when_told(tmp_path: Path) -> None:
    row = job(cpus=4, mem_mb=2000.0, gres="", partition_name="gpu")
    plain = sbatch_command(row, ReplayOptions(run_dir=tmp_path, run_id="r"), 0.0)
    assert "--partition=compute" in plain and not any(w.startswith("--ntasks") for w in plain)
    site = sbatch_command(row, ReplayOptions(run_dir=tmp_path, run_id="r", site_requests=True), 0.0)
    assert "--partition=gpu" in site and "--ntasks=4" in site and "--mem=1000M" in site
    # without a recorded partition the job goes to the run's
    nameless = sbatch_command(
        {**row, "partition_name": ""}, ReplayOptions(tmp_path, "r", site_requests=True), 0.0
    )
    assert "--partition=compute" in nameless


def test_site_requests_need_a_site_and_a_site_column(site: Site) -> None:
    assert uses_site_requests(["job_id", "nodes", "cpus"], site)
    assert not uses_site_requests(["job_id", "nodes"], site)  # an SWF plan
    assert not uses_site_requests(["job_id", "cpus"], None)  # the bundled machine


def test_a_plan_the_sites_machine_holds_passes(site: Site) -> None:
    plan = pd.DataFrame(
        [
            job(
                job_id=1, nodes=4, cpus=32, mem_mb=64000.0, gres="", partition_name="batch"
            ),  # 8 CPUs, 16,000 MB a node
            job(job_id=2, nodes=1, cpus=8, mem_mb=32000.0, gres="gpu:a100:2", partition_name="gpu"),
            job(
                job_id=3, nodes=1, cpus=1, mem_mb=float("nan"), gres="gpu:1", partition_name=""
            ),  # no partition: the default one
        ]
    )
    with pytest.raises(
        InputError, match="plan job 3 in partition 'batch': asks per node 1 CPUs, 0 MB, gpu:1"
    ):
        check_site_plan(plan, site)  # job 3 has no partition: the default (batch) has no GPU
    check_site_plan(plan.iloc[:2], site)
    # an untyped count (gpu:2, not a type named "2") on the typed a100 nodes
    check_site_plan(pd.DataFrame([job(nodes=1, gres="gpu:2", partition_name="gpu")]), site)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (job(partition_name="debug"), "plan job 7: partition 'debug' is not one of the site's (batch, gpu)"),
        (
            job(nodes=5, partition_name="batch"),
            "plan job 7 in partition 'batch': 5 nodes, the partition has 4",
        ),
        # 17 CPUs over 2 nodes: 9 a node, the nodes have 8
        (job(cpus=17, partition_name="batch"), "asks per node 9 CPUs, 0 MB"),
        # 32,002 MB over 2 nodes: 16,001 a node, batch's nodes have 16,000 (gpu's 32,000 would do)
        (job(mem_mb=32002.0, partition_name="batch"), "asks per node 0 CPUs, 16001 MB"),
        (job(gres="gpu:a100:3", partition_name="gpu"), "gpu:a100:3; no node of the partition has as much"),
        (job(gres="gpu:v100:1", partition_name="gpu"), "gpu:v100:1"),
    ],
)
def test_a_job_the_sites_machine_cannot_hold_is_named_before_the_run(
    site: Site, row: dict, message: str
) -> None:
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_site_plan(pd.DataFrame([row]), site)


def test_a_real_history_of_the_site_passes_the_check(site: Site) -> None:
    """The round trip's history (tests/data/sacct/roundtrip-24.11.json, recorded on this
    site's emulated copy): every job fits; job 12 (-N2 --gres=gpu:2, recorded gres/gpu=4)
    asks gpu:2 a node, which gpu[1-2] hold (read as gpu:4 it was refused)."""
    from harness.workload.sacct import SacctOptions, from_sacct

    data = Path(__file__).resolve().parents[1] / "data" / "sacct" / "roundtrip-24.11.json"
    plan, _, _ = from_sacct(data, SacctOptions(salt=None))
    check_site_plan(plan, site)
    twelve = plan.set_index("job_id").loc[12].to_dict() | {"job_id": 12}
    assert site_request_words(twelve) == ["--ntasks=4", "--mem=32000M", "--gres=gpu:2"]
    with pytest.raises(
        InputError, match=r"plan job 12 in partition 'gpu': asks per node 2 CPUs, 32000 MB, gpu:4"
    ):
        check_site_plan(pd.DataFrame([twelve | {"gres": "gpu:4"}]), site)
