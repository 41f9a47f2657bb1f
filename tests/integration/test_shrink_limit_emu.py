"""``harness shrink-limit`` against the real Slurm: four jobs on an 8 + 1-node platform at two
shrinks, one repetition each (cluster ``bbmethod2``, ports 6941 / 29201+)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.cluster.docker import DockerCluster
from harness.platform import load_platform
from tests.platforms import platform_toml

pytestmark = pytest.mark.integration
CLUSTER = "bbmethod2"
# id submit wait runtime procs cpu mem req_procs req_time req_mem status user group exe queue
# partition preceding think: 400 s of original time (4 s at shrink 0.99, 2 s at 0.995)
SWF = """; MaxNodes: 8
1 0 -1 200 4 -1 -1 4 400 -1 1 1 1 -1 1 -1 -1 -1
2 10 -1 200 8 -1 -1 8 400 -1 1 1 1 -1 1 -1 -1 -1
3 20 -1 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1
4 30 -1 100 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1
"""


def test_finder_replays_each_shrink_on_slurm(tmp_path: Path) -> None:
    toml = tmp_path / "method.toml"
    toml.write_text(platform_toml(name="bbmethod-8+1", controller_port=6941, slurmd_base_port=29201,
                                  node_containers=1))  # fmt: skip
    trace = tmp_path / "four.swf"
    trace.write_text(SWF)
    backend = DockerCluster(name=CLUSTER, platform=load_platform(toml))
    backend.down()
    try:
        args = ["shrink-limit", str(trace), "-p", "slurm-backfill-1", "--shrinks", "0.99,0.995",
                "--repeat", "1", "--platform", str(toml), "--name", CLUSTER, "--procs-per-node", "1",
                "--bb-model", "constant", "--bb-constant", "100", "--runs-dir", str(tmp_path / "runs"),
                "--out", str(tmp_path / "out"), "--timeout", "60"]  # fmt: skip
        ran = CliRunner().invoke(main, args, catch_exceptions=False)
        assert ran.exit_code == 0, ran.output
        record = json.loads((tmp_path / "out" / "shrink-limit.json").read_text())
        assert record["reference"] == 0.99 and record["limit"] in (0.99, 0.995)
        rows = record["rows"]
        assert sorted({r["shrink"] for r in rows}) == [0.99, 0.995]
        assert all(r["n"] == 1 and r["wall_s"] > 0 for r in rows)
        makespan = {r["shrink"]: r["mean"] for r in rows if r["metric"] == "makespan"}
        assert 390 <= makespan[0.99] <= 900  # 400 s ideally; each start may pay a pass (100 s)
        assert (tmp_path / "out" / "shrink-limit.png").exists()
        assert len(list((tmp_path / "runs").iterdir())) == 2  # one run directory per shrink
    finally:
        backend.down()
