"""Side-by-side comparison of run directories, normalised to a baseline run.

Each run contributes its ``metrics.json`` (and ``manifest.json`` for its policy and id).
A run with repetitions (``repetitions/NN/metrics.json``) is represented by the mean over
the repetitions (AVE) with its 95 % half-width (C95): the statistics stored under
``repetitions`` in its top-level ``metrics.json``, or computed here from the
subdirectories when the top level lacks them.

:func:`compare_runs` returns a DataFrame with one row per metric and a two-level column
index ``(run label, stat)``, ``stat`` in :data:`STATS`:

* ``value``: the metric (AVE for repeated runs), in original time;
* ``c95``: the 95 % half-width over repetitions, NaN for single runs;
* ``ratio``: ``value / baseline value`` (1.0 for the baseline itself).

``df.attrs`` holds ``baseline`` (its label) and ``runs`` (label, run id, policy,
directory and number of repetitions of each run).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from harness.analysis.formatting import format_metric
from harness.analysis.metrics import repetition_stats
from harness.model import rundir
from harness.model.metric_names import HEADLINE_METRICS, HIGHER_IS_BETTER
from harness.model.rundir import SIMULATOR

DEFAULT_METRICS = HEADLINE_METRICS
STATS: tuple[str, ...] = ("value", "c95", "ratio")


# -- repetitions -------------------------------------------------------------------------------


def aggregate_repetitions(metric_dicts: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """AVE/SSD/RSD/C95 (:func:`harness.analysis.metrics.repetition_stats`) of every numeric metric.

    Only metrics that are numbers in every repetition are aggregated, so each statistic
    is over the same n runs; flags, lists and nested sections are skipped.
    """
    if not metric_dicts:
        return {}
    keys = [k for k in metric_dicts[0] if all(_is_number(d.get(k)) for d in metric_dicts)]
    return {k: repetition_stats([float(d[k]) for d in metric_dicts]) for k in keys}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def repetition_dirs(run_dir: Path) -> list[Path]:
    """``repetitions/NN/`` subdirectories holding a metrics.json, in name order."""
    root = Path(run_dir) / rundir.REPETITIONS_DIR
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if (p / rundir.METRICS).is_file())


# -- loading one run --------------------------------------------------------------------------------


def run_summary(run_dir: Path) -> dict[str, Any]:
    """Run id, policy, per-metric value and C95, and repetition count of one run directory."""
    run_dir = Path(run_dir)
    manifest = rundir.read_manifest(run_dir)
    metrics = rundir.read_metrics(run_dir)
    reps_dirs = repetition_dirs(run_dir)
    reps = metrics.get("repetitions")
    if not (isinstance(reps, dict) and reps) and reps_dirs:
        reps = aggregate_repetitions([rundir.read_metrics(d) for d in reps_dirs])
    if not metrics and not reps:
        raise ValueError(f"{run_dir}: no metrics.json and no repetitions")
    values: dict[str, float] = {}
    c95: dict[str, float] = {}
    for key in set(metrics) | set(reps or {}):
        stats = reps.get(key) if isinstance(reps, dict) else None
        if isinstance(stats, dict) and "AVE" in stats:
            values[key], c95[key] = _float(stats["AVE"]), _float(stats.get("C95"))
        elif _is_number(metrics.get(key)):
            values[key] = float(metrics[key])
    return {
        "run_id": str(manifest.get("run_id") or run_dir.name),
        "policy": str(manifest.get("policy") or "?")
        + (" (sim)" if manifest.get("executor") == SIMULATOR else ""),
        "run_dir": str(run_dir),
        # None when only the statistics are stored: their n is not recorded with them.
        "repetitions": len(reps_dirs) or None,
        "repeated": bool(reps),
        "values": values,
        "c95": c95,
    }


def _float(value: Any) -> float:
    return float(value) if _is_number(value) else math.nan


# -- comparison ----------------------------------------------------------------------------------------


def run_labels(summaries: Sequence[dict[str, Any]]) -> list[str]:
    """The policy when policies are unique, else ``policy/run_id`` (numbered if still ambiguous)."""
    policies = [s["policy"] for s in summaries]
    if len(set(policies)) == len(policies):
        labels = policies
    else:
        labels = [f"{s['policy']}/{s['run_id']}" for s in summaries]
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label}#{seen[label]}")
    return out


def resolve_baseline(baseline: int | str, summaries: Sequence[dict[str, Any]], labels: Sequence[str]) -> int:
    """Index of the baseline: a position, or a run id, label or (unique) policy."""
    if isinstance(baseline, str) and baseline.strip().lstrip("-").isdigit():
        baseline = int(baseline)
    if isinstance(baseline, int):
        if not -len(summaries) <= baseline < len(summaries):
            raise ValueError(f"baseline index {baseline} is out of range for {len(summaries)} runs")
        return baseline % len(summaries)
    for field_ in ("run_id", "label", "policy"):
        names = list(labels) if field_ == "label" else [s[field_] for s in summaries]
        if names.count(baseline) == 1:
            return names.index(baseline)
    known = ", ".join(f"{i}: {s['run_id']}" for i, s in enumerate(summaries))
    raise ValueError(f"no single run matches baseline {baseline!r} (runs: {known})")


def compare_runs(
    run_dirs: Sequence[Path],
    baseline: int | str = 0,
    metrics: Sequence[str] = DEFAULT_METRICS,
    *,
    strict: bool = False,
) -> pd.DataFrame:
    """Rows = metrics, columns = ``(run label, value|c95|ratio)``; see the module docstring.
    ``strict``: a metric that no run has (a typo) is an error instead of a row of n/a."""
    if not run_dirs:
        raise ValueError("no runs to compare")
    summaries = [run_summary(Path(d)) for d in run_dirs]
    if strict:
        _check_metrics(metrics, summaries)
    labels = run_labels(summaries)
    base = resolve_baseline(baseline, summaries, labels)
    base_values = summaries[base]["values"]
    columns: dict[tuple[str, str], list[float]] = {}
    for label, s in zip(labels, summaries, strict=True):
        values = [s["values"].get(m, math.nan) for m in metrics]
        columns[(label, "value")] = values
        columns[(label, "c95")] = [s["c95"].get(m, math.nan) for m in metrics]
        columns[(label, "ratio")] = [
            _ratio(v, base_values.get(m, math.nan)) for v, m in zip(values, metrics, strict=True)
        ]
    df = pd.DataFrame(columns, index=pd.Index(list(metrics), name="metric"))
    df.columns = pd.MultiIndex.from_tuples(df.columns, names=["run", "stat"])
    df.attrs["baseline"] = labels[base]
    df.attrs["runs"] = [
        {"label": label, **{k: s[k] for k in ("run_id", "policy", "run_dir", "repetitions", "repeated")}}
        for label, s in zip(labels, summaries, strict=True)
    ]
    return df


def _check_metrics(metrics: Sequence[str], summaries: list[dict[str, Any]]) -> None:
    known = sorted({m for s in summaries for m in s["values"]})
    unknown = [m for m in metrics if m not in known]
    if unknown:
        raise ValueError(
            f"--metric {', '.join(unknown)}: no run has this metric; known: {', '.join(known) or 'none'}"
        )


def _ratio(value: float, base: float) -> float:
    """``value / base``; 0/0 is 1 (both runs equal), x/0 undefined (NaN)."""
    if math.isnan(value) or math.isnan(base):
        return math.nan
    if base == 0:
        return 1.0 if value == 0 else math.nan
    return value / base


def run_order(df: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(df.columns.get_level_values("run")))


# -- output ----------------------------------------------------------------------------------------------


def format_table(df: pd.DataFrame) -> str:
    """A plain-text table: ``value ± C95 (xratio)`` per run, the baseline marked."""
    runs = run_order(df)
    baseline = df.attrs.get("baseline")
    headers = ["metric", *[f"{r} (baseline)" if r == baseline else r for r in runs], "better"]
    rows = []
    for metric in df.index:
        cells = [metric]
        for run in runs:
            ratio = None if run == baseline else df.at[metric, (run, "ratio")]
            cells.append(_cell(metric, df.at[metric, (run, "value")], df.at[metric, (run, "c95")], ratio))
        cells.append("higher" if metric in HIGHER_IS_BETTER else "lower")
        rows.append(cells)
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    notes = _table_notes(df)
    return "\n".join([*lines, *notes])


def _cell(metric: str, value: float, c95: float, ratio: float | None) -> str:
    text = format_metric(metric, value)
    if not math.isnan(c95):
        half = format_metric(metric, c95)
        # The unit is already on the value: print ± with the bare number.
        text = text.removesuffix(" s").removesuffix(" %") + f" ± {half}"
    if ratio is not None:
        text += " (n/a)" if math.isnan(ratio) else f" (x{ratio:.2f})"
    return text


def _table_notes(df: pd.DataFrame) -> list[str]:
    notes = ["", "(xR): ratio to the baseline; times in original trace time."]
    reps = [r for r in df.attrs.get("runs", []) if r.get("repeated")]
    if reps:
        counts = ", ".join(f"{r['label']}: n={r.get('repetitions') or '?'}" for r in reps)
        notes.append(f"value ± C95: mean over repetitions with its 95 % half-width ({counts}).")
    return notes


def comparison_to_dict(df: pd.DataFrame) -> dict[str, Any]:
    """JSON-ready form: baseline, runs, and per run per metric value/c95/ratio (NaN -> None)."""
    out_runs = []
    for info, run in zip(df.attrs.get("runs", []), run_order(df), strict=False):
        metrics = {m: {stat: _json_number(df.at[m, (run, stat)]) for stat in STATS} for m in df.index}
        out_runs.append({**info, "label": run, "metrics": metrics})
    return {"baseline": df.attrs.get("baseline"), "metrics": list(df.index), "runs": out_runs}


def _json_number(value: Any) -> float | None:
    value = float(value)
    return None if math.isnan(value) or math.isinf(value) else value
