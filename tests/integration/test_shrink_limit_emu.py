"""``harness shrink-limit`` against the real Slurm: four jobs on an 8 + 1-node platform at two
shrinks, one repetition each (cluster ``bbmethod2``, ports 6941 / 29201+)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.platforms import invoke_on_small_cluster

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
    command = ["shrink-limit", "-p", "slurm-backfill-1", "--shrinks", "0.99,0.995", "--repeat", "1",
               "--runs-dir", str(tmp_path / "runs"), "--out", str(tmp_path / "out")]  # fmt: skip
    invoke_on_small_cluster(tmp_path, command, SWF, cluster=CLUSTER, platform_name="bbmethod-8+1",
                            controller_port=6941, slurmd_base_port=29201)  # fmt: skip
    record = json.loads((tmp_path / "out" / "shrink-limit.json").read_text())
    assert record["reference"] == 0.99 and record["limit"] in (0.99, 0.995)
    rows = record["rows"]
    assert sorted({r["shrink"] for r in rows}) == [0.99, 0.995]
    assert all(r["n"] == 1 and r["wall_s"] > 0 for r in rows)
    makespan = {r["shrink"]: r["mean"] for r in rows if r["metric"] == "makespan"}
    assert 390 <= makespan[0.99] <= 900  # 400 s ideally; each start may pay a pass (100 s)
    assert (tmp_path / "out" / "shrink-limit.png").exists()
    assert len(list((tmp_path / "runs").iterdir())) == 2  # one run directory per shrink
