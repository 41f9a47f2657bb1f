"""A small simulation grid run as Slurm jobs on the containerised cluster, through submitit.

The runner runs on the head node (beside slurmctld, where sbatch works), the experiment
directory lives in the shared directory every node mounts, and each array task runs three cells
in turn (``--cells-per-task 3``) on an emulated node. Its table must equal the local executor's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from harness.cluster.containers.backend import DockerCluster
from harness.experiments.executors import LocalExecutor
from harness.experiments.results import RUN_COLUMNS, load_table
from harness.experiments.runner import run_experiment
from harness.experiments.spec import load_spec
from harness.platform import load_platform
from tests.platforms import platform_toml

CLUSTER = "slurmbatch"
GRID = """
[experiment]
name = "slurm-grid"
[workload]
trace = "bundled"
first_n = 80
periods = 2
[policies]
names = ["fcfs", "backfill-1", "backfill-sjf-1"]
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DockerCluster]:
    tmp = tmp_path_factory.mktemp("experslurm")
    path = tmp / "platform.toml"
    path.write_text(
        platform_toml(name=CLUSTER, controller_port=6970, slurmd_base_port=25001, node_containers=1)
    )
    backend = DockerCluster(name=CLUSTER, platform=load_platform(path))
    backend.down()
    backend.up(progress=print)
    try:
        yield backend
    finally:
        backend.down()


def sorted_table(table: pd.DataFrame) -> pd.DataFrame:
    return table.drop(columns=list(RUN_COLUMNS)).sort_values(["key", "metric"]).reset_index(drop=True)


def test_slurm_executor_gives_the_local_table(cluster: DockerCluster, tmp_path: Path) -> None:
    shared = cluster.state.shared / "exper"
    shared.mkdir(parents=True, exist_ok=True)
    (shared / "grid.toml").write_text(GRID)
    argv = ["harness", "experiment", "run", "/shared/exper/grid.toml", "-o", "/shared/exper/out",
            "--no-report", "--executor=slurm", "-j2", "--cells-per-task=3", "--cell-time=5"]  # fmt: skip
    res = cluster.exec(argv, timeout=240)
    assert res.ok, f"exit {res.rc}\n{res.stdout}\n{res.stderr}"
    assert res.stdout.strip().splitlines()[-1] == "/shared/exper/out"
    remote = load_table(shared / "out")
    assert remote["key"].nunique() == 6

    local = run_experiment(load_spec(shared / "grid.toml"), tmp_path / "local", lambda d: LocalExecutor(d, 2))
    assert local.finished == 6
    pd.testing.assert_frame_equal(sorted_table(remote), sorted_table(load_table(tmp_path / "local")))

    # The six cells ran three by three in the two tasks of one Slurm job array.
    ran_in = [
        json.loads((d / "result.json").read_text())["slurm_job"] for d in (shared / "out" / "cells").iterdir()
    ]
    assert sorted(map(ran_in.count, set(ran_in))) == [3, 3] and len({t[: t.index("_")] for t in ran_in}) == 1
