"""What a run leaves in its directory while it goes: ``progress.json`` (refreshed every few
seconds, for ``harness runs`` and ``runs watch``) and ``interim/`` (metrics, per-job results
and a short report of the jobs finished so far, refreshed at a fixed interval of wall time),
so that a long run can be judged early. Every file is replaced whole (written aside, then
renamed): a reader never sees half of one, and nothing grows with the length of the run.
"""

from __future__ import annotations

import os
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from harness.analysis.formatting import format_metric
from harness.analysis.metrics import summary
from harness.emulation.collect.results import build_results, finished
from harness.model import rundir
from harness.model.columns import EMULATION_TIME_COLUMNS
from harness.model.jsonio import write_json
from harness.model.records import JobRecord, Submission
from harness.model.timescale import TimeScale
from harness.platform.machine import Machine

PROGRESS_EVERY_S = 5.0
DEFAULT_INTERIM_EVERY_S = 15 * 60.0


class RunObserver:
    """Called by the watcher at every look at the replay (about once a second)."""

    def __init__(
        self,
        run_dir: Path,
        plan: pd.DataFrame,
        platform: Machine,
        scale: TimeScale,
        interim_every_s: float = DEFAULT_INTERIM_EVERY_S,
    ) -> None:
        self.run_dir = run_dir
        self.plan = plan
        self.platform = platform
        self.scale = scale  # the plan is the replay's, in Slurm's seconds
        self.interim_every_s = interim_every_s
        self.started = time.monotonic()
        self._progress_at = -PROGRESS_EVERY_S
        self._interim_at = time.monotonic()
        self._interim_count = -1  # finished jobs the last interim covered

    def observe(
        self,
        status: dict,
        subs: list[Submission],
        records: list[JobRecord],
        queue: tuple[int, int],
        eta_s: float,
    ) -> None:
        now = time.monotonic()
        if now - self._progress_at >= PROGRESS_EVERY_S:
            self._progress_at = now
            self.write_progress(subs, records, queue, eta_s)
        if self.interim_every_s > 0 and now - self._interim_at >= self.interim_every_s:
            self._interim_at = now
            t0 = status.get("t0")
            if t0 and len(records) != self._interim_count:
                self._interim_count = len(records)
                write_interim(self.run_dir, self.plan, subs, records, float(t0), self.platform, self.scale)

    def write_progress(
        self, subs: list[Submission], records: list[JobRecord], queue: tuple[int, int], eta_s: float
    ) -> None:
        _replace_json(
            self.run_dir / rundir.PROGRESS,
            {
                "updated": time.time(),
                "elapsed_s": time.monotonic() - self.started,
                "total": len(self.plan),
                "submitted": len(subs),
                "pending": queue[0],
                "running": queue[1],
                "finished": len(records),
                "eta_s": eta_s,
            },
        )


def write_interim(
    run_dir: Path,
    plan: pd.DataFrame,
    subs: list[Submission],
    records: list[JobRecord],
    t0: float,
    platform: Machine,
    scale: TimeScale,
) -> dict[str, Any]:
    """``interim/``: the metrics of the jobs finished so far, their results (in the trace's time:
    ``plan`` and the records are in Slurm's seconds), a report."""
    folder = run_dir / rundir.INTERIM_DIR
    folder.mkdir(exist_ok=True)
    ran = scale.trace_table(finished(build_results(plan, subs, records, t0)), EMULATION_TIME_COLUMNS)
    metrics = summary(ran, platform) if len(ran) else {}
    stamp = datetime.now().astimezone().isoformat(timespec="seconds")
    about = {"finished": len(ran), "total": len(plan), "submitted": len(subs), "written_at": stamp}
    tmp = folder / f".{rundir.RESULTS}.tmp"
    ran.to_parquet(tmp, index=False)
    os.replace(tmp, folder / rundir.RESULTS)
    _replace_json(folder / rundir.METRICS, {**metrics, "interim": about})
    _replace_text(folder / rundir.REPORT_MD, interim_report(run_dir.name, metrics, about))
    return metrics


def interim_report(run_id: str, metrics: dict[str, Any], about: dict[str, Any]) -> str:
    share = about["finished"] / about["total"] if about["total"] else 0.0
    lines = [
        f"# INTERIM report of {run_id}",
        "",
        f"**Interim: the run is not over.** {about['finished']} of {about['total']} jobs finished "
        f"({share:.1%}), {about['submitted']} submitted, at {about['written_at']}. The figures cover "
        "the finished jobs only; the jobs still queued or running are the ones that wait longest, so "
        "waits and slowdowns usually grow until the end.",
        "",
        "| metric | value |",
        "|---|---|",
    ]
    lines += [f"| {key} | {format_metric(key, value)} |" for key, value in metrics.items()]
    return "\n".join(lines) + "\n"


def _replace_json(path: Path, data: dict[str, Any]) -> None:
    tmp = write_json(path.with_name(f".{path.name}.tmp"), data)
    os.replace(tmp, path)


def _replace_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
