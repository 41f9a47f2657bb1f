"""Outputs for a paper: figures in several formats, the experiment report's pooled statistics,
its metric selection, and its CSV and LaTeX renderings (issue #34, item 7)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from matplotlib.figure import Figure

from harness.analysis.blocks import Section, Table
from harness.analysis.figures import figure_paths, save_figure
from harness.analysis.job_plots import tail_curve
from harness.analysis.render_latex import escape, render_latex
from harness.analysis.series import bb_layout
from harness.cli import main
from harness.experiments.report_data import ExperimentData
from harness.experiments.report_options import ReportOptions
from harness.experiments.report_pooled import pooled_table
from harness.model.checks import InputError, choices

# -- figures ----------------------------------------------------------------------------------


def small_figure() -> Figure:
    fig = Figure(figsize=(2, 2))
    fig.add_subplot().plot([0, 1], [1, 0])
    return fig


def test_a_figure_as_pdf_and_svg_gives_files_that_parse(tmp_path: Path) -> None:
    shown = save_figure(small_figure(), tmp_path / "gantt.png", ("pdf", "svg"))
    pdf, svg = tmp_path / "gantt.pdf", tmp_path / "gantt.svg"
    assert pdf.read_bytes().startswith(b"%PDF-")
    assert ET.parse(svg).getroot().tag == "{http://www.w3.org/2000/svg}svg"
    assert not (tmp_path / "gantt.png").exists()  # only the formats asked for
    assert shown == svg  # a report embeds the SVG when there is no PNG


def test_the_report_embeds_the_png_else_the_svg_else_the_pdf(tmp_path: Path) -> None:
    assert save_figure(small_figure(), tmp_path / "a", ("pdf", "png")) == tmp_path / "a.png"
    assert save_figure(small_figure(), tmp_path / "b", ("pdf",)) == tmp_path / "b.pdf"
    assert (tmp_path / "a.png").read_bytes().startswith(b"\x89PNG")


def test_a_dot_in_a_figure_name_is_kept_and_a_figure_suffix_replaced() -> None:
    assert figure_paths(Path("p/wait-by-x.y"), ("png",)) == [Path("p/wait-by-x.y.png")]
    assert figure_paths(Path("p/ratios.png"), ("pdf", "svg")) == [Path("p/ratios.pdf"), Path("p/ratios.svg")]


def test_an_unknown_figure_format_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="png, pdf, svg"):
        save_figure(small_figure(), tmp_path / "a", ("jpg",))


def test_a_comma_list_keeps_order_drops_repeats_and_names_the_valid_words() -> None:
    assert choices(" pdf,png,pdf ", ("png", "pdf", "svg"), "--format") == ("pdf", "png")
    with pytest.raises(
        InputError, match=r"^--format: unknown 'jpeg' \(did you mean 'jpg'\?\) \(valid: jpg, svg\)$"
    ):
        choices("jpeg", ("jpg", "svg"), "--format")
    with pytest.raises(InputError, match="a comma-separated list"):
        choices(" , ", ("png",), "--format")


def test_report_formats_split_into_text_and_figures_each_kind_keeping_its_default() -> None:
    assert ReportOptions.from_formats(("pdf",)).text_formats == ("md", "html")
    assert ReportOptions.from_formats(("pdf",)).figure_formats == ("pdf",)
    both = ReportOptions.from_formats(("csv", "svg", "latex"))
    assert (both.text_formats, both.figure_formats) == (("csv", "latex"), ("svg",))
    assert ReportOptions.from_formats(("latex",)).figure_formats == ("png",)


# -- LaTeX ------------------------------------------------------------------------------------


def tabulars(tex: str) -> list[tuple[str, list[str]]]:
    """Each tabular's column spec and its rows (rules left out); fails on unbalanced environments."""
    depth: list[str] = []
    for m in re.finditer(r"\\(begin|end)\{(\w+)\}", tex):
        if m.group(1) == "begin":
            depth.append(m.group(2))
        else:
            assert depth and depth.pop() == m.group(2), f"unbalanced \\end{{{m.group(2)}}}"
    assert not depth, f"unclosed {depth}"
    found = []
    for m in re.finditer(r"\\begin\{tabular\}\{([lrc]+)\}(.*?)\\end\{tabular\}", tex, re.S):
        rows = [r.strip() for r in m.group(2).split("\\\\") if r.strip()]
        rows = [re.sub(r"\\(top|mid|bottom)rule", "", r).strip() for r in rows]
        found.append((m.group(1), [r for r in rows if r]))
    return found


