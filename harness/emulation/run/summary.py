"""The block ``harness run`` ends with: jobs by status (the same counts as the report's Jobs
table), the headline metrics, the run directory, whether the cluster is still up and how
to stop it, and the exit status the run ends with (``harness.model.exitcodes``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from harness.analysis.document import status_counts
from harness.analysis.formatting import format_metric
from harness.model import rundir
from harness.model.exitcodes import EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_OK, INTERRUPTED
from harness.model.metric_names import HEADLINE_METRICS, metric_spec


def exit_code(complete: bool, reason: str) -> int:
    """0 for a complete run, 130 for one stopped by Ctrl-C, 3 for any other incomplete one."""
    if complete:
        return EXIT_OK
    return EXIT_INTERRUPTED if reason == INTERRUPTED else EXIT_INCOMPLETE


def _jobs(run_dir: Path, manifest: dict[str, Any]) -> dict[str, int]:
    """Jobs per status of the run (summed over its repetitions)."""
    dirs = [run_dir / name for name in manifest.get("repetition_dirs", [])] or [run_dir]
    counts: dict[str, int] = {}
    for path in dirs:
        if (path / rundir.RESULTS).exists():
            for status, n in status_counts(pd.read_parquet(path / rundir.RESULTS)).items():
                counts[status] = counts.get(status, 0) + n
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def _reason(run_dir: Path, manifest: dict[str, Any]) -> str:
    reasons = [manifest.get("incomplete_reason") or ""]
    for name in manifest.get("repetition_dirs", []):
        reasons.append(rundir.read_manifest(run_dir / name).get("incomplete_reason") or "")
    return next((r for r in reasons if r), "")


def run_summary(run_dir: Path, cluster: dict[str, Any]) -> dict[str, Any]:
    """What the run found, as a dict (``harness run --json`` prints it)."""
    manifest = rundir.read_manifest(run_dir)
    metrics = rundir.read_metrics(run_dir) if (run_dir / rundir.METRICS).exists() else {}
    complete, reason = bool(manifest.get("complete")), _reason(run_dir, manifest)
    return {
        "run_dir": str(run_dir), "run_id": manifest.get("run_id"), "policy": manifest.get("policy"),
        "complete": complete, "incomplete_reason": "" if complete else reason,
        "jobs": _jobs(run_dir, manifest), "metrics": {k: metrics.get(k) for k in HEADLINE_METRICS},
        "cluster": cluster, "exit_code": exit_code(complete, reason),
    }  # fmt: skip


def format_run_summary(summary: dict[str, Any]) -> str:
    """The summary block, a few lines for a person."""
    jobs = summary["jobs"]
    verdict = "complete" if summary["complete"] else f"INCOMPLETE ({summary['incomplete_reason']})"
    found = {k: v for k, v in summary["metrics"].items() if v is not None}
    metrics = [f"{metric_spec(k).short or k} {format_metric(k, v)}" for k, v in found.items()]
    rows = ["; ".join(metrics[i : i + 4]) for i in range(0, len(metrics), 4)]
    lines = [
        f"=== run {summary['run_id']} ({summary['policy']}): {verdict}",
        f"jobs      {sum(jobs.values())}: " + ", ".join(f"{status} {n}" for status, n in jobs.items()),
        *[f"{'metrics' if i == 0 else '':<9} {row}" for i, row in enumerate(rows)],
        f"run dir   {summary['run_dir']} (report.md, report.html)",
        f"cluster   {_cluster_line(summary['cluster'])}",
    ]
    return "\n".join(lines)


def _cluster_line(cluster: dict[str, Any]) -> str:
    name, backend = cluster.get("name"), cluster.get("backend")
    if backend != "docker":
        return f"{backend}: left as it was"
    if not cluster.get("up"):
        return f"'{name}' is down"
    return f"'{name}' is still up; stop it with `harness cluster down --name {name}`"
