"""The shrink-limit finder's outputs: a table, a JSON record and each metric against the
speed-up (Barberato Figures 4.12-4.14), the tolerance band around the reference shaded."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure

from harness.analysis.figures import DEFAULT_FIGURE_FORMATS, save_figure
from harness.experiments.report import axis_label
from harness.experiments.shrink_limit import ShrinkLimit
from harness.model.jsonio import write_json
from harness.model.timescale import TimeScale

JSON_NAME, CSV_NAME, PLOT_NAME = "shrink-limit.json", "shrink-limit.csv", "shrink-limit.png"


def plot_limit(
    result: ShrinkLimit, out: Path, title: str = "", formats: Sequence[str] = DEFAULT_FIGURE_FORMATS
) -> Path:
    table = result.table
    metrics = list(dict.fromkeys(table["metric"]))
    fig = Figure(figsize=(4.0 * len(metrics), 3.4), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, metric in zip(axes, metrics, strict=True):
        rows = table[table["metric"] == metric]
        ref = float(rows.iloc[0]["mean"])
        ax.axhspan(ref * (1 - result.tolerance), ref * (1 + result.tolerance), color="0.88",
                   label=f"±{result.tolerance:.0%} of shrink {result.reference:g}")  # fmt: skip
        errors = rows["c95"].fillna(0.0)
        colors = ["tab:blue" if h else "tab:red" for h in rows["holds"]]
        ax.errorbar(rows["speedup"], rows["mean"], yerr=errors, fmt="-", color="0.4", capsize=3)
        ax.scatter(rows["speedup"], rows["mean"], c=colors, zorder=3)
        ax.axvline(
            TimeScale(result.limit).speedup, color="tab:green", ls="--", label=f"limit {result.limit:g}"
        )
        ax.set_xscale("log")
        ax.set_xlabel("speed-up 1 / (1 - shrink)")
        ax.set_ylabel(axis_label(metric))
        ax.legend(fontsize="x-small")
    fig.suptitle(title or f"Metrics against speed-up: limit shrink {result.limit:g}")
    out.parent.mkdir(parents=True, exist_ok=True)
    return save_figure(fig, out, formats)


def text_table(result: ShrinkLimit) -> str:
    """One line per shrink: each metric's mean ± C95 and relative gap, and the wall time."""
    lines = [f"reference shrink {result.reference:g}, tolerance {result.tolerance:.1%}"]
    for shrink, rows in result.table.groupby("shrink", sort=True):
        cells = []
        for r in rows.itertuples():
            c95 = "" if r.c95 != r.c95 else f" ±{r.c95:.3g}"  # NaN: a single repetition
            mark = "" if r.holds else " !"
            cells.append(f"{r.metric} {r.mean:.4g}{c95} ({r.rel_diff:+.1%}){mark}")
        first = rows.iloc[0]
        lines.append(
            f"shrink {shrink:g} (x{first['speedup']:.0f}, {first['wall_s']:.0f} s): " + "; ".join(cells)
        )
    lines.append(f"limit: shrink {result.limit:g} (speed-up x{TimeScale(result.limit).speedup:.0f})")
    return "\n".join(lines)


def write_limit(
    result: ShrinkLimit, out_dir: Path, title: str = "", formats: Sequence[str] = DEFAULT_FIGURE_FORMATS
) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json(out_dir / JSON_NAME, result.as_dict())
    result.table.to_csv(out_dir / CSV_NAME, index=False)
    return [out_dir / JSON_NAME, out_dir / CSV_NAME, plot_limit(result, out_dir / PLOT_NAME, title, formats)]
