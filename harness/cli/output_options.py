"""Options of what a command writes: figure and table formats, the metrics shown, and
``--force``.

``--format`` takes a comma list (``png,pdf,svg``); every figure the command writes goes
through :func:`harness.analysis.figures.save_figure` in each format named. ``--force`` is the
one option that lets a command replace a file (or write into a folder) of another kind than it
writes; the check itself is :mod:`harness.model.outputs`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from harness.analysis.figures import DEFAULT_FIGURE_FORMATS, FIGURE_FORMATS
from harness.model import checks

F = TypeVar("F", bound=Callable[..., Any])


class ChoiceListType(click.ParamType):
    """A comma-separated list of known words, each once: ``png,pdf``."""

    name = "list"

    def __init__(self, allowed: Sequence[str]) -> None:
        self.allowed = tuple(allowed)

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return ",".join(self.allowed[:2]) + ",..."

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[str, ...]:
        if isinstance(value, tuple):  # the default, already a list
            return value
        try:
            return checks.choices(value, self.allowed, "")
        except checks.InputError as exc:
            self.fail(str(exc), param, ctx)


FIGURE_FORMAT_LIST = ChoiceListType(FIGURE_FORMATS)


def figure_format_option(
    default: Sequence[str] | None = DEFAULT_FIGURE_FORMATS, why_default: str = ""
) -> Callable[[F], F]:
    """``--format png,pdf,svg``: every figure in each format named; ``None`` as the default
    lets the command decide (``why_default`` says how, in the help)."""
    shown = f" [default: {why_default}]" if default is None else ""
    return click.option(
        "--format",
        "figure_formats",
        type=FIGURE_FORMAT_LIST,
        default=",".join(default) if default is not None else None,
        show_default=default is not None,
        help=f"Figure formats, a comma list of {', '.join(FIGURE_FORMATS)}: each figure is written in "
        f"every one (a report embeds the PNG, else the SVG, and links a PDF).{shown}",
    )


def report_format_option(func: F) -> F:
    """``--format`` of an experiment's report: text formats and figure formats in one list."""
    from harness.experiments.report_options import DEFAULT_TEXT_FORMATS, REPORT_FORMATS

    default = (*DEFAULT_TEXT_FORMATS, *DEFAULT_FIGURE_FORMATS)
    return click.option(
        "--format",
        "report_formats",
        type=ChoiceListType(REPORT_FORMATS),
        default=",".join(default),
        show_default=True,
        help="What to write, a comma list: md, html (the report), csv (its statistics in full "
        "precision, report.csv), latex (its tables as tabulars, report.tex), and the figure formats "
        f"{', '.join(FIGURE_FORMATS)}. A kind not named keeps its default (--format pdf: md, html, PDF).",
    )(func)


def metrics_option(help_text: str, name: str = "metrics") -> Callable[[F], F]:
    """``--metrics m1,m2`` (or ``--NAME``): names of :data:`harness.model.metric_names.METRIC_SPECS`."""
    from harness.model.metric_names import METRIC_SPECS

    return click.option(
        f"--{name}",
        name,
        type=ChoiceListType(list(METRIC_SPECS)),
        default=None,
        metavar="METRIC,...",
        help=f"{help_text} A wrong name lists the valid ones (harness/model/metric_names.py).",
    )


FORCE_HELP = (
    "Replace an existing output of another kind (a trace, a platform file, a run directory...); "
    "without it such an output is refused and nothing is written."
)


def force_option(func: F) -> F:
    return click.option("--force", is_flag=True, help=FORCE_HELP)(func)
