"""A Slurm setting as an experiment axis on the real Slurm: two emulated cells of one policy that
differ by ``bf_window``, and each cell's slurmctld runs with its own value (cluster ``expersettings``,
ports 7500 / 32501+; never run by the unit suite: ``pytest -m integration`` with Docker)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.cluster.containers.backend import DockerCluster
from harness.experiments.emulate_cell import RUN_DIR
from harness.experiments.executors import LocalExecutor
from harness.experiments.results import load_table
from harness.experiments.runner import run_experiment
from harness.experiments.spec import load_spec
from harness.model.rundir import SETTINGS_DIFF, SETTINGS_RECORD
from harness.platform import load_platform
from tests.platforms import platform_toml

pytestmark = pytest.mark.integration
CLUSTER = "expersettings"
# ten jobs of 2-8 nodes on 8, 100-200 s of original time each (1-2 s at shrink 0.99)
SWF = "; MaxNodes: 8\n" + "".join(
    f"{i} {10 * i} -1 {100 + 10 * i} {2 + i % 4 * 2} -1 -1 {2 + i % 4 * 2} 300 -1 1 1 1 -1 1 -1 -1 -1\n"
    for i in range(1, 11)
)
EXPERIMENT = f"""
[experiment]
name = "expersettings"
mode = "emulate"
metrics = ["mean_wait", "makespan"]
[workload]
trace = "ten.swf"
bb_model = "constant"
bb_constant_mb = 100
[platform]
file = "platform.toml"
[policies]
names = ["slurm-backfill-1"]
[emulate]
shrink = [0.99]
cluster = "docker"
cluster_name = "{CLUSTER}"
[slurm]
"SchedulerParameters.bf_window" = WINDOWS
"""


def scheduler_parameters(backend: DockerCluster) -> str:
    """What the running slurmctld says its SchedulerParameters are."""
    shown = backend.exec(["scontrol", "show", "config"], timeout=30).stdout
    found = re.search(r"^SchedulerParameters\s*=\s*(\S+)", shown, re.MULTILINE)
    assert found, shown
    return found.group(1)


def test_each_cells_slurmctld_runs_with_its_setting(tmp_path: Path) -> None:
    platform = tmp_path / "platform.toml"
    platform.write_text(platform_toml(name="expersettings-8+1", controller_port=7500, slurmd_base_port=32501,
                                      node_containers=1))  # fmt: skip
    (tmp_path / "ten.swf").write_text(SWF)
    backend = DockerCluster(name=CLUSTER, platform=load_platform(platform))
    backend.down()
    out = tmp_path / "out"
    try:
        # the first cell alone, then the grid of both: the second run resumes with the other cell
        for windows, expected in (("[60]", "bf_window=60"), ("[60, 120]", "bf_window=120")):
            (tmp_path / "exp.toml").write_text(EXPERIMENT.replace("WINDOWS", windows))
            summary = run_experiment(load_spec(tmp_path / "exp.toml"), out, lambda d: LocalExecutor(d, 1),
                                     say=lambda _: None)  # fmt: skip
            assert summary.failed == 0
            assert expected in scheduler_parameters(backend).split(",")  # the cluster stays up after a cell
    finally:
        backend.down()
    table = load_table(out)
    assert sorted(set(table["SchedulerParameters.bf_window"])) == [60, 120]
    for key in set(table["key"]):
        run = out / "cells" / key / RUN_DIR
        record = json.loads((run / SETTINGS_RECORD).read_text())
        window = record["settings"]["SchedulerParameters.bf_window"]
        assert record["baseline"] == "policy"
        assert [line.startswith(("-", "+")) for line in record["slurm_conf_diff"]] == [True, True]
        assert f"bf_window={window}," in record["slurm_conf_diff"][1]
        assert (run / SETTINGS_DIFF).read_text().splitlines() == record["slurm_conf_diff"]
