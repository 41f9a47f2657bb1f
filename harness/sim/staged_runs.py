"""A policy's own choice of which staged-in jobs run (Cerberus's ``Q_R``) in the simulator.

Off the allocation (:mod:`harness.sim.staging`) staged-in jobs take compute nodes in an
order Slurm would use, unless the policy selects them itself
(:class:`~harness.policies.base.SelectsStagedRuns`): then, whenever staged-in jobs wait
and nodes may have been freed, it is asked which of them run now.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from harness.policies.base import SelectsStagedRuns
from harness.policies.state import JobQueue
from harness.sim.machine import SimulationError
from harness.sim.staging import StagedMachine


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
