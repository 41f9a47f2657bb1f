"""Where a job's start goes later than its twin's: the path from the replay's submission to the
job's first second, stage by stage, for the jobs the twin starts at once.

For each run directory (a run or a repetition, with ``--compare-sim``): the jobs that wait
less than a second in the twin, and for each the time it took

* ``sbatch``: from its instant to sbatch's return (the job is in Slurm's queue);
* ``to release`` (the ordering agent only): from there to the agent's release of it (its
  poll, its look at Slurm and its decision);
* ``to start``: from there (Slurm's own scheduler: from sbatch's return) to sigsleep's first
  second (Slurm's pass, the launch), in two parts: ``to Slurm's`` start (the commands and
  Slurm's pass; Slurm records whole seconds, so each value is within a second) and
  ``launch`` (from Slurm's start to sigsleep's own, its ``launched`` when it counted from
  Slurm's start);

as percentiles in the trace's seconds and in real milliseconds (the trace's seconds over the
run's speed-up; the shrink's factor on the wall clock). Also the emulated wait of these jobs,
and the run's mean wait against the ideal twin's.

    PYTHONPATH=. python3 benchmarks/start_latency.py RUN_DIR [RUN_DIR ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from harness.model import rundir
from harness.model.jsonio import read_json, read_jsonl
from harness.model.timescale import TimeScale

PERCENTILES = (10, 50, 90)


def real_per_trace_s(manifest: dict) -> float:
    """Real seconds per second of the trace: 1/speed-up on a fixed virtual clock, 1 - shrink
    on the wall clock (0 on the event clock, whose time stands still while Slurm works)."""
    if manifest.get("clock") == "events":
        return 0.0
    speedup = manifest.get("speedup")
    shrink = float(manifest.get("shrink") or 0.0)
    scale = TimeScale.of_speedup(float(speedup)) if speedup else TimeScale(shrink)
    return float(scale.to_slurm(1.0))


def stages(run_dir: Path) -> tuple[pd.DataFrame, dict]:
    """One row per job the twin starts within a second of its submission: its stages (trace s)."""
    manifest = read_json(run_dir / rundir.MANIFEST)
    raw = run_dir / rundir.RAW_DIR
    submitted = {s["slurm_job_id"]: s for s in read_jsonl(raw / rundir.SUBMISSIONS) if s.get("slurm_job_id")}
    started = {int(s["job_id"]): float(s["start"]) for s in read_jsonl(raw / rundir.STARTED)}
    # a job that counted from Slurm's start (a fixed speed-up) keeps its own start as `launched`
    started |= {
        int(r["job_id"]): float(r["launched"])
        for r in read_jsonl(raw / rundir.SIGSLEEP_LOG)
        if "launched" in r
    }
    released: dict[int, float] = {}
    if (raw / rundir.DECISIONS).exists():
        for decision in read_jsonl(raw / rundir.DECISIONS):
            for job in decision.get("started", []):
                released.setdefault(int(job), float(decision["t"]))
    slurm_starts = {
        int(k): v.get("start")
        for k, v in read_json(run_dir / rundir.SLURM_DIR / rundir.SLURM_JOBS).get("jobs", {}).items()
    }
    results = pd.read_parquet(run_dir / rundir.RESULTS)
    twin = pd.read_parquet(run_dir / rundir.SIMULATION_DIR / rundir.RESULTS)
    both = results.merge(twin[["job_id", "submit", "start"]], on="job_id", suffixes=("", "_twin"))
    prompt = both[(both["start_twin"] - both["submit_twin"]) < 1.0]
    rows = []
    for job in prompt.itertuples():
        sub = submitted.get(int(job.slurm_job_id))
        begin = started.get(int(job.job_id))
        if sub is None or begin is None:
            continue
        known = float(sub["returned"])
        release = released.get(int(job.slurm_job_id))
        handed = release if release is not None else known  # to Slurm's scheduler
        slurm_start = slurm_starts.get(int(job.slurm_job_id))
        slurm_start = float(slurm_start) if slurm_start else np.nan
        rows.append({
            "job_id": int(job.job_id),
            "sbatch": known - float(sub["intended"]),
            "to release": (release - known) if release is not None else np.nan,
            "to start": begin - handed,
            "to Slurm's": slurm_start - handed,
            "launch": begin - slurm_start,
            "wait": float(job.start - job.submit),
        })  # fmt: skip
    return pd.DataFrame(rows), manifest


def report(run_dir: Path) -> str:
    table, manifest = stages(run_dir)
    scale = real_per_trace_s(manifest)
    metrics = read_json(run_dir / rundir.METRICS)
    ideal = metrics.get("fidelity", {}).get("metrics", {}).get("mean_wait", {})
    lines = [f"{run_dir}: {manifest.get('policy')}, clock {manifest.get('clock')}, "
             f"{len(table)} jobs started at once by the twin"]  # fmt: skip
    for column in ("sbatch", "to release", "to start", "to Slurm's", "launch", "wait"):
        values = table[column].dropna().to_numpy() if len(table) else np.array([])
        if not values.size:
            continue
        pct = np.percentile(values, PERCENTILES)
        trace = " / ".join(f"{v:.1f}" for v in pct)
        real = " / ".join(f"{v * scale * 1000:.0f}" for v in pct)
        lines.append(f"  {column:<11} p10/p50/p90 {trace} trace s = {real} real ms")
    if ideal:
        twin = ideal.get("simulated", float("nan"))
        lines.append(f"  mean wait {metrics['mean_wait']:.1f} s; ideal twin {twin:.1f} s")
    return "\n".join(lines)


def main(paths: list[str]) -> None:
    for path in paths:
        print(report(Path(path)))


if __name__ == "__main__":
    main(sys.argv[1:])
