"""Who decides off the allocation in the simulator: Slurm's own stage-ins, or the policy, and
a policy's own choice of which staged-in jobs run (Cerberus's ``Q_R``).

Off the allocation (:mod:`harness.sim.staging`) staged-in jobs take compute nodes in an
order Slurm would use, unless the policy selects them itself
(:class:`~harness.policies.base.SelectsStagedRuns`): then, whenever staged-in jobs wait
and nodes may have been freed, it is asked which of them run now.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from harness.policies.base import Policy, SelectsStagedRuns
from harness.policies.state import JobQueue
from harness.sim.machine import SimulationError
from harness.sim.slurm_stage_in import SlurmStageIn
from harness.sim.staged_machine import StagedMachine
from harness.sim.staging import OutsideStaging
from harness.sim.tiers import is_tiered


def policy_run_selector(
    policy: SelectsStagedRuns,
    queue_of: Callable[[np.ndarray], JobQueue],
    job_ids: np.ndarray,
    machine: StagedMachine,
) -> Callable[[list[int], float], list[int]]:
    """``select(rows, now)``: the plan rows among the staged-in ``rows`` that the policy runs
    now, in its order. ``queue_of`` makes the jobs of plan rows a queue (the simulator's plan)."""
    row_of = {int(j): i for i, j in enumerate(job_ids)}

    def select(rows: list[int], now: float) -> list[int]:
        chosen = policy.select_staged(machine.state(None), queue_of(np.asarray(rows, np.int64)), now)
        staged = set(rows)
        picked = [row_of.get(int(j), -1) for j in chosen]
        if any(row not in staged for row in picked) or len(set(picked)) != len(picked):
            raise SimulationError(f"the run selection chose jobs that are not staged in: {chosen}")
        return picked

    return select


def policy_off_allocation(
    policy: Policy,
    execution: OutsideStaging,
    machine: StagedMachine,
    queue_of: Callable[[np.ndarray], JobQueue],
) -> Policy:
    """The policy that decides the starts: with ``stage_in="slurm"`` Slurm's own stage-ins
    (:mod:`harness.sim.slurm_stage_in`; the policy then only names the run), else ``policy``,
    asked which staged-in jobs run when it chooses them itself (not under the ordering agent)."""
    passes = execution.passes
    if passes.stage_in == "slurm":
        if is_tiered(policy):
            raise ValueError("a policy that chooses storage tiers begins its stage-ins itself, not Slurm")
        rows = {int(j): i for i, j in enumerate(execution.job_ids)}
        return SlurmStageIn(policy.name, execution.first_waiting, rows)
    if isinstance(policy, SelectsStagedRuns) and passes.staged_start != "reserved":
        execution.run_selector = policy_run_selector(policy, queue_of, execution.job_ids, machine)
    return policy
