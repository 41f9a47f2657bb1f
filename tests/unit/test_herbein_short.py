"""A short version of benchmarks/herbein.py: the paper's direction on a small workload."""

from __future__ import annotations

import benchmarks.herbein as herbein  # a benchmark that fails to import fails this test
from harness.model.paths import repo_path
from harness.platform import load_platform
from harness.workload.plan import bundled_slice_path
from harness.workload.synthetic import herbein_plan


def test_io_aware_easy_removes_contention_at_some_cost_in_turnaround() -> None:
    # Herbein's model fitted from the bundled KTH slice, 150 jobs scaled x32 onto CTS-1,
    # PFS underprovisioned by 30 %.
    platform = load_platform(repo_path("benchmarks", "platforms", "herbein-cts1.toml"))
    plan, _, _ = herbein_plan(bundled_slice_path(), 150, 1, platform.compute_count, 32.0)
    plan = herbein.satisfiable(plan, 30)
    ignorant = herbein.run_level(plan, platform, 30, aware=False)
    aware = herbein.run_level(plan, platform, 30, aware=True)
    assert ignorant["violations"] == aware["violations"] == 0
    assert aware["computing_share"] == 1.0 and aware["jobs_contended"] == 0
    assert ignorant["computing_share"] < 0.95 and ignorant["jobs_contended"] > 0
    assert aware["mean_turnaround_s"] > ignorant["mean_turnaround_s"]
