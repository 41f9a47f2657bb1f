"""The report of one run directory: plots, ``report.md`` and a self-contained ``report.html``.

Reads what ``harness run`` (or a simulation) leaves in the run directory:

* ``manifest.json``: run id, policy, trace, shrink, ``time_scale``, completeness, platform, ...;
* ``metrics.json``: :func:`harness.metrics.summary` in original time, plus optional
  ``cross_check``, ``submission`` and ``repetitions`` sections;
* ``results.parquet``: the per-job table, times in seconds since t0 in *shrunk* time.

Every plot and number is shown in the trace's original (unshrunk) time. The metrics table
prints the values of ``metrics.json`` themselves, never recomputed ones, so the report and
the machine-readable file cannot disagree. Jobs that never ran (``missing``, ``rejected``:
no start or end) are counted in the header but left out of every plot.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from harness.metrics import time_scale_of
from harness.slurm.hostlist import HostlistError, expand_hostlist

PLOTS_DIR = "plots"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"
HOUR = 3600.0

# -- metric formatting (shared with harness.compare) -------------------------------------


@dataclass(frozen=True)
class MetricSpec:
    label: str
    kind: str  # count | seconds | ratio | fraction


METRIC_SPECS: dict[str, MetricSpec] = {
    "jobs": MetricSpec("Jobs measured", "count"),
    "mean_wait": MetricSpec("Mean wait", "seconds"),
    "median_wait": MetricSpec("Median wait", "seconds"),
    "p95_wait": MetricSpec("95th percentile wait", "seconds"),
    "max_wait": MetricSpec("Max wait", "seconds"),
    "mean_turnaround": MetricSpec("Mean turnaround", "seconds"),
    "median_turnaround": MetricSpec("Median turnaround", "seconds"),
    "mean_slowdown": MetricSpec("Mean slowdown", "ratio"),
    "mean_bsld": MetricSpec("Mean bounded slowdown", "ratio"),
    "median_bsld": MetricSpec("Median bounded slowdown", "ratio"),
    "max_bsld": MetricSpec("Max bounded slowdown", "ratio"),
    "mean_wslowdown": MetricSpec("Mean weighted slowdown", "ratio"),
    "makespan": MetricSpec("Makespan", "seconds"),
    "util_compute": MetricSpec("Compute utilisation", "fraction"),
    "util_bb": MetricSpec("Burst-buffer utilisation", "fraction"),
    "timeouts": MetricSpec("Jobs killed at walltime", "count"),
}
UNITS = {"count": "jobs", "seconds": "s", "ratio": "", "fraction": "of capacity"}
# Sections of metrics.json that get their own part of the report, not a table row.
SECTION_KEYS = ("cross_check", "submission", "repetitions")


def metric_spec(key: str, value: Any = None) -> MetricSpec:
    """The label and kind of a metric; unknown keys get a kind guessed from name and type."""
    if key in METRIC_SPECS:
        return METRIC_SPECS[key]
    base = key.removesuffix("_ci95")
    if base != key and base in METRIC_SPECS:
        spec = METRIC_SPECS[base]
        return MetricSpec(f"{spec.label}, 95 % CI", spec.kind)
    label = key.replace("_", " ").capitalize()
    if isinstance(value, int) and not isinstance(value, bool):
        return MetricSpec(label, "count")
    if key.startswith("util"):
        return MetricSpec(label, "fraction")
    if key.endswith("_s") or any(w in key for w in ("wait", "turnaround", "makespan", "runtime")):
        return MetricSpec(label, "seconds")
    return MetricSpec(label, "ratio")


def format_number(kind: str, value: Any) -> str:
    """The main figure: 2 decimals for seconds and ratios, 4 for fractions, integers for counts."""
    if isinstance(value, list | tuple):
        return "[" + ", ".join(format_number(kind, v) for v in value) + "]"
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if not isinstance(value, int | float):
        return str(value)
    if kind == "count":
        return f"{value:.0f}"
    if kind == "fraction":
        return f"{value:.4f}"
    return f"{value:.2f}"


def format_alternative(kind: str, value: Any) -> str:
    """The same figure in a friendlier unit: hours for seconds, percent for fractions."""
    if isinstance(value, list | tuple):
        parts = [format_alternative(kind, v) for v in value]
        return "[" + ", ".join(parts) + "]" if all(parts) else ""
    if not isinstance(value, int | float) or isinstance(value, bool) or math.isnan(value):
        return ""
    if kind == "seconds":
        return f"{value / HOUR:.2f} h"
    if kind == "fraction":
        return f"{100 * value:.2f} %"
    return ""


def format_metric(key: str, value: Any) -> str:
    """One compact cell, e.g. ``1234.56 s``, ``73.45 %``, ``2.10``: for terminal tables."""
    spec = metric_spec(key, value)
    if spec.kind == "fraction" and isinstance(value, int | float) and not math.isnan(value):
        return f"{100 * value:.2f} %"
    text = format_number(spec.kind, value)
    return f"{text} s" if spec.kind == "seconds" and text != "n/a" else text


# -- loading -------------------------------------------------------------------------------


@dataclass
class RunData:
    run_dir: Path
    manifest: dict[str, Any]
    metrics: dict[str, Any]
    results: pd.DataFrame | None  # None when results.parquet is absent
    notes: list[str] = field(default_factory=list)  # what was missing or unreadable

    @property
    def time_scale(self) -> float:
        if self.manifest.get("time_scale") is not None:
            return float(self.manifest["time_scale"])
        return time_scale_of(float(self.manifest.get("shrink", 0.0)))

    @property
    def platform(self) -> dict[str, Any]:
        return self.manifest.get("platform") or {}

    def jobs(self) -> pd.DataFrame:
        """The jobs that ran, with submit/start/end in original seconds since t0."""
        if self.results is None:
            return pd.DataFrame(columns=["job_id", "submit", "start", "end", "nodes", "bb_per_node_mb"])
        ran = self.results[self.results["start"].notna() & self.results["end"].notna()].copy()
        for col in ("submit", "start", "end"):
            ran[col] = ran[col].astype("float64") * self.time_scale
        return ran.sort_values(["start", "job_id"], kind="stable").reset_index(drop=True)


def load_run(run_dir: Path) -> RunData:
    run_dir = Path(run_dir)
    notes: list[str] = []
    manifest = _read_json(run_dir / "manifest.json", notes)
    metrics = _read_json(run_dir / "metrics.json", notes)
    results = None
    path = run_dir / "results.parquet"
    if path.exists():
        results = pd.read_parquet(path)
    else:
        notes.append("results.parquet is missing: no plots")
    return RunData(run_dir, manifest, metrics, results, notes)


def _read_json(path: Path, notes: list[str]) -> dict[str, Any]:
    if not path.exists():
        notes.append(f"{path.name} is missing")
        return {}
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        notes.append(f"{path.name} is unreadable: {exc}")
        return {}
    return data if isinstance(data, dict) else {}


# -- step functions over time ---------------------------------------------------------------


def step_series(starts: np.ndarray, ends: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(times, level)``: the summed weight of intervals ``[start, end)`` from each time on.

    Ends sort before starts at equal times, so a node freed and reused at the same
    instant is not counted twice.
    """
    times = np.concatenate([ends, starts]).astype(np.float64)
    deltas = np.concatenate([-weights, weights]).astype(np.float64)
    order = np.lexsort((np.concatenate([np.zeros(len(ends)), np.ones(len(starts))]), times))
    times, level = times[order], np.cumsum(deltas[order])
    # Keep the level after the last event at each instant.
    last = np.append(times[1:] != times[:-1], True)
    return times[last], level[last]


