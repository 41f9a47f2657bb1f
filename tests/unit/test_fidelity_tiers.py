"""The --compare-sim twin of a tier-choosing policy under --model io-aware
(harness.emulation.collect.fidelity).

The IO-Aware twin stages like Slurm's pool (off the allocation, with Slurm's delays); a policy
that chooses storage tiers runs the live jobs' tiers in that pool (harness.sim.pool_tiers),
with the same delays: HPS jobs staged by the pool, LPS jobs on the PFS without BB.
"""

from __future__ import annotations

import pandas as pd
import pytest

from harness.analysis.fidelity_section import _tier_sentence
from harness.emulation.collect.fidelity import compare_with_simulation, tier_agreement
from harness.platform import load_platform
from harness.policies.registry import get_policy
from harness.policies.tiers import stable_uniform
from harness.sim.engine import simulate

PLAN = pd.DataFrame({"job_id": [1, 2], "submit": [0.0, 1.0], "runtime": [10.0, 20.0],
                     "walltime": [20.0, 30.0], "nodes": [4, 8], "bb_per_node_mb": [1000, 0]})  # fmt: skip


@pytest.mark.parametrize("policy", ["sas-hps", "sas-lps"])
def test_sas_twin_runs_the_pool_tiers_with_the_slurm_delays(policy: str) -> None:
    plan = PLAN.assign(**{c: PLAN[c] * 10 for c in ("submit", "runtime", "walltime")})
    emulated = plan.assign(start=plan["submit"], end=plan["submit"] + plan["runtime"], status="completed")
    _, sim = compare_with_simulation(plan, emulated, policy, load_platform(), seed=1, model="io-aware",
                                     launch_delay=1.0, stage_delay=1.0)  # fmt: skip
    # the same as the pool simulation of the plan with the same delays
    direct = simulate(plan, get_policy(policy, seed=1), load_platform(), model="io-aware", io_seed=1,
                      staging="pool", launch_delay=1.0, stage_delay=1.0).jobs  # fmt: skip
    pd.testing.assert_frame_equal(sim, direct)
    jobs = sim.set_index("job_id")
    tier = "hps" if policy == "sas-hps" else "lps"
    assert (jobs.loc[1, "tier"], jobs.loc[2, "tier"]) == (tier, "lps")  # job 2 has no BB request
    assert jobs.loc[1, "bb_per_node_mb"] == (1000 if tier == "hps" else 0)
    assert jobs.loc[1, "bb_start"] == 0.0 if tier == "hps" else pd.isna(jobs.loc[1, "bb_start"])


def test_tier_agreement_counts_the_bb_jobs_that_ran_on_each_side() -> None:
    # jobs 1-3 asked for BB and ran; 4 asked for none (its "tier" is empty live); 5 never ran
    emulated = pd.DataFrame({"job_id": [1, 2, 3, 4, 5], "tier": ["hps", "lps", "hps", "", ""]})
    simulated = pd.DataFrame({"job_id": [5, 4, 3, 2, 1], "tier": ["hps", "lps", "lps", "lps", "hps"]})
    assert tier_agreement(emulated, simulated) == {
        "jobs": 3, "emulated": {"hps": 2, "lps": 1}, "simulated": {"hps": 1, "lps": 2}, "same_tier": 2,
    }  # fmt: skip


def test_the_report_says_where_each_side_put_the_bb_jobs() -> None:
    sides = {"emulated": {"hps": 2, "lps": 1}, "simulated": {"hps": 1, "lps": 2}}
    fidelity = {"jobs": 3, **sides, "same_tier": 2}
    assert _tier_sentence(fidelity) == (
        " Storage tiers of the 3 jobs with a burst-buffer request: emulated 2 on HPS and 1 on LPS,"
        " twin 1 and 2; the same tier for 2."
    )
    assert _tier_sentence(None) == "" and _tier_sentence({"jobs": 0}) == ""


def test_a_randomised_policys_twin_draws_with_the_runs_policy_seed_not_the_workloads() -> None:
    n = 40
    plan = pd.DataFrame({"job_id": range(1, n + 1), "submit": [0.0] * n, "runtime": [10.0] * n,
                         "walltime": [20.0] * n, "nodes": [1] * n, "bb_per_node_mb": [100] * n})  # fmt: skip
    emulated = plan.assign(start=plan["submit"], end=plan["runtime"], status="completed")
    tiers: dict[int, pd.Series] = {}
    for policy_seed in (3, 4):
        _, sim = compare_with_simulation(plan, emulated, "sas-random-0.5", load_platform(), seed=2020,
                                         model="io-aware", policy_seed=policy_seed)  # fmt: skip
        tiers[policy_seed] = sim.set_index("job_id")["tier"]
    # the agent's draw for each job: HPS when stable_uniform(policy seed, job) < p
    for policy_seed, tier in tiers.items():
        expected = ["hps" if stable_uniform(policy_seed, j) < 0.5 else "lps" for j in tier.index]
        assert tier.tolist() == expected
    assert tiers[3].tolist() != tiers[4].tolist()
