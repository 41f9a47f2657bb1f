"""Live I/O as one plug-in of a run (``--model io-aware``, docs/io-live.md).

It gives the plan Kopański's I/O columns and sigsleep's phase lists, switches Slurm to
burst_buffer/lua (its staging command and the contention service run the transfers), waits
for the last stage-outs before records are copied, and adds to the results the staging,
drain, phase and tier columns, to the cross-check Slurm's burst-buffer view, and to the
metrics the staging, phase and drain statistics.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd

from harness.cluster.base import SUBMIT_USER, ClusterBackend
from harness.emulation.collect.bb_check import keep_bb_states, staging_check
from harness.emulation.iolive.drains import DRAIN_RECORDS, add_drains, drain_records, drain_stats
from harness.emulation.iolive.phases import add_phases, phase_stats, with_phase_lists
from harness.emulation.iolive.staging import RECORDS
from harness.emulation.iolive.staging_results import add_staging, staging_stats, wait_for_stage_outs
from harness.emulation.iolive.tiers import add_tiers
from harness.emulation.plugin import Collected
from harness.emulation.run.specs import RunOptions
from harness.model.columns import IO_RESULT_TIME_COLUMNS
from harness.model.io_models import IO_AWARE
from harness.model.jsonio import read_jsonl
from harness.model.rundir import SHARED
from harness.model.timescale import TimeScale
from harness.platform import Platform
from harness.policies.registry import get_policy
from harness.slurm.config import SchedulerConfig
from harness.workload.io import KopanskiIO


class LiveIO:
    """Stage-in/out, checkpoints and phases of every job run live on the emulated cluster."""

    name = "iolive"
    time_columns = IO_RESULT_TIME_COLUMNS

    def wanted(self, opts: RunOptions) -> bool:
        return opts.workload.model == IO_AWARE

    def configure(self, sched: SchedulerConfig) -> SchedulerConfig:
        return replace(sched, burst_buffer="lua")  # Slurm's burst-buffer life cycle, not the license

    def plan(self, plan: pd.DataFrame, opts: RunOptions, platform: Platform) -> tuple[pd.DataFrame, dict]:
        spec = opts.workload
        return KopanskiIO().apply(plan, seed=spec.seed), {"model": spec.model}

    def on_clock(self, plan: pd.DataFrame, scale: TimeScale, platform: Platform) -> pd.DataFrame:
        """sigsleep's phase lists and the scale the staging command applies to the platform's
        bandwidths (a Slurm second moves ``scale.speedup`` trace seconds' worth of bytes)."""
        out = plan.copy()
        out["io_time_scale"] = scale.speedup
        return with_phase_lists(out, platform)

    def before_collect(self, backend: ClusterBackend) -> None:
        wait_for_stage_outs(backend, SUBMIT_USER)  # a job's own record comes before its stage-out ends

    def enrich(self, results: pd.DataFrame, collected: Collected) -> pd.DataFrame:
        """Staging, drain, phase and (under a tier policy) tier columns."""
        staging = collected.sched.staging_dir.removeprefix(f"{SHARED}/")
        raw, t0 = collected.raw, collected.t0
        collected.backend.get(f"{staging}/{RECORDS}", raw / RECORDS)
        out = add_staging(results, read_jsonl(raw / RECORDS), t0)
        collected.backend.get(f"{staging}/{DRAIN_RECORDS}", raw / DRAIN_RECORDS)
        drained = read_jsonl(raw / DRAIN_RECORDS)  # the checkpoints' background drains
        out = add_drains(out, drained, t0)
        out = add_phases(
            out, collected.records, collected.backend.platform, collected.scale,
            drain_records(drained, t0),
        )  # fmt: skip
        if collected.uses_agent and getattr(get_policy(collected.opts.replay.policy), "tiered", False):
            out = add_tiers(out, collected.submissions)
        return out

    def check(
        self, results: pd.DataFrame, slurm_jobs: dict[int, dict], collected: Collected
    ) -> dict[str, Any]:
        """Slurm's burst-buffer view and the order of staging against its times."""
        ids = {slurm_id for s in collected.ran if (slurm_id := s.get("slurm_job_id")) is not None}
        bb = keep_bb_states(collected.backend, collected.slurm_dir, ids)
        return {"staging": staging_check(results, slurm_jobs, collected.t0, bb)}

    def sections(self, results: pd.DataFrame) -> dict[str, Any]:
        return {"staging": {**staging_stats(results), **phase_stats(results), **drain_stats(results)}}
