"""The report's tiny document model: sections of text, tables, banners and images, rendered as
Markdown and HTML by :mod:`harness.analysis.render`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass
class Table:
    headers: list[str]
    rows: list[list[str]]
    # Per row, (metric key, raw JSON value): kept as data attributes in the HTML.
    data: Sequence[tuple[str, str] | None] | None = None


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
