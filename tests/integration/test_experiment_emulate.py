"""An emulate-mode experiment on the real Slurm: two cells (two policies, one shrink 0.99), each a
run directory in its cell's folder and rows in the table (cluster ``experemu``, ports 6972 /
25201+)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cluster.containers.backend import DockerCluster
from harness.cluster.containers.clock import running_clock
from harness.experiments.cells import read_cell_result
from harness.experiments.emulate_cell import RUN_DIR
from harness.experiments.executors import LocalExecutor
from harness.experiments.report import write_experiment_report
from harness.experiments.results import cell_jobs, load_table
from harness.experiments.runner import run_experiment
from harness.experiments.spec import load_spec
from harness.model import rundir
from harness.platform import load_platform
from tests.platforms import platform_toml

pytestmark = pytest.mark.integration
CLUSTER = "experemu"
# four jobs, 400 s of original time at best (4 s at shrink 0.99)
SWF = """; MaxNodes: 8
1 0 -1 200 4 -1 -1 4 400 -1 1 1 1 -1 1 -1 -1 -1
2 10 -1 200 8 -1 -1 8 400 -1 1 1 1 -1 1 -1 -1 -1
3 20 -1 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1
4 30 -1 100 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1
"""
EXPERIMENT = f"""
[experiment]
name = "experemu"
mode = "emulate"
metrics = ["mean_wait", "makespan"]
[workload]
trace = "four.swf"
bb_model = "constant"
bb_constant_mb = 100
[platform]
file = "platform.toml"
[policies]
names = ["slurm-backfill-1", "slurm-fcfs"]
[emulate]
shrink = [0.99]
cluster = "docker"
cluster_name = "{CLUSTER}"
"""


def test_emulate_grid_replays_each_cell_on_slurm(tmp_path: Path) -> None:
    platform = tmp_path / "platform.toml"
    platform.write_text(platform_toml(name="experemu-8+1", controller_port=6972, slurmd_base_port=25201,
                                      node_containers=1))  # fmt: skip
    (tmp_path / "four.swf").write_text(SWF)
    (tmp_path / "exp.toml").write_text(EXPERIMENT)
    backend = DockerCluster(name=CLUSTER, platform=load_platform(platform))
    backend.down()
    try:
        spec = load_spec(tmp_path / "exp.toml")
        out = tmp_path / "out"
        summary = run_experiment(spec, out, lambda d: LocalExecutor(d, 1), say=lambda _: None)
        assert (summary.cells, summary.finished, summary.failed) == (2, 2, 0)
    finally:
        backend.down()
    table = load_table(out)
    assert sorted(set(table["policy"])) == ["slurm-backfill-1", "slurm-fcfs"]
    for _, rows in table.groupby("key"):  # a row per numeric metric of the run, once each
        assert {"mean_wait", "makespan"} <= set(rows["metric"]) and not rows["metric"].duplicated().any()
    assert set(table["shrink"]) == {0.99}
    for key in set(table["key"]):
        result = read_cell_result(out, key)
        assert result is not None and result.ok and result.time_scale == 1.0  # jobs in the trace's time
        run = out / "cells" / key / RUN_DIR
        assert (run / rundir.METRICS).exists() and (run / rundir.RESULTS).exists()
        makespan = float(table[(table["key"] == key) & (table["metric"] == "makespan")]["value"].iloc[0])
        assert 390 <= makespan <= 2000  # original time: 400-500 s ideally, + ~100 s per late pass
        assert len(cell_jobs(out, key, tau=10.0)) == 4
    assert (out / "report.md") in write_experiment_report(out)  # boxen plots of the emulated jobs


def test_an_emulate_grid_on_the_event_clock_gives_slurm_at_x1(tmp_path: Path) -> None:
    """No shrink in the file: the cells run on the event clock (``harness run``'s default), in
    the trace's own seconds, and give exactly what Slurm at x1 gives. By hand, on 8 nodes,
    Slurm planning with the limits in whole minutes (400 s: 7 min; 200 s: 4 min):
    - slurm-fcfs: job 1 runs 0-200, job 2 (8 nodes) 200-400, jobs 3 and 4 wait behind it,
      400-500: makespan 500 s, mean wait (0 + 190 + 380 + 370) / 4 = 235 s;
    - slurm-backfill-1: job 2 is reserved at job 1's limit (420 s); job 3 backfills at 20
      (20 + 240 <= 420) and runs to 120, job 4 then (120 + 240 <= 420) to 220, and job 2
      starts when all 8 nodes are free, 220-420: makespan 420 s, mean wait
      (0 + 210 + 0 + 90) / 4 = 75 s.
    The cluster, left up on the wall clock, is taken down and started on the virtual clock by
    the first cell."""
    platform = tmp_path / "platform.toml"
    platform.write_text(platform_toml(name="experemu-8+1", controller_port=6972, slurmd_base_port=25201,
                                      node_containers=1))  # fmt: skip
    (tmp_path / "four.swf").write_text(SWF)
    (tmp_path / "exp.toml").write_text(EXPERIMENT.replace("shrink = [0.99]\n", ""))
    backend = DockerCluster(name=CLUSTER, platform=load_platform(platform))
    backend.down()
    try:
        backend.up()
        assert running_clock(CLUSTER) == "wall"
        spec = load_spec(tmp_path / "exp.toml")
        out = tmp_path / "out"
        summary = run_experiment(spec, out, lambda d: LocalExecutor(d, 1), say=lambda _: None)
        assert (summary.cells, summary.finished, summary.failed) == (2, 2, 0)
        assert running_clock(CLUSTER) == "virtual"
    finally:
        backend.down()
    table = load_table(out)
    assert set(table["shrink"]) == {0.0}
    expected = {"slurm-fcfs": (500.0, 235.0), "slurm-backfill-1": (420.0, 75.0)}
    for key in set(table["key"]):
        rows = table[table["key"] == key]
        values = rows.set_index("metric")["value"]
        makespan, mean_wait = expected[rows["policy"].iloc[0]]
        # a one-second step may come between a change and Slurm's pass on a loaded host
        assert values["makespan"] == pytest.approx(makespan, abs=1.0)
        assert values["mean_wait"] == pytest.approx(mean_wait, abs=1.0)
        manifest = rundir.read_manifest(out / "cells" / key / RUN_DIR)
        assert manifest["clock"] == "virtual" and manifest["options"]["replay"]["events"] is True
