"""An archive trace that is not KTH, replayed through `harness run` on a platform made by
`harness platform from-trace` (issue 14): 20 jobs of CEA Curie (16 processors per node,
heterogeneous header) on a 16 + 2-node platform, cluster ``bbtraces``, ports 6930 / 21001+."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.cluster.containers.backend import DockerCluster
from harness.model.paths import REPO_ROOT
from harness.platform import load_platform
from harness.platform.writing import platform_to_toml
from harness.workload.planfile import load_plan

CURIE_NAME = "CEA-Curie-2011-2.1-cln.swf.gz"
CURIE = next((p for p in (REPO_ROOT.parent / "shared" / "data" / CURIE_NAME,
                          Path("/work/shared/data") / CURIE_NAME) if p.exists()), None)  # fmt: skip
CLUSTER = "bbtraces"
# seconds after the trace's first submission: 20 jobs of at most 256 processors (16 nodes)
# and at most 607 s of runtime, over 1,113 s (11 s and 6 s at shrink 0.99)
WINDOW = "39736:40850"

pytestmark = pytest.mark.skipif(CURIE is None, reason=f"{CURIE_NAME} not beside the checkout")


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_curie_window_replays_on_a_from_trace_platform(tmp_path: Path) -> None:
    toml = tmp_path / "curie16.toml"
    made = invoke("platform", "from-trace", str(CURIE), "--nodes", "16", "-o", str(toml))
    assert made.exit_code == 0, made.output
    platform = load_platform(toml).redeployed(controller_port=6930, slurmd_base_port=21001, node_containers=1)
    toml.write_text(platform_to_toml(platform))
    assert (platform.compute_count, platform.bb_count, platform.deployment.node_containers) == (16, 2, 1)
    backend = DockerCluster(name=CLUSTER, platform=load_platform(toml))
    backend.down()
    try:
        ran = invoke("run", str(CURIE), "--platform", str(toml), "--name", CLUSTER, "--window", WINDOW,
                     "-o", str(tmp_path / "runs"), "-q", "--timeout", "60")  # fmt: skip
        assert ran.exit_code == 0, ran.output
        run_dir = Path(ran.stdout.strip().splitlines()[-1])
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert manifest["complete"], manifest.get("incomplete_reason")
        _, plan = load_plan(run_dir / "plan.parquet")
        assert plan["cleaning"]["node_size"]["procs_per_node"] == 16
        assert plan["platform"]["compute_count"] == 16
        results = pd.read_parquet(run_dir / "results.parquet")
        assert len(results) == plan["jobs"] == 20
        assert results["slurm_job_id"].notna().all() and results["nodes"].max() <= 16
    finally:
        backend.down()
