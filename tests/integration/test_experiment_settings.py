"""A Slurm setting as an experiment axis on the real Slurm: two emulated cells of one policy that
differ by ``bf_window``, and each cell's slurmctld runs with its own value; one run's own settings
(``harness run --slurm``) the same way (cluster ``expersettings``, ports 7500 / 32501+; never run
by the unit suite: ``pytest -m integration`` with Docker)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
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


def fresh_cluster(tmp_path: Path) -> tuple[Path, DockerCluster]:
    """The 8-node platform file and the trace in ``tmp_path``; the cluster down to start from."""
    platform = tmp_path / "platform.toml"
    platform.write_text(platform_toml(name="expersettings-8+1", controller_port=7500, slurmd_base_port=32501,
                                      node_containers=1))  # fmt: skip
    (tmp_path / "ten.swf").write_text(SWF)
    backend = DockerCluster(name=CLUSTER, platform=load_platform(platform))
    backend.down()
    return platform, backend


def test_each_cells_slurmctld_runs_with_its_setting(tmp_path: Path) -> None:
    _, backend = fresh_cluster(tmp_path)
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


def test_a_runs_own_setting_reaches_slurmctld_and_is_recorded(tmp_path: Path) -> None:
    """``harness run --slurm``: the running slurmctld has the settings, the run directory the
    record of them (on the wall clock the harness sets no CompleteWait: the line is new)."""
    platform, backend = fresh_cluster(tmp_path)
    args = ["run", str(tmp_path / "ten.swf"), "--platform", str(platform), "--name", CLUSTER,
            "--shrink", "0.99", "--bb-model", "constant", "--bb-constant", "100",
            "--slurm", "CompleteWait=7", "--slurm", "SchedulerParameters.bf_window=90",
            "-o", str(tmp_path / "runs"), "-q", "--yes"]  # fmt: skip
    try:
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        shown = backend.exec(["scontrol", "show", "config"], timeout=30).stdout
        assert re.search(r"^CompleteWait\s*=\s*7 sec", shown, re.MULTILINE), shown
        assert "bf_window=90" in scheduler_parameters(backend).split(",")
    finally:
        backend.down()
    run = Path(result.output.strip().splitlines()[-1])
    record = json.loads((run / SETTINGS_RECORD).read_text())
    assert record["settings"] == {"CompleteWait": 7, "SchedulerParameters.bf_window": 90}
    assert "+CompleteWait=7" in record["slurm_conf_diff"] and record["baseline"] == "policy"
    assert json.loads((run / "manifest.json").read_text())["complete"]
