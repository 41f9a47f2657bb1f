"""Lackner's two storage tiers in the simulator (``--model io-aware`` with a tier policy).

A policy that chooses a storage tier per job (``sas``, ``sas-hps``, ``sas-lps``,
``sas-random-P``: :mod:`harness.policies.sas`) emits :class:`~harness.policies.tiers.TierStart`.
The simulator honours it here: a job on **HPS** (the burst-buffer nodes, fast and
limited) holds its nodes and its share of the BB capacity for stage-in + run on HPS +
stage-out; a job on **LPS** (the PFS, slow and unlimited) holds its nodes only, for
its runtime, and **no burst buffer**. Rates are the platform's ``[machine.io.tiers]``
(default Lackner's Section IV-A: ``R_lps`` 1 GB/s, ``R_hps = 15 R_lps``,
``R_stage = 5 R_lps``); as in Lackner's simulator every stream gets its whole rate (no
congestion between jobs).

The jobs' I/O is Lackner's model (:class:`~harness.workload.io.LacknerIO`: ``input_mb``,
``output_mb``, ``data_mb``, ``storage_mb``), drawn with the I/O seed where the plan has
no such columns. A job's BB request (``bb_per_node_mb``, what every other policy sees
and a plain ``Start`` holds: always-HPS) becomes its HPS share
``ceil(storage_mb / nodes)``; a job whose share can never fit is declared without HPS
storage (it runs on LPS under every policy). The policy plans with the walltime and
the declared I/O; the job runs for the tier's time computed from its actual runtime
(capped at the walltime: a longer job is killed, as under Alloc-Only) and its actual
I/O. Equal to the own event loop ``benchmarks/lackner.py`` had before. With ``--staging
pool`` a tier policy runs the live run's I/O instead (:mod:`harness.sim.pool_tiers`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from harness.model.io_models import IO_AWARE
from harness.platform import Machine
from harness.policies import tiers
from harness.policies.base import Policy, Start
from harness.policies.state import Topology
from harness.policies.tiers import JobIo, TierRates
from harness.sim.fixed_ends import FixedEnds
from harness.workload.io.lackner import COLUMNS as LACKNER_COLUMNS
from harness.workload.io.lackner import LacknerIO


def is_tiered(policy: Policy) -> bool:
    """Whether the policy chooses a storage tier per job (and needs the jobs' I/O)."""
    return bool(getattr(policy, "tiered", False))


def tier_plan(plan: pd.DataFrame, platform: Machine, seed: int) -> pd.DataFrame:
    """The plan with Lackner's I/O columns and ``bb_per_node_mb`` = the HPS share."""
    if not all(c in plan.columns for c in LACKNER_COLUMNS):
        t = platform.io.tiers
        plan = LacknerIO(t.lps_mbps, t.hps_ratio, t.stage_ratio).apply(plan, seed)
    plan = plan.copy()
    topology = Topology.from_platform(platform)
    nodes = plan["nodes"].to_numpy(np.int64)
    storage = np.ceil(plan["storage_mb"].to_numpy(np.float64)).astype(np.int64)
    share = -(-storage // np.maximum(nodes, 1))
    fits = np.array(
        [s == 0 or topology.can_ever_run(int(n), int(s)) for n, s in zip(nodes, share, strict=True)]
    )
    plan["storage_mb"] = np.where(fits, storage, 0)
    plan["bb_per_node_mb"] = np.where(fits, share, 0).astype(np.int64)
    return plan


def tier_setup(
    plan: pd.DataFrame, policy: Policy, platform: Machine, model: str, seed: int
) -> tuple[pd.DataFrame, Policy]:
    """The plan with its jobs' I/O, and a tier policy knowing it (unless it was given its
    own declared I/O, as for Lackner's Figure 5) and the platform's rates."""
    what = f"policy {policy.name} chooses storage tiers" if is_tiered(policy) else "storage tiers"
    if model != IO_AWARE:
        raise ValueError(f"{what}: it needs --model io-aware")
    plan = tier_plan(plan, platform, seed)
    if not is_tiered(policy):
        return plan, policy
    given = getattr(policy, "io", None)
    return plan, policy.with_io(given or job_io(plan), TierRates.of_platform(platform))  # type: ignore[attr-defined]


def job_io(plan: pd.DataFrame) -> dict[int, JobIo]:
    """Each job's I/O (MB) by job id, from the plan's Lackner columns."""
    cols = [plan[c].to_numpy() for c in ("job_id", "input_mb", "output_mb", "data_mb", "storage_mb")]
    return {int(j): JobIo(float(i), float(o), float(d), int(s)) for j, i, o, d, s in zip(*cols, strict=True)}


class TierExecution(FixedEnds):
    """Started jobs hold their tier's resources for the tier's time; no contention."""

    def __init__(self, plan: pd.DataFrame, platform: Machine, policy: Policy) -> None:
        """``plan`` is the simulator's (sorted: row i is the engine's row i); a tier policy
        (after :func:`tier_setup`) holds the jobs' declared I/O, any other declares none."""
        self.rates: TierRates = TierRates.of_platform(platform)
        declared: Mapping[int, JobIo] = getattr(policy, "io", None) or {}
        self.job_id = plan["job_id"].to_numpy(np.int64)
        self.nodes = plan["nodes"].to_numpy(np.int64)
        self.walltime = plan["walltime"].to_numpy(np.float64)
        self.runtime = plan["runtime"].to_numpy(np.float64)
        self.actual = job_io(plan)
        self.declared = declared
        super().__init__(self.runtime, self.walltime)
        n = len(plan)
        self.tier = np.full(n, "", dtype=object)
        self.share = np.zeros(n, dtype=np.int64)

    def hold(self, row: int, start: Start) -> tuple[float, int]:
        """The job's estimated duration and BB share per node on the tier it starts on
        (a plain ``Start`` is HPS, the job holding its BB request, unless it has no HPS
        storage: then LPS, as for a tier policy)."""
        jid = int(self.job_id[row])
        io = self.declared.get(jid, self.actual[jid])
        tier = getattr(start, "tier", tiers.HPS if io.storage_mb > 0 else tiers.LPS)
        plan = self._plans(float(self.walltime[row]), row, io)[tier]
        self.tier[row], self.share[row] = tier, plan.share_mb
        return plan.duration, plan.share_mb

    def _plans(self, seconds: float, row: int, io: JobIo) -> dict[str, tiers.TierPlan]:
        return tiers.plans(seconds, int(self.nodes[row]), io, self.rates)

    # -- the simulator's side: the end of a started job (FixedEnds keeps the rest) ---
    def start(self, row: int, now: float, compute: tuple[int, ...], bb: tuple[int, ...]) -> None:
        seconds = min(float(self.runtime[row]), float(self.walltime[row]))
        actual = self._plans(seconds, row, self.actual[int(self.job_id[row])])[self.tier[row] or tiers.HPS]
        self.ends_at(row, now + actual.duration)

    def annotate(self, table: pd.DataFrame) -> pd.DataFrame:
        """The results table with each job's tier and the BB share it held (0 on LPS)."""
        table["bb_per_node_mb"] = self.share
        table["tier"] = self.tier
        return table
