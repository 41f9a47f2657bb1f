"""``harness compare RUN...``: metrics of several run directories side by side."""

from __future__ import annotations

import json
from pathlib import Path

import click

from harness.cli.options import HarnessCommand, json_option, output_option
from harness.cli.output_options import force_option
from harness.model.checks import InputError
from harness.model.outputs import CHART, check_output

PLOT_FORMATS = (".png", ".pdf", ".svg")  # what the chart is saved as, by its name


@click.command(
    "compare",
    cls=HarnessCommand,
    renamed={"--plot": "--output"},
    examples=[
        "harness compare runs/A runs/B",
        "harness compare runs/A runs/B -m mean_wait -o ratios.png --json",
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
@output_option("Also write a bar chart of the ratios to the baseline to this PNG file.", dir_okay=False)
@json_option
@force_option
def compare_command(
    runs: tuple[Path, ...],
    baseline: str,
    metrics: tuple[str, ...],
    output: Path | None,
    as_json: bool,
    force: bool,
) -> None:
    """Compare the metrics of run directories, normalised to a baseline run.

    A run with repetitions shows the mean over them with its 95 % half-width (AVE ± C95).
    """
    # Imported here: pandas would otherwise slow `harness --help` down; matplotlib only for --plot.
    from harness.analysis.compare import DEFAULT_METRICS, compare_runs, comparison_to_dict, format_table

    if output is not None and output.suffix.lower() not in PLOT_FORMATS:
        raise InputError(
            f"a chart is written as {', '.join(PLOT_FORMATS)}; got {output.name!r}", where="--output"
        )
    if output is not None:
        check_output(output, CHART, force=force)
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
        from harness.analysis.plots import plot_comparison
        from harness.model.atomic import OutputError

        try:
            plot_comparison(df, plot_path)
        except OutputError as exc:
            raise click.ClickException(str(exc)) from None
        # stderr keeps --json output parseable.
        click.echo(f"plot written to {plot_path}", err=True)
