"""Names of the io-aware simulator's staging semantics (:mod:`harness.sim.staging`), light
enough for the command line to list them without importing the simulator."""

from __future__ import annotations

STAGINGS = ("inside", "outside", "pool")
OFF_ALLOCATION = ("outside", "pool")  # the stagings with Slurm's life cycle: BB and nodes held apart
STAGE_INS = ("policy", "slurm")  # who begins a stage-in off the allocation: the policy, or Slurm itself
