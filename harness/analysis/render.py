"""The report's document rendered as Markdown and as self-contained HTML."""

from __future__ import annotations

import html
from collections.abc import Sequence

from harness.analysis.document import Banner, Block, Image, Section


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
        # A PDF is no image to a Markdown viewer or a browser's <img>: linked instead.
        shown = f"[{block.alt} (PDF)]({block.path})" if _is_pdf(block) else f"![{block.alt}]({block.path})"
        return [shown, "", f"*{block.caption}*"]
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
        if _is_pdf(block):
            img = f'<a href="{html.escape(block.path)}">{html.escape(block.alt)} (PDF)</a>'
        return f"<figure>{img}<figcaption>{html.escape(block.caption)}</figcaption></figure>"
    head = "".join(f"<th>{html.escape(h)}</th>" for h in block.headers)
    rows = []
    for i, row in enumerate(block.rows):
        attrs = ""
        entry = block.data[i] if block.data else None
        if entry:
            key, raw = entry
            attrs = f' data-metric="{html.escape(key)}" data-value="{html.escape(raw)}"'
        cells = "".join(f"<td{_num_class(c)}>{_html_text(c)}</td>" for c in row)
        rows.append(f"<tr{attrs}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _is_pdf(image: Image) -> bool:
    return image.path.lower().endswith(".pdf")


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
