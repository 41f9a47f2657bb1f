"""What ``harness experiment report`` writes: the formats of its text and figures, the metrics
shown and the axis pooled over. Imports nothing heavy: the command line reads the names."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.analysis.figures import DEFAULT_FIGURE_FORMATS, FIGURE_FORMATS

# md and html: the whole report; csv: the statistics table in full precision; latex: the whole
# report's tables as tabulars (report.tex).
TEXT_FORMATS: tuple[str, ...] = ("md", "html", "csv", "latex")
DEFAULT_TEXT_FORMATS: tuple[str, ...] = ("md", "html")
REPORT_FORMATS: tuple[str, ...] = (*TEXT_FORMATS, *FIGURE_FORMATS)


@dataclass(frozen=True)
class ReportOptions:
    text_formats: tuple[str, ...] = DEFAULT_TEXT_FORMATS
    figure_formats: tuple[str, ...] = DEFAULT_FIGURE_FORMATS
    metrics: tuple[str, ...] = ()  # empty: the experiment file's [report] metrics
    over: str | None = None  # an axis whose values are pooled (besides the repetitions)
    rank: tuple[str, ...] = ()  # metrics the settings combinations are ranked by (--rank)

    @classmethod
    def from_formats(
        cls,
        formats: Sequence[str],
        metrics: Sequence[str] = (),
        over: str | None = None,
        rank: Sequence[str] = (),
    ) -> ReportOptions:
        """Split one ``--format`` list into text and figure formats; a kind not named keeps
        its default (``--format pdf`` is md, html and PDF figures; ``--format csv``, a CSV and
        PNG figures)."""
        text = tuple(f for f in formats if f in TEXT_FORMATS) or DEFAULT_TEXT_FORMATS
        figures = tuple(f for f in formats if f in FIGURE_FORMATS) or DEFAULT_FIGURE_FORMATS
        return cls(text, figures, tuple(metrics), over, tuple(rank))


DEFAULT_REPORT = ReportOptions()  # md, html and PNG figures of the file's metrics