def cells(row: str) -> list[str]:
    return re.split(r"(?<!\\)&", row)


def test_latex_escapes_every_special_character() -> None:
    assert escape("mean_wait 5 % & $1 #2 {x} ~ ^ \\") == (
        r"mean\_wait 5 \% \& \$1 \#2 \{x\} \textasciitilde{} \textasciicircum{} \textbackslash{}"
    )


def test_latex_tables_are_valid_tabulars_with_escaped_text() -> None:
    table = Table(["policy", "RSD %", "mean_wait"], [["fcfs_1", "74.50", "8352.56"], ["a&b", "n/a", "-"]])
    tex = render_latex("T", [Section("Pooled over period", ["**Mean wait** (`mean_wait`)", table])])
    [(spec, rows)] = tabulars(tex)
    assert spec == "lrr"  # text left, numbers (and n/a, -) right
    assert all(len(cells(r)) == len(spec) for r in rows)
    assert rows == [r"policy & RSD \% & mean\_wait", r"fcfs\_1 & 74.50 & 8352.56", r"a\&b & n/a & -"]
    assert r"\textbf{Mean wait} (\texttt{mean\_wait})" in tex
    body = re.sub(r"\\[A-Za-z]+|\\.", "", tex.split("\n", 1)[1])  # commands and escapes removed
    # No bare _ or % is left (a % would comment out the rest of a line); every bare & is a column
    # separator, counted above.
    assert "_" not in body and "%" not in body


def test_a_short_row_is_padded_to_the_spec() -> None:
    [(spec, rows)] = tabulars(render_latex("T", [Section("S", [Table(["a", "b", "c"], [["1"]])])]))
    assert spec == "rll" and len(cells(rows[1])) == 3


# -- pooled statistics, by hand --------------------------------------------------------------

# mean_wait of policies A and B on two periods, two repetitions each (tests/unit/test_experiments_stats.py).
WAIT = {
    ("A", 1, 0): 10.0, ("A", 1, 1): 20.0, ("A", 2, 0): 40.0, ("A", 2, 1): 40.0,
    ("B", 1, 0): 5.0, ("B", 1, 1): 30.0, ("B", 2, 0): 20.0, ("B", 2, 1): 80.0,
}  # fmt: skip


def experiment(tmp_path: Path) -> ExperimentData:
    rows = []
    for (policy, period, rep), wait in WAIT.items():
        axes = {
            "key": f"{policy}{period}{rep}",
            "policy": policy,
            "period": period,
            "bb_seed": 2020,
            "rep": rep,
        }
        rows.append({**axes, "metric": "mean_wait", "value": wait, "seconds": 1.0, "host": "h"})
    return ExperimentData(tmp_path, {"report": {"metrics": ["mean_wait"]}}, pd.DataFrame(rows), [], {})


