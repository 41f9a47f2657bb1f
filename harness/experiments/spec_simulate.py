"""The ``[simulate]`` table of an experiment file: the twin that simulates the cells (its pass,
its launch delay, where an io-aware job stages and who begins a stage-in; docs/experiments.md)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.experiments.keys import Keys, SpecError
from harness.model import checks
from harness.model.io_models import IO_AWARE
from harness.model.staging_names import OFF_ALLOCATION, STAGE_INS, STAGINGS
from harness.policies.registry import get_policy


@dataclass(frozen=True)
class SimulateSpec:
    """The simulator twin of a simulate-mode file: 0 and 0 is the ideal twin."""

    tick: float = 0.0  # the policy only on multiples of this (s); Slurm's pass: 1
    launch_delay: float = 0.0  # from the decision to the start (s)
    staging: str = "inside"  # io-aware: inside the allocation, outside (three phases) or pool
    # who begins a pool's stage-ins: the policy, or Slurm's own rule (harness.sim.slurm_stage_in);
    # a list of both is an axis
    stage_in: tuple[str, ...] = ("policy",)


def simulate_table(keys: Keys) -> SimulateSpec:
    spec = SimulateSpec(
        float(keys.number("tick", 0.0, checks.NON_NEGATIVE)),
        float(keys.number("launch_delay", 0.0, checks.NON_NEGATIVE)),
        keys.string("staging", "inside", STAGINGS),
        keys.one_or_names("stage_in", "policy", STAGE_INS),
    )
    keys.finish()
    return spec


def check_simulate(spec: SimulateSpec, path: Path, models: tuple[str, ...], policies: Iterable[str]) -> None:
    """Staging off the allocation needs the io-aware model; Slurm's stage-in rule needs the pool,
    and policies that begin their stage-ins themselves (a tier-choosing policy) cannot take it."""
    if spec.staging in OFF_ALLOCATION and set(models) != {IO_AWARE}:
        raise SpecError(f'{path}: [simulate] staging = "{spec.staging}": needs model = "io-aware"')
    if "slurm" not in spec.stage_in:
        return
    if spec.staging != "pool":
        raise SpecError(f'{path}: [simulate] stage_in = "slurm": needs staging = "pool" (Slurm counts one '
                        f'pool; not "{spec.staging}")')  # fmt: skip
    from harness.sim.tiers import is_tiered  # the simulator only when a file asks for Slurm's rule

    tiered = [name for name in policies if is_tiered(get_policy(name))]
    if tiered:
        raise SpecError(f'{path}: [simulate] stage_in = "slurm": {tiered[0]} chooses a storage tier for '
                        "each job and begins its stage-ins itself")  # fmt: skip