def usage_series(jobs: pd.DataFrame, platform: dict[str, Any]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Compute and BB usage as fractions of the platform's capacity over time."""
    nodes = jobs["nodes"].to_numpy(np.float64)
    bb = nodes * jobs["bb_per_node_mb"].to_numpy(np.float64)
    start, end = jobs["start"].to_numpy(np.float64), jobs["end"].to_numpy(np.float64)
    t_c, used_c = step_series(start, end, nodes)
    t_b, used_b = step_series(start, end, bb)
    compute_count = float(platform.get("compute_count") or max(used_c.max(initial=0), 1))
    bb_total = float(platform.get("bb_total_mb") or max(used_b.max(initial=0), 1))
    return {"compute": (t_c, used_c / compute_count), "bb": (t_b, used_b / bb_total)}


def queue_series(jobs: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Pending jobs and pending node demand: a job waits from its submission to its start."""
    submit, start = jobs["submit"].to_numpy(np.float64), jobs["start"].to_numpy(np.float64)
    return {
        "jobs": step_series(submit, start, np.ones(len(jobs))),
        "nodes": step_series(submit, start, jobs["nodes"].to_numpy(np.float64)),
    }


# -- Gantt layout ---------------------------------------------------------------------------


def allocated_nodes(row: Any) -> list[str]:
    """Node names of a job: Slurm's ``nodelist``, else the compute side of ``bb_nodes``.

    The simulator has no nodelist but writes ``c001:bb01,...`` in ``bb_nodes``.
    """
    nodelist = getattr(row, "nodelist", None)
    if isinstance(nodelist, str) and nodelist.strip():
        try:
            return expand_hostlist(nodelist)
        except HostlistError:
            return []  # drawn packed rather than failing the whole report
    bb_nodes = getattr(row, "bb_nodes", None)
    if isinstance(bb_nodes, str) and ":" in bb_nodes:
        return [pair.split(":")[0] for pair in bb_nodes.split(",") if pair]
    return []


def node_rows(names: Iterable[str], compute_count: int) -> dict[str, int]:
    """0-based row of each node name: ``c001`` -> 0 for the compute prefix, others after."""
    parsed = {n: _split_name(n) for n in set(names)}
    prefixes = pd.Series([p for p, _ in parsed.values()])
    main = prefixes.mode().iloc[0] if len(prefixes) else ""
    rows = {n: num - 1 for n, (p, num) in parsed.items() if p == main and 1 <= num <= compute_count}
    used = set(rows.values())
    extra = sorted((n for n in parsed if n not in rows), key=lambda n: parsed[n])
    nxt = max(compute_count, max(used, default=-1) + 1)
    for n in extra:
        rows[n] = nxt
        nxt += 1
    return rows


def _split_name(name: str) -> tuple[str, int]:
    prefix = name.rstrip("0123456789")
    digits = name[len(prefix) :]
    return prefix, int(digits) if digits else -1


def gantt_layout(jobs: pd.DataFrame, compute_count: int) -> pd.DataFrame:
    """One row per job per allocated node: ``job_id, node, start, end, status``.

    Jobs with a node list keep their nodes; the others are packed in start order onto
    the lowest-numbered rows that are free for their whole run.
    """
    names = [allocated_nodes(r) for r in jobs.itertuples(index=False)]
    rows_of = node_rows([n for job in names for n in job], compute_count)
    starts, ends = jobs["start"].to_numpy(np.float64), jobs["end"].to_numpy(np.float64)
    fixed = [(i, rows_of[n]) for i, job in enumerate(names) for n in job]
    fixed_job = np.array([i for i, _ in fixed], dtype=np.int64)
    fixed_row = np.array([r for _, r in fixed], dtype=np.int64)
    placed = list(fixed)
    n_rows = max(compute_count, int(fixed_row.max(initial=-1)) + 1)
    free_at = np.full(n_rows, -np.inf)  # end of the last packed job on each row
    for i in np.flatnonzero([not job for job in names]):
        need = int(jobs["nodes"].iat[i])
        busy = free_at > starts[i]
        overlap = (starts[fixed_job] < ends[i]) & (ends[fixed_job] > starts[i])
        busy[fixed_row[overlap]] = True
        chosen = np.flatnonzero(~busy)[:need]
        if len(chosen) < need:  # more demand than the platform: draw above it rather than hide it
            grow = need - len(chosen)
            chosen = np.concatenate([chosen, np.arange(n_rows, n_rows + grow)])
            free_at = np.concatenate([free_at, np.full(grow, -np.inf)])
            n_rows += grow
        free_at[chosen] = ends[i]
        placed.extend((i, int(r)) for r in chosen)
    idx = np.array([i for i, _ in placed], dtype=np.int64)
    status = jobs["status"] if "status" in jobs else pd.Series(["completed"] * len(jobs))
    return pd.DataFrame(
        {
            "job_id": jobs["job_id"].to_numpy()[idx],
            "node": np.array([r for _, r in placed], dtype=np.int64),
            "start": starts[idx],
            "end": ends[idx],
            "status": status.astype(str).to_numpy()[idx],
        }
    )


# -- plots ----------------------------------------------------------------------------------

STATUS_COLOURS = {"timeout": "#d62728", "killed": "#7f0000", "cut": "#9e9e9e"}
# Qualitative colours for completed jobs, without the reds and greys reserved above.
JOB_COLOURS = ["#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#9467bd",
               "#c5b0d5", "#8c564b", "#c49c94", "#e377c2", "#f7b6d2", "#bcbd22", "#dbdb8d",
               "#17becf", "#9edae5"]  # fmt: skip

PLOT_CAPTIONS = {
    "gantt": "Gantt chart: one bar per job per compute node it held, from start to end. "
    "Red bars hit their walltime (timeout), dark red ones were killed, grey ones cut when the "
    "replay stopped.",
    "utilisation": "Share of compute nodes and of burst-buffer capacity held by running jobs "
    "over time; the dashed line is the mean over the makespan (the metrics' utilisation).",
    "queue": "Jobs submitted but not yet started, and the compute nodes they ask for, over time.",
    "waits": "Cumulative distribution of the waiting time (submission to start) of the jobs that ran.",
}


def _title(run: RunData, what: str) -> str:
    m = run.manifest
    return f"{what}: {m.get('policy', '?')} on {m.get('trace', '?')} (run {m.get('run_id', '?')})"


def _time_axis(ax: Any) -> None:
    ax.set_xlabel("time since replay start (hours, original trace time)")
    ax.grid(True, alpha=0.3)


def plot_gantt(run: RunData, jobs: pd.DataFrame, out: Path) -> Path:
    compute_count = int(run.platform.get("compute_count") or jobs["nodes"].max())
    layout = gantt_layout(jobs, compute_count)
    fig = Figure(figsize=(12, 6.5), layout="constrained")
    ax = fig.add_subplot()
    x0, x1 = layout["start"].to_numpy() / HOUR, layout["end"].to_numpy() / HOUR
    y0 = layout["node"].to_numpy() - 0.45
    verts = np.stack(
        [np.column_stack(p) for p in ((x0, y0), (x0, y0 + 0.9), (x1, y0 + 0.9), (x1, y0))], axis=1
    )
    job_rank = pd.factorize(layout["job_id"])[0]
    colours = [
        STATUS_COLOURS.get(s, JOB_COLOURS[k % len(JOB_COLOURS)])
        for s, k in zip(layout["status"], job_rank, strict=True)
    ]
    thin = len(layout) < 5000  # edges would blacken a dense chart
    ax.add_collection(
        PolyCollection(
            verts, facecolors=colours, edgecolors="white" if thin else "none", linewidths=0.3 if thin else 0
        )
    )
    n_rows = max(int(layout["node"].max()) + 1 if len(layout) else 0, compute_count)
    ax.set_xlim(0, max(float(x1.max(initial=0)), 1e-9) * 1.01)
    ax.set_ylim(n_rows - 0.5, -0.5)  # node 1 at the top
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(f"compute node index (0 to {n_rows - 1})")
    ax.set_title(_title(run, "Gantt chart"))
    _time_axis(ax)
    _status_legend(ax, set(layout["status"]))
    fig.savefig(out, dpi=110)
    return out


def _status_legend(ax: Any, statuses: set[str]) -> None:
    handles = [Patch(color=JOB_COLOURS[0], label="completed (colour per job)")]
    handles += [Patch(color=c, label=s) for s, c in STATUS_COLOURS.items() if s in statuses]
    ax.legend(handles=handles, loc="upper right", fontsize="small", framealpha=0.85)


def plot_utilisation(run: RunData, jobs: pd.DataFrame, out: Path) -> Path:
    series = usage_series(jobs, run.platform)
    fig = Figure(figsize=(12, 6), layout="constrained")
    axes = fig.subplots(2, 1, sharex=True)
    panels = (("compute", "util_compute", "compute nodes in use"), ("bb", "util_bb", "burst buffer in use"))
    for ax, (key, metric, label) in zip(axes, panels, strict=True):
        t, level = series[key]
        _draw_steps(ax, t, level * 100, jobs)
        mean = run.metrics.get(metric)
        if isinstance(mean, int | float):
            ax.axhline(100 * mean, color="k", ls="--", lw=1, label=f"mean over makespan: {100 * mean:.2f} %")
            ax.legend(loc="upper right", fontsize="small")
        ax.set_ylabel(f"{label} (% of capacity)")
        ax.set_ylim(0, max(105.0, float(level.max(initial=0)) * 105))
        ax.grid(True, alpha=0.3)
    axes[0].set_title(_title(run, "Utilisation"))
    _time_axis(axes[1])
    fig.savefig(out, dpi=110)
    return out


def _draw_steps(ax: Any, t: np.ndarray, level: np.ndarray, jobs: pd.DataFrame) -> None:
    """A step function from the first submission to the last event, in hours."""
    first = float(jobs["submit"].min()) if len(jobs) else 0.0
    t = np.concatenate([[min(first, t[0] if len(t) else first)], t]) / HOUR
    level = np.concatenate([[0.0], level])
    ax.step(t, level, where="post", lw=1.2)
    ax.fill_between(t, level, step="post", alpha=0.25)


def plot_queue(run: RunData, jobs: pd.DataFrame, out: Path) -> Path:
    series = queue_series(jobs)
    fig = Figure(figsize=(12, 6), layout="constrained")
    axes = fig.subplots(2, 1, sharex=True)
    for ax, (key, label) in zip(
        axes, (("jobs", "pending jobs"), ("nodes", "pending node demand (nodes)")), strict=True
    ):
        t, level = series[key]
        _draw_steps(ax, t, level, jobs)
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
    compute = run.platform.get("compute_count")
    if compute:
        axes[1].axhline(compute, color="k", ls=":", lw=1, label=f"machine size ({compute} nodes)")
        axes[1].legend(loc="upper right", fontsize="small")
    axes[0].set_title(_title(run, "Queue"))
    _time_axis(axes[1])
    fig.savefig(out, dpi=110)
    return out


WAIT_TICKS = (
    (1, "1 s"),
    (10, "10 s"),
    (60, "1 min"),
    (600, "10 min"),
    (HOUR, "1 h"),
    (6 * HOUR, "6 h"),
    (24 * HOUR, "1 d"),
    (7 * 24 * HOUR, "1 w"),
)


def plot_waits(run: RunData, jobs: pd.DataFrame, out: Path) -> Path:
    """ECDF on a log axis; waits under 1 s (the replay's resolution) are drawn at 1 s."""
    waits = np.sort((jobs["start"] - jobs["submit"]).to_numpy(np.float64))
    shown = np.maximum(waits, 1.0)
    fig = Figure(figsize=(10, 5.5), layout="constrained")
    ax = fig.add_subplot()
    ecdf = np.arange(1, len(waits) + 1) / max(len(waits), 1)
    top = max(float(shown.max(initial=1.0)), 10.0)
    # Start at 0 on the left edge and run on to the right edge, so the curve spans the axis.
    x = np.concatenate([[1.0], shown, [top * 1.5]])
    ax.step(x, np.concatenate([[0.0], ecdf, [1.0]]), where="post", lw=1.5)
    ax.set_xscale("log")
    ticks = [(v, s) for v, s in WAIT_TICKS if v <= top * 10]
    ax.set_xticks([v for v, _ in ticks], [s for _, s in ticks])
    ax.set_xlim(1.0, top * 1.5)
    ax.set_ylim(0, 1.02)
    for key, style in (("median_wait", ":"), ("mean_wait", "--")):
        value = run.metrics.get(key)
        if isinstance(value, int | float) and value > 0:
            ax.axvline(
                value,
                color="k",
                ls=style,
                lw=1,
                label=f"{metric_spec(key).label}: {format_metric(key, value)} ({value / HOUR:.2f} h)",
            )
    zero = int((waits < 1.0).sum())
    ax.set_xlabel(f"waiting time (log scale, original time; {zero} of {len(waits)} jobs waited < 1 s)")
    ax.set_ylabel("fraction of jobs waiting at most x")
    ax.set_title(_title(run, "Waiting time"))
    ax.grid(True, which="both", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize="small")
    fig.savefig(out, dpi=110)
    return out


PLOTTERS = (
    ("gantt", plot_gantt),
    ("utilisation", plot_utilisation),
    ("queue", plot_queue),
    ("waits", plot_waits),
)


def write_plots(run: RunData) -> list[Path]:
    jobs = run.jobs()
    if jobs.empty:
        return []
    out_dir = run.run_dir / PLOTS_DIR
    out_dir.mkdir(exist_ok=True)
    return [plot(run, jobs, out_dir / f"{name}.png") for name, plot in PLOTTERS]


# -- the document -----------------------------------------------------------------------------
# A tiny document model rendered twice (Markdown and HTML) so both always say the same.


@dataclass
class Table:
    headers: list[str]
    rows: list[list[str]]
    # Per row, (metric key, raw JSON value): kept as data attributes in the HTML.
    data: list[tuple[str, str] | None] | None = None


@dataclass
class Banner:
    text: str
    ok: bool


@dataclass
class Image:
    path: str  # relative to the run directory
    alt: str
    caption: str


Block = str | Table | Banner | Image


@dataclass
class Section:
    title: str
    blocks: list[Block]


def build_document(run: RunData, plots: Sequence[Path]) -> tuple[str, list[Section]]:
    title = f"Run {run.manifest.get('run_id', run.run_dir.name)}"
    sections = [_header_section(run), _jobs_section(run), _metrics_section(run)]
    sections += _optional_sections(run)
    sections.append(_plots_section(run, plots))
    sections.append(_manifest_section(run))
    return title, sections


def _header_section(run: RunData) -> Section:
    m = run.manifest
    if m.get("complete") is True:
        banner = Banner("Complete run: every job of the plan was replayed and collected.", ok=True)
    else:
        reason = m.get("incomplete_reason") or "the manifest does not mark the run complete"
        banner = Banner(f"INCOMPLETE run: {reason}. Figures cover only the jobs that ran.", ok=False)
    p = run.platform
    platform = (
        f"{p.get('compute_count', '?')} compute nodes, {p.get('bb_count', '?')} burst-buffer nodes "
        f"of {p.get('bb_capacity_mb', '?')} MB ({p.get('bb_total_mb', '?')} MB in all)"
    )
    rows = [
        ["Policy", str(m.get("policy", "?"))],
        ["Trace", str(m.get("trace", "?"))],
        ["Shrink", _plain(m.get("shrink"))],
        ["Speed-up", f"{run.time_scale:.2f}x (all times below are original trace time)"],
        ["Platform", platform],
        ["Started at", str(m.get("started_at", "?"))],
        ["Slurm version", str(m.get("slurm_version", "?"))],
        ["Harness version", str(m.get("harness_version", "?"))],
        ["Seed", _plain(m.get("seed"))],
    ]
    blocks: list[Block] = [banner, Table(["", ""], rows)]
    blocks += [f"Note: {n}." for n in run.notes]
    return Section("Run", blocks)


def _jobs_section(run: RunData) -> Section:
    if run.results is None:
        return Section("Jobs", ["No per-job results."])
    res = run.results
    ran = int((res["start"].notna() & res["end"].notna()).sum())
    status = res["status"] if "status" in res else pd.Series(["unknown"] * len(res))
    counts = status.astype(str).value_counts()
    rows = [[str(s), str(int(c))] for s, c in counts.items()]
    text = (
        f"{len(res)} jobs in the plan, {ran} ran; {len(res) - ran} never started "
        "(left out of the metrics and plots)."
    )
    return Section("Jobs", [text, Table(["status", "jobs"], rows)])


def _metrics_section(run: RunData) -> Section:
    keys = [k for k in run.metrics if k not in SECTION_KEYS and _is_figure(run.metrics[k])]
    if not keys:
        return Section("Metrics", ["No metrics (no job ran, or metrics.json is missing)."])
    rows, data = [], []
    for key in keys:
        value = run.metrics[key]
        spec = metric_spec(key, value)
        rows.append(
            [
                spec.label,
                f"`{key}`",
                format_number(spec.kind, value),
                UNITS[spec.kind],
                format_alternative(spec.kind, value),
            ]
        )
        data.append((key, json.dumps(value)))
    intro = "Values of metrics.json, in original trace time (seconds, 2 decimals; fractions, 4)."
    table = Table(["metric", "key", "value", "unit", "also"], rows, data)
    blocks: list[Block] = [intro, table]
    others = [k for k in run.metrics if k not in SECTION_KEYS and k not in keys]
    if others:
        blocks.append(Table(["other figure", "value"], [[k, _plain(run.metrics[k])] for k in others]))
    return Section("Metrics", blocks)


def _is_figure(value: Any) -> bool:
    """A number, or an interval of two numbers (the bootstrap CIs)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    return isinstance(value, list) and len(value) == 2 and all(isinstance(v, int | float) for v in value)


def _optional_sections(run: RunData) -> list[Section]:
    sections = []
    reps = run.metrics.get("repetitions")
    if isinstance(reps, dict) and reps:
        sections.append(_repetitions_section(reps))
    check = run.metrics.get("cross_check")
    if isinstance(check, dict):
        sections.append(_cross_check_section(check))
    sub = run.metrics.get("submission")
    if isinstance(sub, dict):
        rows = [[k, _seconds3(k, v)] for k, v in sub.items()]
        text = "How late the replay submitted jobs relative to their planned instants (wall-clock seconds)."
        sections.append(Section("Submission lag", [text, Table(["figure", "value"], rows)]))
    agent = run.metrics.get("agent")
    if isinstance(agent, dict):
        rows = [[k, _summarise(v)] for k, v in agent.items()]
        text = "Calls of the policy by the ordering agent and their latency (wall-clock seconds)."
        sections.append(Section("Ordering agent", [text, Table(["figure", "value"], rows)]))
    fidelity = run.metrics.get("fidelity")
    if isinstance(fidelity, dict):
        sections.append(_fidelity_section(fidelity))
    return sections


def _fidelity_section(fidelity: dict[str, Any]) -> Section:
    """Emulation against the simulation of the same plan and policy (original time)."""
    order = fidelity.get("start_order") or {}
    text = (
        f"The same plan simulated with `{fidelity.get('simulator_policy')}`. Start order agreement "
        f"(Kendall's tau over {order.get('jobs', '?')} jobs): {_summarise(order.get('kendall_tau'))}; "
        f"mean absolute start shift: {_summarise(fidelity.get('mean_abs_start_shift_s'))} s."
    )
    rows = [
        [key, _summarise(v.get("emulated")), _summarise(v.get("simulated")), _summarise(v.get("rel_diff"))]
        for key, v in (fidelity.get("metrics") or {}).items()
        if isinstance(v, dict)
    ]
    table = Table(["metric", "emulated", "simulated", "relative difference"], rows)
    return Section("Fidelity: emulation vs simulation", [text, table])


def _repetitions_section(reps: dict[str, Any]) -> Section:
    rows = []
    for key, st in reps.items():
        if not isinstance(st, dict):
            continue
        kind = metric_spec(key).kind
        rows.append(
            [
                metric_spec(key).label,
                f"`{key}`",
                format_number(kind, st.get("AVE")),
                format_number(kind, st.get("SSD")),
                format_number("ratio", st.get("RSD")),
                format_number(kind, st.get("C95")),
            ]
        )
    text = (
        "Over the repeated runs: mean (AVE), standard deviation (SSD), relative SD in % (RSD), "
        "95 % CI half-width (C95)."
    )
    return Section("Repetitions", [text, Table(["metric", "key", "AVE", "SSD", "RSD %", "C95"], rows)])


def _cross_check_section(check: dict[str, Any]) -> Section:
    ok = check.get("ok")
    n_bad = check.get("n_disagreements", len(check.get("disagreements") or []))
    if ok is True:
        banner = Banner(
            f"Slurm and sigsleep agree on all {check.get('compared', '?')} compared jobs.", ok=True
        )
    else:
        banner = Banner(
            f"Slurm and sigsleep disagree: {n_bad} job(s) beyond tolerance, or records missing.", ok=False
        )
    rows = [[k, _summarise(v)] for k, v in check.items() if k != "disagreements"]
    blocks: list[Block] = [
        "Start and end of every job as seen by sigsleep (the job itself) and by Slurm's jobcomp log.",
        banner,
        Table(["figure", "value"], rows),
    ]
    bad = [d for d in check.get("disagreements") or [] if isinstance(d, dict)]
    if bad:
        headers = list(bad[0])
        blocks.append(f"First {min(len(bad), 20)} disagreements:")
        blocks.append(Table(headers, [[_plain(d.get(h)) for h in headers] for d in bad[:20]]))
    return Section("Cross-check: Slurm vs sigsleep", blocks)


def _plots_section(run: RunData, plots: Sequence[Path]) -> Section:
    if not plots:
        return Section("Plots", ["No plots: no job ran."])
    blocks: list[Block] = []
    for path in plots:
        rel = path.relative_to(run.run_dir).as_posix()
        blocks.append(Image(rel, f"{path.stem} plot", PLOT_CAPTIONS.get(path.stem, "")))
    return Section("Plots", blocks)


def _manifest_section(run: RunData) -> Section:
    shown = {
        "run_id",
        "policy",
        "trace",
        "shrink",
        "time_scale",
        "platform",
        "started_at",
        "slurm_version",
        "harness_version",
        "seed",
        "complete",
        "incomplete_reason",
    }
    rows = [[k, _plain(v)] for k, v in _flatten(run.manifest) if k.split(".")[0] not in shown]
    if not rows:
        return Section("Other manifest fields", ["None."])
    return Section("Other manifest fields", [Table(["field", "value"], rows)])


def _flatten(d: dict[str, Any], prefix: str = "", depth: int = 0) -> Iterable[tuple[str, Any]]:
    for k, v in d.items():
        if isinstance(v, dict) and v and depth < 2:
            yield from _flatten(v, f"{prefix}{k}.", depth + 1)
        else:
            yield f"{prefix}{k}", v


def _plain(value: Any, limit: int = 160) -> str:
    if value is None:
        return "n/a"
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _summarise(value: Any) -> str:
    """Lists of job ids can be long: their length and the first few."""
    if isinstance(value, list):
        head = ", ".join(_plain(v, 40) for v in value[:10])
        return f"{len(value)}" + (f" ({head}{', ...' if len(value) > 10 else ''})" if value else "")
    if isinstance(value, float):
        return f"{value:.3f}"
    return _plain(value)


def _seconds3(key: str, value: Any) -> str:
    # Lags are sub-second, so three decimals rather than the metrics' two.
    if isinstance(value, float):
        return f"{value:.3f} s" if key.endswith("_s") else f"{value:.3f}"
    return _plain(value)


# -- Markdown -----------------------------------------------------------------------------------


def render_markdown(title: str, sections: Sequence[Section]) -> str:
    lines = [f"# {title}", ""]
    for section in sections:
        lines += [f"## {section.title}", ""]
        for block in section.blocks:
            lines += [*_md_block(block), ""]
    return "\n".join(lines)


def _md_block(block: Block) -> list[str]:
    if isinstance(block, str):
        return [block]
    if isinstance(block, Banner):
        return [f"> **{block.text}**" if block.ok else f"> **⚠ {block.text}**"]
    if isinstance(block, Image):
        return [f"![{block.alt}]({block.path})", "", f"*{block.caption}*"]
    cell = lambda s: s.replace("|", "\\|")  # noqa: E731
    out = ["| " + " | ".join(cell(h) for h in block.headers) + " |"]
    out.append("|" + "|".join("---" for _ in block.headers) + "|")
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in block.rows]
    return out


# -- HTML -----------------------------------------------------------------------------------------

CSS = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f2f2f2; }
.banner { padding: 0.6em 1em; border-radius: 4px; font-weight: bold; }
.ok { background: #e6f4ea; border: 1px solid #34a853; }
.bad { background: #fdecea; border: 2px solid #d93025; color: #a50e0e; }
figure { margin: 1em 0 2em; } figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { color: #555; font-size: 0.9em; }
code { background: #f5f5f5; padding: 0 0.2em; }
"""


def render_html(title: str, sections: Sequence[Section]) -> str:
    body = [f"<h1>{html.escape(title)}</h1>"]
    for section in sections:
        body.append(f"<h2>{html.escape(section.title)}</h2>")
        body += [_html_block(b) for b in section.blocks]
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def _html_block(block: Block) -> str:
    if isinstance(block, str):
        return f"<p>{_html_text(block)}</p>"
    if isinstance(block, Banner):
        return f'<p class="banner {"ok" if block.ok else "bad"}">{html.escape(block.text)}</p>'
    if isinstance(block, Image):
        img = f'<img src="{html.escape(block.path)}" alt="{html.escape(block.alt)}">'
        return f"<figure>{img}<figcaption>{html.escape(block.caption)}</figcaption></figure>"
    head = "".join(f"<th>{html.escape(h)}</th>" for h in block.headers)
    rows = []
    for i, row in enumerate(block.rows):
        attrs = ""
        if block.data and block.data[i]:
            key, raw = block.data[i]
            attrs = f' data-metric="{html.escape(key)}" data-value="{html.escape(raw)}"'
        cells = "".join(f"<td{_num_class(c)}>{_html_text(c)}</td>" for c in row)
        rows.append(f"<tr{attrs}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _html_text(text: str) -> str:
    """Escape, then turn Markdown `code` spans into <code>."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _num_class(text: str) -> str:
    try:
        float(text)
    except ValueError:
        return ""
    return ' class="num"'


# -- entry point ----------------------------------------------------------------------------------


def write_report(run_dir: Path) -> list[Path]:
    """Write ``plots/*.png``, ``report.md`` and ``report.html`` into ``run_dir``; return their paths."""
    run = load_run(Path(run_dir))
    plots = write_plots(run)
    title, sections = build_document(run, plots)
    md = run.run_dir / REPORT_MD
    md.write_text(render_markdown(title, sections), encoding="utf-8")
    page = run.run_dir / REPORT_HTML
    page.write_text(render_html(title, sections), encoding="utf-8")
    return [*plots, md, page]
