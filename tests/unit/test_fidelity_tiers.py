"""The --compare-sim twin of a tier-choosing policy under --model io-aware (harness.emulation.fidelity).

The IO-Aware twin stages like Slurm's pool (off the allocation, with Slurm's delays), but a
policy that chooses storage tiers runs Lackner's tier model, which stages inside the
allocation: its twin must run that model, without the launch and stage delays.
"""

from __future__ import annotations

import pandas as pd

from harness.emulation.fidelity import compare_with_simulation
from harness.platform import load_platform


def test_sas_twin_runs_the_tier_model_with_the_delays_of_the_pool_twin_given() -> None:
    plan = pd.DataFrame({"job_id": [1, 2], "submit": [0.0, 1.0], "runtime": [10.0, 20.0],
                         "walltime": [20.0, 30.0], "nodes": [4, 8], "bb_per_node_mb": [1000, 0]})  # fmt: skip
    emulated = plan.assign(start=plan["submit"], end=plan["submit"] + plan["runtime"], status="completed")
    _, sim = compare_with_simulation(
        plan,
        emulated,
        "sas",
        load_platform(),
        0.9,
        seed=1,
        model="io-aware",
        launch_delay=0.1,
        stage_delay=0.1,
    )
    assert sorted(sim["job_id"]) == [1, 2] and set(sim["tier"]) <= {"hps", "lps"}
