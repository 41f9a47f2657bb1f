"""``harness experiment run -j 2`` in emulate mode: four cells (two policies, two repetitions) on the
event clock, on two clusters at once (``emuj`` on 7800 / 32101+, ``emuj-1`` on the next free shift,
7801 / 32110+ when nothing else holds them)."""

from __future__ import annotations

from datetime import datetime
from itertools import combinations
from pathlib import Path

import pytest

from harness.cluster.containers.backend import DockerCluster
from harness.experiments.emulate_cell import RUN_DIR
from harness.experiments.emulate_slots import build_image_once, plan_slots
from harness.experiments.executors import slotted_executor
from harness.experiments.results import load_table
from harness.experiments.runner import run_experiment
from harness.experiments.spec import load_spec
from harness.model import rundir
from tests.integration.test_experiment_emulate import EXPERIMENT, SWF
from tests.platforms import platform_toml

pytestmark = pytest.mark.integration
CLUSTERS = ("emuj", "emuj-1")
# By hand (tests/integration/test_experiment_emulate.py): Slurm at x1 on 8 nodes
EXPECTED = {"slurm-fcfs": (500.0, 235.0), "slurm-backfill-1": (420.0, 75.0)}


def test_two_workers_replay_a_grid_on_two_clusters_at_once(tmp_path: Path) -> None:
    platform = platform_toml(name="emuj-8+1", controller_port=7800, slurmd_base_port=32101, node_containers=1)
    (tmp_path / "platform.toml").write_text(platform)
    (tmp_path / "four.swf").write_text(SWF)
    text = EXPERIMENT.replace("shrink = [0.99]\n", "").replace('"experemu"', '"emuj"')
    (tmp_path / "exp.toml").write_text(text.replace('mode = "emulate"', 'mode = "emulate"\nrepetitions = 2'))
    for name in CLUSTERS:
        DockerCluster(name=name).down()  # leftovers of an interrupted earlier run
    out = tmp_path / "out"
    try:
        spec = load_spec(tmp_path / "exp.toml")
        slots = plan_slots(spec, out, 2)
        assert [s.cluster_name for s in slots] == list(CLUSTERS)
        build_image_once(slots, print)
        summary = run_experiment(spec, out, slotted_executor(slots), say=print)
        assert (summary.cells, summary.finished, summary.failed) == (4, 4, 0)
    finally:
        for name in CLUSTERS:
            DockerCluster(name=name).down()
    table = load_table(out)
    runs = {}
    for key in set(table["key"]):
        rows = table[table["key"] == key]
        values = rows.set_index("metric")["value"]
        makespan, mean_wait = EXPECTED[rows["policy"].iloc[0]]
        assert values["makespan"] == pytest.approx(makespan, abs=1.0)  # a one-second step may come first
        assert values["mean_wait"] == pytest.approx(mean_wait, abs=1.0)
        runs[key] = rundir.read_manifest(out / "cells" / key / RUN_DIR)
        assert runs[key]["clock"] == "virtual"
    assert table.drop_duplicates("key")["policy"].value_counts().to_dict() == {
        "slurm-fcfs": 2,
        "slurm-backfill-1": 2,
    }
    assert {m["options"]["cluster"]["name"] for m in runs.values()} == set(CLUSTERS)
    spans = [
        (m["options"]["cluster"]["name"], _at(m["started_at"]), _at(m["finished_at"])) for m in runs.values()
    ]
    overlapping = [(a, b) for a, b in combinations(spans, 2) if a[0] != b[0] and a[1] < b[2] and b[1] < a[2]]
    assert overlapping, f"no two cells of different clusters ran at the same time: {spans}"


def _at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)
