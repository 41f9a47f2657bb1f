"""The one way a figure of the tool is saved: in every format a researcher asked for.

A plot is drawn once and written as ``NAME.png``, ``NAME.pdf`` and/or ``NAME.svg`` beside
each other (``--format png,pdf,svg``). Reports embed one of them: a PNG, else an SVG (both
show in a browser and in Markdown viewers), else the PDF, which the report links to.

matplotlib is not imported here (the figure comes drawn), so the command line may read the
format names without paying for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.model.atomic import atomic_savefig

FIGURE_FORMATS: tuple[str, ...] = ("png", "pdf", "svg")
DEFAULT_FIGURE_FORMATS: tuple[str, ...] = ("png",)  # what every report wrote before --format
# Which written format a report shows, best first: raster and vector formats a browser draws.
EMBEDDABLE = ("png", "svg", "pdf")


def shown_format(formats: Sequence[str]) -> str:
    """The format among ``formats`` that a report embeds."""
    for fmt in EMBEDDABLE:
        if fmt in formats:
            return fmt
    raise ValueError(f"no figure format among {list(formats)} (known: {', '.join(FIGURE_FORMATS)})")


def figure_paths(out: Path, formats: Sequence[str]) -> list[Path]:
    """Where a figure named like ``out`` is written in each format: a figure suffix of ``out``
    (``.png``) is replaced, any other dot kept (``mean_wait-by-x.y`` is a name, not a suffix)."""
    out = Path(out)
    stem = out.stem if out.suffix.lstrip(".").lower() in FIGURE_FORMATS else out.name
    return [out.with_name(f"{stem}.{fmt}") for fmt in formats]


def save_figure(fig: Any, out: Path, formats: Sequence[str] = DEFAULT_FIGURE_FORMATS) -> Path:
    """Write ``fig`` as ``out`` in each of ``formats`` (``out``'s own suffix is replaced);
    return the path a report embeds (:func:`shown_format`)."""
    unknown = [f for f in formats if f not in FIGURE_FORMATS]
    if unknown or not formats:
        raise ValueError(f"figure formats are {', '.join(FIGURE_FORMATS)}; got {list(formats)}")
    paths = figure_paths(out, formats)
    for path in paths:
        atomic_savefig(fig, path)
    return paths[list(formats).index(shown_format(formats))]