def test_pooling_over_periods_by_hand(tmp_path: Path) -> None:
    t = pooled_table(experiment(tmp_path), ["mean_wait"], over="period").set_index("policy")
    assert list(t.columns) == ["metric", "n", "AVE", "SSD", "RSD", "C95"]  # period and rep pooled away
    # A: 10, 20, 40, 40: mean 27.5; squared deviations 306.25 + 56.25 + 2 * 156.25 = 675, / 4 = 168.75
    assert (t.at["A", "n"], t.at["A", "AVE"]) == (4, 27.5)
    assert t.at["A", "SSD"] == pytest.approx(168.75**0.5)
    assert t.at["A", "RSD"] == pytest.approx(100 * 168.75**0.5 / 27.5)  # 47.24 %
    assert t.at["A", "C95"] == pytest.approx(3.182446 * 168.75**0.5 / 2, rel=1e-6)  # t(0.975, 3)
    # B: 5, 30, 20, 80: mean 33.75; squared deviations sum to 3168.75, / 4 = 792.1875
    assert t.at["B", "AVE"] == 33.75 and t.at["B", "SSD"] == pytest.approx(792.1875**0.5)


def test_without_over_only_the_repetitions_are_pooled(tmp_path: Path) -> None:
    t = pooled_table(experiment(tmp_path), ["mean_wait"])
    assert list(t.columns) == ["metric", "policy", "period", "n", "AVE", "SSD", "RSD", "C95"]
    a2 = t[(t["policy"] == "A") & (t["period"] == 2)].iloc[0]
    assert (a2["n"], a2["AVE"], a2["SSD"], a2["RSD"]) == (2, 40.0, 0.0, 0.0)


# -- the command, on a small simulated experiment ------------------------------------------

GRID = """
[workload]
trace = "bundled"
first_n = 60
periods = 2
[policies]
names = ["fcfs", "backfill-1"]
[experiment]
metrics = ["mean_wait", "mean_bsld"]
"""


@pytest.fixture(scope="module")
def exp_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("exp")
    (root / "exp.toml").write_text(GRID)
    res = CliRunner().invoke(main, ["experiment", "run", str(root / "exp.toml"), "-o", str(root / "out"),
                                    "-q", "--no-report"])  # fmt: skip
    assert res.exit_code == 0, res.output
    return root / "out"


def test_report_csv_loads_to_the_cells_numbers(exp_dir: Path) -> None:
    args = [
        "experiment",
        "report",
        str(exp_dir),
        "--over",
        "period",
        "--metrics",
        "mean_wait",
        "--format",
        "csv",
    ]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    csv = pd.read_csv(exp_dir / "report.csv").set_index("policy")
    cells = pd.read_parquet(exp_dir / "results.parquet")
    waits = cells[cells["metric"] == "mean_wait"].groupby("policy")["value"]
    assert list(csv.columns) == ["metric", "n", "AVE", "SSD", "RSD", "C95"]
    for policy, values in waits:
        assert csv.at[policy, "n"] == 2
        assert csv.at[policy, "AVE"] == pytest.approx(values.mean(), rel=1e-12)
        assert csv.at[policy, "SSD"] == pytest.approx(values.std(ddof=0), rel=1e-12)
    assert (exp_dir / "plots" / "mean_wait-by-period.png").exists()
    assert not (exp_dir / "plots" / "mean_bsld-by-period.png").exists()  # only the metrics named


def test_report_latex_and_pdf_figures(exp_dir: Path) -> None:
    res = CliRunner().invoke(
        main, ["experiment", "report", str(exp_dir), "--over", "period", "--format", "latex,pdf"]
    )
    assert res.exit_code == 0, res.output
    tex = (exp_dir / "report.tex").read_text()
    assert r"\section*{Pooled over period}" in tex and r"\includegraphics[width=\linewidth]{plots/" in tex
    for spec, rows in tabulars(tex):
        assert all(len(cells(r)) == len(spec) for r in rows), (spec, rows)
    written = [Path(line) for line in res.output.split()]
    pdfs = [p for p in written if p.suffix == ".pdf"]
    assert pdfs and all(p.read_bytes().startswith(b"%PDF") for p in pdfs)
    assert not any(p.suffix in (".md", ".html", ".png") for p in written)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--over", "offset"],
            "Error: --over: no axis 'offset' in this experiment (axes: policy, period, bb_seed)",
        ),
        (
            ["--metrics", "mean_dilation"],
            "Error: --metrics: not measured in this experiment: mean_dilation (measured: ",
        ),
        (
            ["--metrics", "mean_wiat"],
            "unknown 'mean_wiat' (did you mean 'mean_wait'?) (valid: jobs, mean_wait,",
        ),
        (["--format", "docx"], "unknown 'docx'"),
    ],
)
def test_bad_report_options_are_one_line_usage_errors(exp_dir: Path, args: list[str], message: str) -> None:
    res = CliRunner().invoke(main, ["experiment", "report", str(exp_dir), *args])
    assert res.exit_code == 2, res.output
    assert message in res.output and "Traceback" not in res.output


