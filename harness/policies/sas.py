"""Storage-aware scheduling (Lackner, Fard, Wolf, Algorithms 1 and 2) and its baselines.

Algorithm 1: start the jobs of the queue in arrival order while they can start now;
the first that cannot is the priority job ``j_1``, reserved at its earliest start;
every other job is then tried in shortest-walltime-first order (ties: less storage
first) and starts if it can start now without delaying ``j_1``.

Algorithm 2 (try-start): find the job's earliest schedule on each tier, the slow LPS
(nodes only) and the fast HPS (nodes and HPS capacity for stage-in + run +
stage-out), take the tier with the shorter turnaround (ties: LPS), and start the job
if that schedule begins now. The baselines replace the comparison by a fixed rule:
always HPS, always LPS, or HPS with probability ``p``.

The HPS pool is the platform's burst buffer: a job's capacity becomes a per-node
share, so Lackner's single shared pool is a platform with one BB node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from harness.policies import tiers
from harness.policies.base import Decision, Policy
from harness.policies.state import ClusterState, JobQueue, QueuedJob
from harness.policies.tiers import JobIo, TierChooser, TierPlan, TierRates, TierStart
from harness.policies.workspace import Workspace

# R_lps when nothing else is known: Lackner fixes only the ratios; 1 GB/s is a
# parallel-file-system share of the order of the thesis's 10 Gbit/s links.
DEFAULT_LPS_MB_S = 1_000.0


class StorageAware(Policy):
    description = "SJF backfilling choosing per job the storage tier (BB or PFS) with the shorter turnaround"
    tiered = True  # emits TierStart: the simulator runs it with storage tiers (harness.sim.tiers)
    # A job can start on LPS while the BB is full: the policy must see every event.
    needs_every_event = True

    def __init__(
        self,
        name: str,
        chooser: TierChooser | None = None,
        rates: TierRates | None = None,
        io: Mapping[int, JobIo] | None = None,
        trace_ids: Mapping[int, int] | None = None,
    ) -> None:
        super().__init__(name)
        self.chooser = chooser or TierChooser()
        self.rates = rates or TierRates.lackner(DEFAULT_LPS_MB_S)
        self.io: Mapping[int, JobIo] = io or {}
        # the trace's job ids of the ids it is given (the ordering agent's are Slurm's): the
        # random baseline draws by the trace's, as the simulator does
        self.trace_ids: Mapping[int, int] = trace_ids or {}

    def with_io(
        self,
        io: Mapping[int, JobIo],
        rates: TierRates | None = None,
        trace_ids: Mapping[int, int] | None = None,
    ) -> StorageAware:
        """The same policy knowing the jobs' declared I/O (from the plan) and the platform's rates."""
        return StorageAware(self.name, self.chooser, rates or self.rates, io, trace_ids)

    def decide(self, state: ClusterState, queue: Sequence[QueuedJob], now: float) -> Decision:
        jobs = JobQueue.of(queue)
        ws = Workspace(state, now)
        head = 0
        while head < len(jobs) and self.try_start(ws, jobs[head]):
            head += 1
        if head == len(jobs):
            return ws.decision()
        priority = jobs[head]
        plan = self.choose(ws, priority)
        ws.reserve(_as_queued(priority, plan))
        rest = np.arange(head + 1, len(jobs))
        for pos in self._sjf(jobs, rest).tolist():
            if ws.free_count == 0:
                break
            self.try_start(ws, jobs[pos])
        return ws.decision(planned_order=[priority.job_id, *jobs.job_id[rest].tolist()])

    # -- Algorithm 2 ------------------------------------------------------------------
    def try_start(self, ws: Workspace, job: QueuedJob) -> bool:
        """Start ``job`` now if the schedule on its chosen tier begins now."""
        if job.nodes > ws.free_count:  # no tier can start it now: spare the estimates
            return False
        plan = self.choose(ws, job)
        if not ws.try_start(_as_queued(job, plan)):
            return False
        started = ws.starts[-1]
        ws.starts[-1] = TierStart(started.job_id, started.allocation, plan.tier)
        return True

    def choose(self, ws: Workspace, job: QueuedJob) -> TierPlan:
        """The tier plan Algorithm 2 (or the baseline rule) picks for ``job`` at this moment."""
        io = self.io.get(job.job_id, tiers.NO_IO)
        options = tiers.plans(job.walltime, job.nodes, io, self.rates)
        if not self.chooser.compares:
            return options[self.chooser.fixed(self.trace_ids.get(job.job_id, job.job_id), io)]
        hps = options[tiers.HPS]
        if hps.share_mb <= 0 or not ws.topology.can_ever_run(job.nodes, hps.share_mb):
            return options[tiers.LPS]
        t_lps = tiers.turnaround(_wait(ws, job.nodes, options[tiers.LPS]), options[tiers.LPS])
        t_hps = tiers.turnaround(_wait(ws, job.nodes, hps), hps)
        return options[tiers.sas_choice(t_hps, t_lps)]

    def _sjf(self, jobs: JobQueue, positions: np.ndarray) -> np.ndarray:
        storage = np.array(
            [self.io.get(int(j), tiers.NO_IO).storage_mb for j in jobs.job_id[positions]], dtype=np.int64
        )
        # lexsort sorts by the last key first: walltime, then storage, then arrival.
        return positions[np.lexsort((positions, storage, jobs.walltime[positions]))]


def _as_queued(job: QueuedJob, plan: TierPlan) -> QueuedJob:
    """The job as the workspace sees it on ``plan``'s tier: its duration and HPS share."""
    return QueuedJob(job.job_id, job.submit, plan.duration, job.nodes, plan.share_mb)


def _wait(ws: Workspace, nodes: int, plan: TierPlan) -> float:
    """Time from now to the earliest start of the job on ``plan``'s tier."""
    i, _ = ws.profile.earliest_start(nodes, plan.share_mb, plan.duration, with_bb=plan.share_mb > 0)
    return float(ws.profile.times[i]) - ws.now
