"""``manifest.json`` of a run: every parameter, versions, the input's checksum, whose jobs
they were, completeness (written by the manifest step, and by a run that stops on an error)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from harness import __version__
from harness.cluster.base import ClusterBackend, ClusterError
from harness.emulation.run.site_run import SiteReplay
from harness.emulation.run.specs import RunOptions
from harness.model import rundir
from harness.model.jsonio import write_json
from harness.model.timescale import TimeScale
from harness.slurm.config import SchedulerConfig


class RunFacts(Protocol):
    """What the manifest reads of a run (:class:`harness.emulation.run.steps.RunContext`)."""

    opts: RunOptions
    run_dir: Path
    run_id: str
    backend: ClusterBackend
    sched: SchedulerConfig
    started_at: str
    site: SiteReplay | None

    @property
    def scale(self) -> TimeScale: ...

    def plan(self) -> tuple[pd.DataFrame, dict[str, Any]]: ...

    def found(self, step: str) -> dict[str, Any]: ...


def write_manifest(ctx: RunFacts, complete: bool, reason: str) -> None:
    """``manifest.json``: every parameter, versions, the input's checksum, completeness."""
    spec, sched, platform = ctx.opts.workload, ctx.sched, ctx.backend.platform
    plan_manifest = ctx.plan()[1] if (ctx.run_dir / rundir.PLAN).exists() else {}
    write_json(
        ctx.run_dir / rundir.MANIFEST,
        {
            "run_id": ctx.run_id,
            "policy": ctx.opts.replay.policy,
            "shrink": spec.shrink,
            rundir.TIMES: rundir.TRACE_TIME,
            "clock": sched.clock,
            "speedup": ctx.opts.replay.speedup or ctx.scale.speedup,
            "trace": spec.source.name,
            "trace_path": str(spec.source),
            "input_sha256": plan_manifest.get("input", {}).get("sha256"),
            "seed": spec.seed,
            "complete": complete,
            "incomplete_reason": reason,
            "started_at": ctx.started_at,
            "finished_at": datetime.now().astimezone().isoformat(timespec="seconds"),
            "harness_version": __version__,
            "slurm_version": slurm_version(ctx.backend),
            "cluster": {"backend": ctx.opts.cluster.backend, "name": ctx.backend.name},
            "scheduler": asdict(sched) | {"scheduler_parameters": sched.scheduler_parameters},
            # the plan's users and accounts (replayed, or why not) and the site's priority applied
            **({"site": ctx.site.record} if ctx.site and ctx.site.record else {}),
            "platform": platform.as_dict(),
            "options": ctx.opts.as_dict(),
            "plan": plan_manifest,
            "steps": list(rundir.done_steps(ctx.run_dir)),
            **({"t0": ctx.found("collect")["t0"]} if ctx.found("collect") else {}),
        },
    )


def slurm_version(backend: ClusterBackend) -> str:
    try:
        res = backend.exec(["sinfo", "--version"], timeout=10)
    except ClusterError:
        return "unknown"
    return res.stdout.strip() or "unknown"