def test_compare_writes_its_chart_in_each_format(tmp_path: Path) -> None:
    runs = []
    for name, wait in (("r1", 100.0), ("r2", 50.0)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "manifest.json").write_text(json.dumps({"run_id": name, "policy": name}))
        (tmp_path / name / "metrics.json").write_text(json.dumps({"mean_wait": wait}))
        runs.append(str(tmp_path / name))
    out = tmp_path / "figs" / "ratios"
    out.parent.mkdir()
    res = CliRunner().invoke(
        main, ["compare", *runs, "-m", "mean_wait", "-o", str(out), "--format", "pdf,svg"]
    )
    assert res.exit_code == 0, res.output
    assert (tmp_path / "figs" / "ratios.pdf").read_bytes().startswith(b"%PDF")
    assert ET.parse(tmp_path / "figs" / "ratios.svg").getroot().tag.endswith("svg")
    res = CliRunner().invoke(main, ["compare", *runs, "--format", "pdf"])
    assert res.exit_code == 2 and "--format: a figure format needs -o" in res.output


def test_a_simulated_run_directory_in_svg_then_its_report_again_in_png(tmp_path: Path) -> None:
    out = tmp_path / "sim"
    args = ["simulate", "-p", "fcfs", "--first-n", "40", "-o", str(out), "bundled", "--format", "svg,pdf"]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    plots = sorted(p.name for p in (out / "plots").iterdir())
    assert "gantt.svg" in plots and "gantt.pdf" in plots and "gantt.png" not in plots
    assert "![gantt plot](plots/gantt.svg)" in (out / "report.md").read_text()
    res = CliRunner().invoke(main, ["runs", "report", str(out)])
    assert res.exit_code == 0, res.output
    assert str(out / "plots" / "gantt.png") in res.output.split()
    assert "![gantt plot](plots/gantt.png)" in (out / "report.md").read_text()
    res = CliRunner().invoke(main, ["runs", "report", str(tmp_path)])
    assert res.exit_code == 1 and "not a run directory (no manifest.json)" in res.output


# -- per-job plots: the layouts they draw, by hand -------------------------------------------


def test_tail_curve_is_the_share_at_or_above_each_value() -> None:
    x, share = tail_curve(np.array([0.0, 30.0, 0.5, 10.0]), floor=1.0)
    assert x.tolist() == [1.0, 1.0, 10.0, 30.0]  # waits under 1 s drawn at 1 s
    assert share.tolist() == [1.0, 0.75, 0.5, 0.25]


def test_bb_layout_stacks_jobs_in_the_room_left_and_splits_a_job_over_two_gaps() -> None:
    # job: (start, end, nodes, MB per node): A 0-10 holds 100, B 0-20 holds 200, C 5-15 holds 50,
    # D 12-30 holds 150: A has ended, so 100 go into A's room [0, 100) and 50 above C's [300, 350);
    # E has no burst buffer and is not drawn.
    jobs = pd.DataFrame({"job_id": [1, 2, 3, 4, 5], "start": [0.0, 0.0, 5.0, 12.0, 1.0],
                         "end": [10.0, 20.0, 15.0, 30.0, 2.0], "nodes": [1, 2, 1, 3, 4],
                         "bb_per_node_mb": [100.0, 100.0, 50.0, 50.0, 0.0]})  # fmt: skip
    layout = bb_layout(jobs)
    pieces = {(j, y0, y1) for j, y0, y1 in zip(layout["job_id"], layout["y0"], layout["y1"], strict=True)}
    assert pieces == {(1, 0.0, 100.0), (2, 100.0, 300.0), (3, 300.0, 350.0),
                      (4, 0.0, 100.0), (4, 350.0, 400.0)}  # fmt: skip
    # At t = 12 (A has ended) the pieces in use add up to the burst buffer held: B 200, C 50, D 150.
    at_12 = layout[(layout["start"] <= 12) & (layout["end"] > 12)]
    assert float((at_12["y1"] - at_12["y0"]).sum()) == 200 + 50 + 150


