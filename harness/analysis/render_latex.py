"""The report's document as a LaTeX fragment, for ``\\input`` into a paper.

Every table becomes a ``tabular`` (numbers right-aligned, text left), every text a paragraph
and every image a ``figure`` with ``\\includegraphics`` (the preamble needs ``graphicx``;
``booktabs`` for the rules). The same blocks as the Markdown and HTML renderings
(:mod:`harness.analysis.render`), so the three say the same.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness.analysis.blocks import Banner, Block, Image, Section, Table

# LaTeX's special characters and what prints them; the backslash first in the pattern's
# alternation does not matter, since every character is replaced in one pass.
ESCAPES = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}  # fmt: skip
SPECIAL = re.compile("|".join(re.escape(c) for c in ESCAPES))
NUMBER = re.compile(r"[-+]?(\d[\d,]*)?\.?\d+(e[-+]?\d+)?")


def escape(text: str) -> str:
    """Text that LaTeX prints as it is (``mean_wait`` -> ``mean\\_wait``, ``5 %`` -> ``5 \\%``)."""
    return SPECIAL.sub(lambda m: ESCAPES[m.group(0)], text)


def inline(text: str) -> str:
    """Escaped text with the reports' Markdown spans: `code` in typewriter, **bold** in bold."""
    parts = text.split("`")
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(r"\texttt{" + escape(part) + "}")
        else:
            bold = part.split("**")
            out.append(
                "".join(r"\textbf{" + escape(b) + "}" if j % 2 else escape(b) for j, b in enumerate(bold))
            )
    return "".join(out)


def column_spec(table: Table) -> str:
    """``r`` for a column whose every cell is a number (or empty, ``n/a``, ``-``), else ``l``."""
    spec = []
    for k in range(len(table.headers)):
        cells = [row[k].strip() for row in table.rows if k < len(row)]
        numeric = bool(cells) and all(c in ("", "n/a", "-") or NUMBER.fullmatch(c) for c in cells)
        spec.append("r" if numeric else "l")
    return "".join(spec)


def render_table(table: Table) -> list[str]:
    """One ``tabular``; a row shorter than the header is padded, so every row has the spec's columns."""
    width = len(table.headers)
    lines = [r"\begin{tabular}{" + column_spec(table) + "}", r"\toprule"]
    if any(h.strip() for h in table.headers):  # a key-value table has no header row
        lines += [" & ".join(inline(h) for h in table.headers) + r" \\", r"\midrule"]
    for row in table.rows:
        cells = [inline(c) for c in row[:width]] + [""] * (width - len(row))
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return lines


def _block(block: Block) -> list[str]:
    if isinstance(block, str):
        return [inline(block)]
    if isinstance(block, Banner):
        return [r"\textbf{" + inline(block.text) + "}"]
    if isinstance(block, Image):
        return [r"\begin{figure}[htbp]", r"\centering",
                r"\includegraphics[width=\linewidth]{" + block.path + "}",
                r"\caption{" + inline(block.caption) + "}", r"\end{figure}"]  # fmt: skip
    return [r"\begin{center}", *render_table(block), r"\end{center}"]


def render_latex(title: str, sections: Sequence[Section]) -> str:
    lines = [f"% {title}: written by harness; needs \\usepackage{{booktabs,graphicx}}", ""]
    for section in sections:
        lines += [r"\section*{" + inline(section.title) + "}", ""]
        for block in section.blocks:
            lines += [*_block(block), ""]
    return "\n".join(lines)
