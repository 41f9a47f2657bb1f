"""The suspensions of a run with a priority model: emulated against the twin's.

The jobs' own sigsleep records hold every suspension (``suspensions``: [suspended, resumed]
in Slurm's seconds). This step writes them (``suspensions.csv``, the trace's seconds since
t0), replays the plan in the suspend/resume twin (:mod:`harness.sim.preemption`),
writes its prediction (``simulation/suspensions.csv``) and the figure of each
(``plots/suspended.png``, ``plots/suspended-twin.png``), and returns the counts for
``metrics.json`` (section ``preemption``), with the jobs suspended by one side only and the
headline metrics of both (the trace's time).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from harness.analysis.metrics import summary
from harness.analysis.preemption import SPAN_COLUMNS, plot_suspensions, suspension_counts
from harness.model import rundir
from harness.model.atomic import atomic_write_csv
from harness.model.metric_names import HEADLINE_METRICS
from harness.model.records import JobRecord
from harness.model.rundir import SUSPENSIONS_CSV
from harness.model.timescale import TimeScale
from harness.platform import Machine
from harness.sim.preemption import simulate_preemption
from harness.workload.priority import PRIORITY_COLUMN


def emulated_spans(records: list[JobRecord], t0: float) -> pd.DataFrame:
    """``job_id, start, end`` of every suspension in the sigsleep records, Slurm's seconds since t0."""
    rows = [
        (int(rec["job_id"]), float(start) - t0, float(end) - t0)
        for rec in records
        for start, end in rec.get("suspensions") or []
    ]
    return pd.DataFrame(sorted(rows, key=lambda r: (r[1], r[0])), columns=list(SPAN_COLUMNS))


def preemption_section(
    run_dir: Path, plan: pd.DataFrame, results: pd.DataFrame, records: list[JobRecord], t0: float,
    platform: Machine, scale: TimeScale, preempt: bool,
) -> dict[str, Any]:  # fmt: skip
    """Files and counts of the emulated and the twin's suspensions (see the module); ``plan``
    and ``results`` in the trace's time."""
    jobs = results.merge(plan[["job_id", PRIORITY_COLUMN]], on="job_id", how="left")
    spans = scale.trace_table(emulated_spans(records, t0), ("start", "end"))
    atomic_write_csv(run_dir / SUSPENSIONS_CSV, spans)
    twin = simulate_preemption(plan, platform, preempt=preempt)
    (run_dir / rundir.SIMULATION_DIR).mkdir(exist_ok=True)
    atomic_write_csv(run_dir / rundir.SIMULATION_DIR / SUSPENSIONS_CSV, twin.suspensions)
    plots = run_dir / rundir.PLOTS_DIR
    n = platform.compute_count
    for table, cut, name, title in ((jobs, spans, "suspended.png", "Emulated"),
                                    (twin.jobs, twin.suspensions, "suspended-twin.png", "Twin")):  # fmt: skip
        plot_suspensions(table, cut, n, plots / name, title=f"{title}: suspend/resume")
    emulated, predicted = set(spans["job_id"]), set(twin.suspensions["job_id"])
    ran = jobs[jobs["start"].notna() & jobs["end"].notna()]
    emu_m, twin_m = summary(ran, platform), summary(twin.jobs, platform)
    return {
        "metrics": {k: {"emulated": emu_m[k], "twin": twin_m[k]} for k in HEADLINE_METRICS},
        "preempt": "suspend" if preempt else "none",
        "emulated": suspension_counts(jobs, spans),
        "twin": suspension_counts(twin.jobs, twin.suspensions),
        "suspended_by_emulation_only": sorted(int(j) for j in emulated - predicted),
        "suspended_by_twin_only": sorted(int(j) for j in predicted - emulated),
    }
