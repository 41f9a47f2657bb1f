"""Repeated runs of one plan (``harness run --repeat N``): one run directory per
repetition under a parent, and AVE/SSD/RSD/C95 per metric at the top."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd

from harness.analysis.agreement import schedule_agreement
from harness.analysis.compare import aggregate_repetitions
from harness.emulation.run.experiment import Experiment
from harness.emulation.run.specs import RunOptions, run_id_for
from harness.emulation.run.state import mark_process
from harness.emulation.run.steps import Progress
from harness.model import rundir
from harness.model.exitcodes import asked_to_stop
from harness.model.jsonio import write_json


def run_repetitions(
    opts: RunOptions, repeat: int, progress: Progress | None = None, parent: Path | None = None
) -> Path:
    """``repeat`` runs of the same plan (shuffled differently with ``--shuffle``) under one
    directory (``parent``, made here if not given): ``repetitions/NN/`` each, and
    AVE/SSD/RSD/C95 per metric at the top."""
    given = parent is not None
    parent = parent or opts.runs_dir / run_id_for(opts)
    parent.mkdir(parents=True, exist_ok=given)
    mark_process(parent)
    metrics, complete = [], True
    for i in range(repeat):
        workload = replace(opts.workload, shuffle_seed=opts.workload.seed + i)
        rep_opts = replace(opts, run_dir=parent / rundir.repetition_name(i), run_id="", workload=workload)
        rep_dir = Experiment(rep_opts, progress).execute()
        metrics.append(rundir.read_metrics(rep_dir))
        rep_manifest = rundir.read_manifest(rep_dir)
        complete &= bool(rep_manifest["complete"])
        if asked_to_stop(rep_manifest.get("incomplete_reason")):
            break  # Ctrl-C or SIGTERM stops the repetitions, not only the one under way
    done = len(metrics)
    stats = aggregate_repetitions(metrics)
    top = {key: value["AVE"] for key, value in stats.items()} | {
        "repetitions": stats,
        "n_repetitions": done,
        "schedule_agreement": repeated_schedules(parent, done),
    }
    write_json(parent / rundir.METRICS, top)
    first = rundir.read_manifest(parent / rundir.repetition_name(0))
    manifest = {**first, "run_id": parent.name, "repeat": repeat, "complete": complete and done == repeat,
                "repetition_dirs": [rundir.repetition_name(i) for i in range(done)]}  # fmt: skip
    write_json(parent / rundir.MANIFEST, manifest)
    return parent


def repeated_schedules(parent: Path, done: int) -> dict:
    """Whether the repetitions gave the same schedule (harness.analysis.agreement): the first
    ``done`` repetitions' results, in the trace's seconds."""
    schedules = []
    for i in range(done):
        path = parent / rundir.repetition_name(i) / rundir.RESULTS
        if path.is_file():
            schedules.append(pd.read_parquet(path, columns=["job_id", "start"]))
    return schedule_agreement(schedules)
