"""The tables of an experiment's report: header, ranking, ratios, means, per-group statistics."""

from __future__ import annotations

from typing import Any

import pandas as pd

from harness.analysis.document import Block, Section, Table
from harness.analysis.formatting import format_number
from harness.experiments.report_data import ExperimentData
from harness.experiments.stats import axes_of, bootstrap_interval, group_stats, ranking, ratio_summary, ratios
from harness.model.metric_names import metric_spec


def header_section(data: ExperimentData) -> Section:
    m = data.manifest
    done = data.table["key"].nunique() if len(data.table) else 0
    trace = m.get("trace", {})
    sessions = m.get("sessions", [])
    last = sessions[-1] if sessions else {}
    rows = [
        ["Mode", str(m.get("mode", "?"))],
        ["Grid", _grid_text(data)],
        [
            "Cells finished",
            f"{done} of {len(data.grid)}" + (f"; {len(data.failed)} failed" if data.failed else ""),
        ],
        ["Trace", f"{trace.get('as_written', '?')} (sha256 {str(trace.get('sha256', '?'))[:16]}...)"],
        [
            "Platform",
            f"{m.get('platform', {}).get('file', '?')} (digest {m.get('platform', {}).get('digest', '?')})",
        ],
        ["Seeds", ", ".join(f"{k} {v}" for k, v in m.get("seeds", {}).items() if k != "per_repetition")],
        ["Baseline", str(data.settings.get("baseline") or "none")],
        [
            "Sessions",
            f"{len(sessions)}; last on {last.get('host', '?')} at {last.get('started_at', '?')} "
            f"({last.get('executor', '?')} executor)",
        ],
        ["Versions", ", ".join(f"{k} {v}" for k, v in last.get("versions", {}).items())],
    ]
    blocks: list[Block] = [str(m.get("description") or "")] if m.get("description") else []
    blocks.append(Table(["", ""], rows))
    if data.failed:
        failed = [[k, v[:160]] for k, v in list(data.failed.items())[:10]]
        blocks += ["Failed cells (run again to retry them; tracebacks in cells/<key>/error.txt):",
                   Table(["cell", "error"], failed)]  # fmt: skip
    return Section("Experiment", blocks)


def _grid_text(data: ExperimentData) -> str:
    if not data.grid:
        return "empty"
    counts = []
    for name in data.grid[0]["axes"]:
        if name != "family":
            distinct = {str(c["axes"][name]) for c in data.grid if c["axes"][name] is not None}
            counts.append(f"{len(distinct)} {name}")
    return f"{len(data.grid)} cells: {' x '.join(counts)}"


def table_sections(data: ExperimentData) -> list[Section]:
    if not len(data.table):
        return [Section("Results", ["No cell has finished yet."])]
    sections = []
    if len(data.policies) > 1:
        sections.append(_ranking_section(data))
    if data.settings.get("baseline"):
        sections.append(_ratio_section(data))
    sections.append(_means_section(data))
    sections.append(_groups_section(data))
    return sections


def reported_metrics(data: ExperimentData) -> list[str]:
    """The experiment's report metrics that some finished cell measured."""
    present = set(data.table["metric"])
    return [m for m in data.settings.get("metrics", []) if m in present]


def _ranking_section(data: ExperimentData) -> Section:
    metrics = reported_metrics(data)
    baseline = data.settings.get("baseline")
    rank = ranking(data.table, metrics, baseline, data.sweep)
    headers = ["rank", "policy", *(f"{metric_spec(m).label}" for m in metrics), "mean rank"]
    rows = []
    for r in rank.itertuples(index=False):
        row = r._asdict()
        scores = [
            f"{_fmt(m, row[f'{m}_score'], ratio=bool(baseline))} (#{row[f'{m}_rank']:.0f})" for m in metrics
        ]
        rows.append([str(row["rank"]), row["policy"], *scores, f"{row['mean_rank']:.2f}"])
    how = f"median ratio to {baseline} over the matched cells" if baseline else "mean over the policy's cells"
    text = (
        f"Policies ranked on each metric by their {how} (rank in brackets, 1 = best), then by the mean rank."
    )
    return Section("Ranking", [text, Table(headers, rows)])


