"""The --compare-sim twin of a tier-choosing policy under --model io-aware (harness.emulation.fidelity).

The IO-Aware twin stages like Slurm's pool (off the allocation, with Slurm's delays); a policy
that chooses storage tiers runs the live jobs' tiers in that pool (harness.sim.pool_tiers),
with the same delays: HPS jobs staged by the pool, LPS jobs on the PFS without BB.
"""

from __future__ import annotations

import pandas as pd
import pytest

from harness.emulation.fidelity import compare_with_simulation
from harness.platform import load_platform
from harness.policies.registry import get_policy
from harness.sim.engine import simulate

PLAN = pd.DataFrame({"job_id": [1, 2], "submit": [0.0, 1.0], "runtime": [10.0, 20.0],
                     "walltime": [20.0, 30.0], "nodes": [4, 8], "bb_per_node_mb": [1000, 0]})  # fmt: skip


@pytest.mark.parametrize("policy", ["sas-hps", "sas-lps"])
def test_sas_twin_runs_the_pool_tiers_with_the_slurm_delays(policy: str) -> None:
    emulated = PLAN.assign(start=PLAN["submit"], end=PLAN["submit"] + PLAN["runtime"], status="completed")
    _, sim = compare_with_simulation(PLAN, emulated, policy, load_platform(), 0.9, seed=1, model="io-aware",
                                     launch_delay=0.1, stage_delay=0.1)  # fmt: skip
    # the same as the pool simulation of the unshrunk plan, delays unshrunk (x 10)
    plan = PLAN.assign(**{c: PLAN[c] * 10 for c in ("submit", "runtime", "walltime")})
    direct = simulate(plan, get_policy(policy, seed=1), load_platform(), model="io-aware", io_seed=1,
                      staging="pool", launch_delay=1.0, stage_delay=1.0).jobs  # fmt: skip
    pd.testing.assert_frame_equal(sim, direct)
    jobs = sim.set_index("job_id")
    tier = "hps" if policy == "sas-hps" else "lps"
    assert (jobs.loc[1, "tier"], jobs.loc[2, "tier"]) == (tier, "lps")  # job 2 has no BB request
    assert jobs.loc[1, "bb_per_node_mb"] == (1000 if tier == "hps" else 0)
    assert jobs.loc[1, "bb_start"] == 0.0 if tier == "hps" else pd.isna(jobs.loc[1, "bb_start"])
