"""``harness compare RUN...``: metrics of several run directories side by side."""

from __future__ import annotations

import json
from pathlib import Path

import click

from harness.cli.options import HarnessCommand, json_option, output_option
from harness.cli.output_options import figure_format_option, force_option
from harness.model.checks import InputError
from harness.model.outputs import CHART, check_output

PLOT_FORMATS = (".png", ".pdf", ".svg")  # what the chart is saved as, by its name or --format


@click.command(
    "compare",
    cls=HarnessCommand,
    renamed={"--plot": "--output"},
    examples=[
        "harness compare runs/A runs/B",
        "harness compare runs/A runs/B -m mean_wait -o ratios.png --json",
        "harness compare runs/A runs/B -o figures/ratios --format pdf,svg",
    ],
)
@click.argument(
    "runs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@click.option(
    "--baseline",
    default="0",
    show_default=True,
    help="The run the others are divided by: its position among RUN (0-based), run id or policy.",
)
@click.option(
    "--metric",
    "-m",
    "metrics",
    multiple=True,
    help="Metric key of metrics.json to compare (repeatable; default: waits, turnaround, slowdowns, "
    "makespan and utilisations).",
)
@output_option(
    "Also write a bar chart of the ratios to the baseline to this file (.png, .pdf or .svg; with "
    "--format, this name in each format).",
    dir_okay=False,
)
@figure_format_option(None, "the suffix of -o")
@json_option
@force_option
def compare_command(
    runs: tuple[Path, ...],
    baseline: str,
    metrics: tuple[str, ...],
    output: Path | None,
    figure_formats: tuple[str, ...] | None,
    as_json: bool,
    force: bool,
) -> None:
    """Compare the metrics of run directories, normalised to a baseline run.

    A run with repetitions shows the mean over them with its 95 % half-width (AVE ± C95).
    """
    # Imported here: pandas would otherwise slow `harness --help` down; matplotlib only for --plot.
    from harness.analysis.compare import DEFAULT_METRICS, compare_runs, comparison_to_dict, format_table

    if figure_formats is not None and output is None:
        raise InputError("a figure format needs -o, the file the chart is written to", where="--format")
    if output is not None and figure_formats is None and output.suffix.lower() not in PLOT_FORMATS:
        raise InputError(
            f"a chart is written as {', '.join(PLOT_FORMATS)}; got {output.name!r}", where="--output"
        )
    if output is not None:
        from harness.analysis.figures import figure_paths

        for path in figure_paths(output, figure_formats or (output.suffix.lower().lstrip("."),)):
            check_output(path, CHART, force=force)  # each file written, in its own format
    metrics = tuple(dict.fromkeys(metrics))  # -m X -m X is X once
    try:
        df = compare_runs(
            list(runs), baseline=baseline, metrics=metrics or DEFAULT_METRICS, strict=bool(metrics)
        )
    except (ValueError, json.JSONDecodeError) as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(json.dumps(comparison_to_dict(df), indent=2))
    else:
        click.echo(format_table(df))
    plot_path = output
    if plot_path is not None:
        from harness.analysis.figures import figure_paths
        from harness.analysis.plots import plot_comparison
        from harness.model.atomic import OutputError

        formats = figure_formats or (plot_path.suffix.lower().lstrip("."),)
        try:
            plot_comparison(df, plot_path, formats)
        except OutputError as exc:
            raise click.ClickException(str(exc)) from None
        # stderr keeps --json output parseable.
        written = ", ".join(str(p) for p in figure_paths(plot_path, formats))
        click.echo(f"plot written to {written}", err=True)