def _ratio_section(data: ExperimentData) -> Section:
    baseline = data.settings["baseline"]
    rows = []
    for metric in reported_metrics(data):
        summary = ratio_summary(ratios(data.table, metric, baseline, data.sweep))
        for s in summary.itertuples(index=False):
            rows.append([s.policy, metric_spec(metric).label, str(s.n), f"{s.q1:.3f}", f"{s.median:.3f}",
                         f"{s.q3:.3f}", f"{s.mean:.3f}", f"{s.below_1}/{s.n}"])  # fmt: skip
    text = (f"Each cell's value divided by {baseline}'s in the cell that matches it on every other axis "
            "(the thesis's normalised means, Figures 4.46-4.49); quartiles over those ratios.")  # fmt: skip
    headers = ["policy", "metric", "cells", "Q1", "median", "Q3", "mean", f"better than {baseline}"]
    return Section(f"Ratios to {baseline}", [text, Table(headers, rows)])


def _means_section(data: ExperimentData) -> Section:
    metrics = reported_metrics(data)
    by = ["policy", *[s for s in (*data.sweep, "model") if s in data.table.columns]]
    rows = []
    first = data.table[data.table["metric"] == metrics[0]] if metrics else data.table
    for values, group in first.groupby(by, sort=False, dropna=False):
        head = values if isinstance(values, tuple) else (values,)
        cells = []
        for metric in metrics:
            rows_m = data.table[(data.table["metric"] == metric) & data.table["key"].isin(group["key"])]
            lo, hi = data.interval(metric, rows_m)
            cells.append(f"{_fmt(metric, rows_m['value'].mean())} [{_fmt(metric, lo)}, {_fmt(metric, hi)}]")
        rows.append([*(plain_value(v) for v in head), str(len(group)), *cells])
    text = ("Mean of each metric over the policy's cells, with a bootstrap 95 % interval (1000 resamples) "
            "over the cells' values, or over the jobs for a single cell.")  # fmt: skip
    headers = [*by, "cells", *(metric_spec(m).label for m in metrics)]
    return Section("Means", [text, Table(headers, rows)])


def _groups_section(data: ExperimentData) -> Section:
    blocks: list[Block] = [
        "Per group of cells that differ only by repetition: mean, median, AVE, SSD (divisor n), RSD %, "
        "C95 (t-based half-width) over the repetitions, and the bootstrap 95 % interval over the jobs."
    ]
    for metric in reported_metrics(data):
        stats = group_stats(data.table, metric)
        axes = [a for a in axes_of(stats) if a not in ("n", "mean", "median", "AVE", "SSD", "RSD", "C95")]
        # Only the axes that vary are columns (the family repeats the policy's name).
        axes = [a for a in axes if a == "policy" or (a != "family" and stats[a].nunique(dropna=False) > 1)]
        rows = [_group_row(data, metric, s, axes) for _, s in stats.iterrows()]
        headers = [*axes, "n", "mean", "median", "AVE", "SSD", "RSD %", "C95", "bootstrap 95 %"]
        blocks += [f"**{metric_spec(metric).label}** (`{metric}`)", Table(headers, rows)]
    return Section("Per group", blocks)


def _group_row(data: ExperimentData, metric: str, s: pd.Series, axes: list[str]) -> list[str]:
    where = {a: s[a] for a in axes_of(s.to_frame().T) if a in data.table.columns and pd.notna(s[a])}
    keys = [k for k in data.keys(**where) if k in set(data.table.loc[data.table["metric"] == metric, "key"])]
    lo, hi = bootstrap_interval(metric, data.jobs(keys))
    figures = [_fmt(metric, s[c]) for c in ("mean", "median", "AVE", "SSD")]
    rsd, c95 = format_number("ratio", s["RSD"]), _fmt(metric, s["C95"])
    return [*(plain_value(s[a]) for a in axes), str(int(s["n"])), *figures, rsd, c95,
            f"[{_fmt(metric, lo)}, {_fmt(metric, hi)}]"]  # fmt: skip


def value_text(metric: str, value: Any, ratio: bool = False) -> str:
    if ratio:
        return format_number("ratio", float(value)) if pd.notna(value) else "n/a"
    return format_number(metric_spec(metric).kind, float(value) if pd.notna(value) else float("nan"))


_fmt = value_text  # the tables' short name


def plain_value(value: Any) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "-"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
