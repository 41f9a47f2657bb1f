"""Slurm's own orderings, selectable as policies of a run.

``slurm-fcfs``                  sched/builtin: strict priority (= submit) order
``slurm-backfill-no-future-D``  sched/backfill without bf_licenses: reservations hold nodes
                                but not burst buffers (the behaviour the thesis criticises)
``slurm-backfill-D``            sched/backfill with bf_licenses: reservations hold both
``slurm-backfill-io-aware-D``   the same with the PFS bandwidth as a license too: Herbein's
                                I/O-aware EASY done by Slurm (without it: I/O-ignorant)
D is the reservation depth, Slurm's ``bf_job_part_count_reserve``.
"""

from __future__ import annotations

import re

from harness.slurm.config import SchedulerConfig

PREFIX = "slurm-"
_BACKFILL = re.compile(r"^slurm-backfill(-no-future|-io-aware)?-(\d+)$")
NATIVE_POLICY_HELP = {
    "slurm-fcfs": "Slurm sched/builtin: first come, first served, no backfilling",
    "slurm-backfill-no-future-D": "Slurm sched/backfill, reservations for the first D jobs hold nodes only",
    "slurm-backfill-D": "Slurm sched/backfill with bf_licenses: reservations hold nodes and burst buffers",
    "slurm-backfill-io-aware-D": "slurm-backfill-D with the PFS bandwidth (MB/s) as a license too",
}


class UnknownPolicy(ValueError):
    pass


def is_native(policy: str) -> bool:
    return policy.startswith(PREFIX)


def scheduler_for(policy: str) -> SchedulerConfig:
    """The slurmctld configuration that implements a native policy name."""
    if policy == "slurm-fcfs":
        return SchedulerConfig(mode="builtin")
    match = _BACKFILL.match(policy)
    if not match:
        raise UnknownPolicy(
            f"unknown Slurm policy '{policy}'; expected slurm-fcfs, slurm-backfill-D, "
            "slurm-backfill-no-future-D or slurm-backfill-io-aware-D with D >= 1"
        )
    depth = int(match.group(2))
    if depth < 1:
        # Slurm reads bf_job_part_count_reserve=0 as "no limit", not "no reservation".
        raise UnknownPolicy(f"'{policy}': the reservation depth D must be >= 1 on Slurm")
    variant = match.group(1)
    return SchedulerConfig(mode="backfill", bf_licenses=variant != "-no-future", reserve_depth=depth,
                           bandwidth_license=variant == "-io-aware")  # fmt: skip