# -- simulate --shuffle --repeat --------------------------------------------------------------


def test_the_shuffled_orders_are_the_plans_prepare_makes() -> None:
    from harness.workload.plan import prepare, prepare_shuffled, resolve_input

    trace = resolve_input("bundled")
    orders = prepare_shuffled(trace, [7, 8], first_n=80)
    for seed, (plan, manifest) in zip((7, 8), orders, strict=True):
        alone, _ = prepare(trace, shuffle=True, shuffle_seed=seed, first_n=80)
        assert plan.equals(alone) and manifest["shuffle_seed"] == seed
    assert not orders[0][0]["job_id"].equals(orders[1][0]["job_id"])  # two orders of the same jobs
    assert sorted(orders[0][0]["job_id"]) == sorted(orders[1][0]["job_id"])


def test_simulate_repeat_pools_the_orders_and_the_first_is_shuffle_alone() -> None:
    base = ["simulate", "-p", "fcfs", "--first-n", "80", "bundled", "--json", "--shuffle"]
    one = json.loads(CliRunner().invoke(main, base).output)["fcfs"]
    res = CliRunner().invoke(main, [*base, "--repeat", "2"])
    assert res.exit_code == 0, res.output
    two = json.loads(res.output)["fcfs"]
    stats = two["repetitions"]["mean_wait"]
    assert two["n_repetitions"] == 2 and two["mean_wait"] == stats["AVE"]
    # Two values v0 (the --shuffle run alone: order 0, seed 2020) and v1: SSD (divisor n) = |v0 - AVE|.
    assert stats["SSD"] == pytest.approx(abs(one["mean_wait"] - stats["AVE"]))
    assert stats["SSD"] > 0  # the second order (seed 2021) scheduled differently
    assert stats["RSD"] == pytest.approx(100 * stats["SSD"] / stats["AVE"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--repeat", "2"], "it needs --shuffle"),
        (["--shuffle", "--repeat", "2", "-o", "x"], "--repeat writes no -o"),
    ],
)
def test_simulate_repeat_refuses_what_it_cannot_do(args: list[str], message: str) -> None:
    res = CliRunner().invoke(main, ["simulate", "-p", "fcfs", "--first-n", "20", "bundled", *args])
    assert res.exit_code == 2 and message in res.output


def test_a_pdf_figure_is_linked_not_embedded() -> None:
    from harness.analysis.blocks import Image
    from harness.analysis.render import render_html, render_markdown

    sections = [Section("Plots", [Image("plots/gantt.pdf", "gantt plot", "caption"),
                                  Image("plots/waits.svg", "waits plot", "caption")])]  # fmt: skip
    md, page = render_markdown("T", sections), render_html("T", sections)
    assert "[gantt plot (PDF)](plots/gantt.pdf)" in md and "![gantt plot" not in md
    assert "![waits plot](plots/waits.svg)" in md
    assert '<a href="plots/gantt.pdf">gantt plot (PDF)</a>' in page and '<img src="plots/waits.svg"' in page


def test_a_key_value_table_has_no_empty_header_row() -> None:
    [(spec, rows)] = tabulars(render_latex("T", [Section("S", [Table(["", ""], [["Mode", "simulate"]])])]))
    assert (spec, rows) == ("ll", ["Mode & simulate"])
