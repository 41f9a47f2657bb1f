"""Storage tiers in Slurm's burst-buffer pool: the twin of a live tier-choosing run.

A tier policy (``sas``, ``sas-hps``, ``sas-lps``, ``sas-random-P``) under ``--model io-aware
--staging pool`` runs the I/O the live jobs run (docs/io-live.md), not Lackner's model
(:mod:`harness.sim.tiers`, staging inside the allocation):

- the jobs' volumes are Kopański's (the plan's ``io_*`` columns, drawn with the I/O seed
  where missing), and SAS is given each job's :class:`~harness.policies.tiers.JobIo` as the
  live ordering agent reads it from the job's comment
  (:func:`~harness.policies.tiers.staged_job_io`), with the platform's tier rates;
- **HPS**: the job as released, staged in and out by the pool (:class:`OutsideStaging`);
- **LPS** (a job with a BB request the policy puts on the slow tier; the agent submits it
  again without its BB, :mod:`harness.emulation.iolive.tiers`): no BB share, no Slurm staging;
  it takes compute nodes as a job with nothing to stage (on Slurm's next pass, the
  launch delay later) and runs, on them, its stage-in volume read from the PFS, its compute
  phases with each checkpoint written to the PFS (no drain), then its stage-out volume
  written to the PFS: every transfer a flow of the job's nodes to the PFS
  (:meth:`IONetwork.direct`, per chassis, as the live contention service's ``pfs``
  channel), sharing the links with every other flow. Its nodes are freed when the last
  write ends (or at the walltime, with no stage-out after). The results table counts
  those transfers in ``io_s`` only (the live table's ``io:pfs`` phases): ``checkpoint_s``
  is 0, ``stage_in_s``, ``stage_out_s``, ``bb_start`` and ``bb_end`` are empty (no Slurm
  staging, no BB hold), as in the live table.

A job without a BB request is released as is whichever tier is chosen (the live agent
moves only jobs with one). ``tier`` and ``bb_per_node_mb`` (0 on LPS) are in the table,
as :meth:`harness.sim.tiers.TierExecution.annotate` gives them.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from harness.flow.io_network import MB, IONetwork
from harness.platform import Machine
from harness.policies.base import Policy, Start
from harness.policies.state import Allocation, RunningJob
from harness.policies.tiers import HPS, LPS, TierRates, staged_job_io
from harness.sim.io_execution import EventKey, JobIO, _Job
from harness.sim.staged_machine import StagedMachine
from harness.sim.staging import OutsideStaging, SlurmPasses
from harness.workload.io import KopanskiIO
from harness.workload.io.kopanski import COLUMNS as KOPANSKI_COLUMNS

PFS_PHASES = ("pfs_in", "pfs_checkpoint", "pfs_out")  # an LPS job's transfers, in its run


def pool_tier_setup(
    plan: pd.DataFrame, policy: Policy, platform: Machine, seed: int
) -> tuple[pd.DataFrame, Policy]:
    """The plan with Kopański's I/O columns, and the tier policy knowing each job's
    declared I/O as the live agent does and the platform's rates (in the plan's seconds)."""
    if not all(c in plan.columns for c in KOPANSKI_COLUMNS):
        plan = KopanskiIO().apply(plan, seed=seed)
    if not getattr(policy, "tiered", False):
        return plan, policy
    cols = ("job_id", "nodes", "bb_per_node_mb", "io_stage_in_mb", "io_stage_out_mb", "io_phases",
            "io_checkpoint_mb")  # fmt: skip
    io = {
        int(j): staged_job_io(int(n), int(b), float(i), float(o), int(p), float(c))
        for j, n, b, i, o, p, c in zip(*(plan[c].to_numpy() for c in cols), strict=True)
    }
    return plan, policy.with_io(io, TierRates.of_platform(platform))  # type: ignore[attr-defined]


class PoolTiers(OutsideStaging):
    """:class:`OutsideStaging` in a pool, where a job started on LPS runs on the PFS."""

    def __init__(
        self,
        net: IONetwork,
        jobs: JobIO,
        chassis: tuple[int, ...],
        machine: StagedMachine,
        job_ids: np.ndarray,
        pool_bb: tuple[int, ...] | None = None,
        passes: SlurmPasses | None = None,
    ) -> None:
        super().__init__(net, jobs, chassis, machine, job_ids, pool_bb, passes)
        n = len(jobs.nodes)
        self.tier = np.full(n, "", dtype=object)
        self.share = np.zeros(n, dtype=np.int64)
        self.lps = np.zeros(n, dtype=bool)  # runs on the PFS (LPS with a BB request)
        self._by_chassis: dict[int, list[tuple[int, int]]] = {}

    def hold(self, row: int, start: Start, share: int) -> int:
        """The BB share per node the job holds on the tier it starts on (a plain ``Start``:
        as released, HPS if it has a BB request)."""
        tier = getattr(start, "tier", HPS if share > 0 else LPS)
        self.tier[row] = tier
        self.lps[row] = tier == LPS and share > 0
        self.share[row] = 0 if self.lps[row] else share
        return int(self.share[row])

    def start(self, row: int, now: float, compute: tuple[int, ...], bb: tuple[int, ...]) -> None:
        if not self.lps[row]:
            super().start(row, now, compute, bb)
            return
        self.engine.advance(now)
        job = _Job(row, now, [], [], phase="waiting", began=now)  # nothing to stage: to the nodes
        self.running[row] = job
        self.bb_start[row] = now
        self._wanted[row] = Allocation(compute, bb)
        if self.passes.staged_start == "reserved":
            self.machine.take_nodes(int(self.job_ids[row]), compute, now)
        self.waiting.append(row)
        self._place_soon(now)
        self._refresh_flows()

    def _take_nodes(self, row: int, now: float) -> None:
        if self.lps[row]:  # per chassis, as the live service splits a pfs flow
            compute = self._wanted[row].compute
            self._by_chassis[row] = sorted(Counter(self.chassis[c] for c in compute).items())
        super()._take_nodes(row, now)

    def _compute(self, job: _Job, now: float) -> None:
        if self.lps[job.row] and job.phase == "waiting":  # the run begins: read the input first
            job.by_bb, job.by_bb_chassis = [], []  # no BB, no drain
            self._pfs(job, now, "pfs_in", float(self.jobs.stage_in_mb[job.row]))
            return
        super()._compute(job, now)

    def _pfs(self, job: _Job, now: float, phase: str, mb_per_node: float) -> None:
        """A transfer of the job's nodes to or from the PFS, blocking the run."""
        job.phase, job.began = phase, now
        for ch, k in self._by_chassis[job.row]:
            self._add(job, "blocking", self.net.direct(ch), k * mb_per_node * MB, k)
        if job.blocking == 0:
            self._phase_done(job, now)

    def _compute_done(self, job: _Job, now: float) -> None:
        r = job.row
        if not self.lps[r]:
            super()._compute_done(job, now)
            return
        self.phase_s["compute"][r] += now - job.began
        job.done_phases += 1
        if job.done_phases < int(self.jobs.phases[r]):
            self._pfs(job, now, "pfs_checkpoint", float(self.jobs.checkpoint_mb[r]))
        else:
            self._pfs(job, now, "pfs_out", float(self.jobs.stage_out_mb[r]))

    def _phase_done(self, job: _Job, now: float) -> None:
        if job.phase not in PFS_PHASES:
            super()._phase_done(job, now)
        elif job.phase != "pfs_out":
            super()._compute(job, now)
        else:
            self._release_nodes(job, now)
            self._finish(job, now, timeout=False)

    def _event(self, now: float, key: EventKey) -> None:
        if key[0] == "kill" and self.lps[key[1]]:
            self._kill_lps(self.running[key[1]], now)
        else:
            super()._event(now, key)

    def _kill_lps(self, job: _Job, now: float) -> None:
        """At run start + walltime: transfers in flight are lost, nodes freed; nothing staged out."""
        for key in sorted(job.flows):
            self.io_bytes[job.row] -= self.engine.remove(key)
        job.flows.clear()
        job.blocking = 0
        self.queue.cancel(("phase", job.row))
        if job.phase == "compute":
            self.phase_s["compute"][job.row] += now - job.began
        self.timeout[job.row] = True
        self._release_nodes(job, now)
        self._finish(job, now, timeout=True)

    # -- results -----------------------------------------------------------------------
    def solo_allocations(self) -> list[Allocation | None]:
        return [None if lps else a for lps, a in zip(self.lps, self.io_allocation, strict=True)]

    def result_columns(self) -> dict[str, np.ndarray]:
        """As :class:`OutsideStaging`; an LPS job's dilation is its run over its run alone."""
        cols = super().result_columns()
        for row in np.flatnonzero(self.lps):
            run = float(self.end[row] - self.run_start[row])
            alone = run if cols["contended_s"][row] == 0 else self._alone(int(row))
            cols["contention_free_s"][row] = alone
            cols["dilation"][row] = run / alone if alone > 0 else 1.0
        for name in ("bb_start", "bb_end", "stage_in_s", "stage_out_s"):  # none: as in the live table
            cols[name] = np.where(self.lps, np.nan, cols[name])
        return cols

    def _alone(self, row: int) -> float:
        """The LPS job's run alone on the machine (no other flow, no walltime)."""
        alloc = self.allocation[row]
        assert alloc is not None
        machine = StagedMachine(self.machine.topology)
        ids = self.job_ids[row : row + 1]
        alone = PoolTiers(
            self.net, self.jobs.take(row), self.chassis, machine, ids, self.pool_bb, SlurmPasses()
        )
        alone.kills = False
        alone.lps[0] = True
        machine.start(RunningJob(int(ids[0]), 0.0, float(self.jobs.walltime[row]), 0, alloc))
        alone.start(0, 0.0, alloc.compute, alloc.bb)
        while alone.busy():
            alone.advance(alone.next_time())
        return float(alone.end[0] - alone.run_start[0])

    def annotate(self, table: pd.DataFrame) -> pd.DataFrame:
        """The results table with each job's tier and the BB share it held (0 on LPS)."""
        table["bb_per_node_mb"] = self.share
        table["tier"] = self.tier
        return table
