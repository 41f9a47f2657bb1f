"""``harness run --priority size:4 --preempt suspend`` on the real Slurm 24.11 (cluster
``preempt1``, 8 + 1 nodes, ports 6940 / 29001+), against the suspend/resume twin.

Four jobs at shrink 0.99 (one emulated second = 100 s of the trace; results are in the
trace's seconds): two low jobs of 2 nodes and 1,000 s on s[01-02] and s[03-04], a low job of 4
nodes and 200 s on s[05-08] that has ended when the high-priority 6-node job (300 s) arrives
at 500 s. Only 4 nodes are idle,
so Slurm places the wide job over the low jobs as if they were absent (s[01-06]) and its
gang scheduler suspends *both* 2-node jobs, although one would have sufficed (Barberato's
Figure 5.3); the twin predicts exactly this. Both resume when the wide job ends, and each
logs a running time of 1,000 s.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.platforms import invoke_on_small_cluster

pytestmark = pytest.mark.integration
CLUSTER = "preempt1"
# id submit wait runtime procs cpu mem req_procs req_time req_mem status user group exe queue
# partition preceding think
SWF = """; MaxNodes: 8
1 0 -1 1000 2 -1 -1 2 2000 -1 1 1 1 -1 1 -1 -1 -1
2 50 -1 1000 2 -1 -1 2 2000 -1 1 1 1 -1 1 -1 -1 -1
3 100 -1 200 4 -1 -1 4 2000 -1 1 1 1 -1 1 -1 -1 -1
4 500 -1 300 6 -1 -1 6 2000 -1 1 1 1 -1 1 -1 -1 -1
"""


def test_a_wide_high_priority_job_suspends_low_jobs_as_the_twin_predicts(tmp_path: Path) -> None:
    command = ["run", "-p", "slurm-backfill-1", "--shrink", "0.99", "--priority", "size:4", "--preempt",
               "suspend", "--output", str(tmp_path / "runs"), "--quiet"]  # fmt: skip
    invoke_on_small_cluster(tmp_path, command, SWF, cluster=CLUSTER, platform_name="preempt-8+1",
                            controller_port=6940, slurmd_base_port=29001)  # fmt: skip
    (run_dir,) = list((tmp_path / "runs").iterdir())
    results = pd.read_csv(run_dir / "results.csv").set_index("job_id")
    found = json.loads((run_dir / "metrics.json").read_text())["preemption"]
    assert found["emulated"]["suspensions"] == found["twin"]["suspensions"] == 2
    assert found["suspended_by_emulation_only"] == found["suspended_by_twin_only"] == []
    assert results.loc[4, "nodelist"] == "s[01-06]"  # placed over the low jobs, s[07-08] left idle
    spans = pd.read_csv(run_dir / "suspensions.csv").set_index("job_id")
    high_start, high_end = results.loc[4, "start"], results.loc[4, "end"]
    for low in (1, 2):
        assert results.loc[low, "status"] == "completed"
        # the running time kept (0.05 s of Slurm's clock is 5 s of the trace)
        assert results.loc[low, "runtime"] == pytest.approx(1000.0, abs=5.0)
        start, end = spans.loc[low, "start"], spans.loc[low, "end"]
        assert start <= high_start + 5.0 and high_end - 5.0 <= end <= high_end + 100.0  # resumed at once
        assert results.loc[low, "suspended"] == pytest.approx(end - start, abs=0.1)
    assert results.loc[3, "suspended"] == 0 and results.loc[4, "suspended"] == 0
    twin = pd.read_csv(run_dir / "simulation" / "suspensions.csv")
    assert twin["job_id"].tolist() == [1, 2]
    assert twin["start"].tolist() == pytest.approx([500.0, 500.0])
    assert twin["end"].tolist() == pytest.approx([800.0, 800.0])
    assert all((run_dir / "plots" / name).exists() for name in ("suspended.png", "suspended-twin.png"))
