"""One self-contained HTML page holding the whole report.

Tables are HTML, figures are PNG images embedded as ``data:image/png;base64`` URIs, the style
sheet is inline: the page references no external file, script or font, and carries no date, so
the same runs always give the same bytes.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

__all__ = ["SUMMARY_WIDTH", "HtmlFigure", "render_html", "split_columns"]

_CSS = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 1.6em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; }
th { background: #f0f0f0; } td:first-child, th:first-child { text-align: left; }
dl { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; }
dt { font-weight: bold; } dd { margin: 0; }
figure { margin: 1.2em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #444; max-width: 900px; }
.scroll { overflow-x: auto; }
"""


@dataclass(frozen=True)
class HtmlFigure:
    """A figure of the page: anchor/file stem, title, caption and PNG bytes."""

    stem: str
    title: str
    caption: str
    png: bytes


#: Most metric columns of one summary table: wider summaries are split into several tables,
#: each repeating the identifying columns, so that each fits a 1400-pixel page.
SUMMARY_WIDTH = 8


def split_columns(table: pd.DataFrame, width: int) -> list[pd.DataFrame]:
    """``table`` as tables of at most ``width`` metric columns each, every one starting with
    the identifying columns (the leading text columns up to and including ``seeds``, or the
    first column).

    Examples
    --------
    >>> t = pd.DataFrame({"arch": ["a"], "seeds": ["1"], **{f"m{i}": ["1"] for i in range(5)}})
    >>> [list(p.columns) for p in split_columns(t, 3)]
    [['arch', 'seeds', 'm0', 'm1', 'm2'], ['arch', 'seeds', 'm3', 'm4']]
    """
    cols = list(table.columns)
    ids = cols[: cols.index("seeds") + 1] if "seeds" in cols else cols[:1]
    rest = [c for c in cols if c not in ids]
    if len(rest) <= width:
        return [table]
    return [table[ids + rest[i : i + width]] for i in range(0, len(rest), width)]


def _table_html(table: pd.DataFrame) -> str:
    return table.to_html(index=False, border=0, escape=True, na_rep="-")


def render_html(
    title: str,
    header: Mapping[str, str],
    summary: pd.DataFrame,
    figures: Sequence[HtmlFigure],
    *,
    extra_tables: Mapping[str, pd.DataFrame] | None = None,
    definitions: Mapping[str, str] | None = None,
) -> str:
    """The report page: title, header facts, summary table (and what each of its columns
    means, ``definitions``), figures, further tables.

    Examples
    --------
    >>> page = render_html("demo", {"runs": "1"}, pd.DataFrame({"a": ["1"]}),
    ...                    [HtmlFigure("f", "F", "cap", b"\\x89PNG")])
    >>> 'src="data:image/png;base64,iVBORw==' in page, "http" in page
    (True, False)
    """
    esc = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>{esc(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>{esc(title)}</h1>",
        "<dl>",
    ]
    for k, v in header.items():
        parts.append(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>")
    parts += ["</dl>", "<h2>Summary</h2>"]
    for part in split_columns(summary, SUMMARY_WIDTH):
        parts += ['<div class="scroll">', _table_html(part), "</div>"]
    if definitions:
        parts.append('<details open><summary>Columns</summary><dl class="columns">')
        parts += [f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in definitions.items()]
        parts.append("</dl></details>")
    if figures:
        parts.append("<h2>Figures</h2>")
        parts.append(
            "<ul>"
            + "".join(f'<li><a href="#{esc(f.stem)}">{esc(f.title)}</a></li>' for f in figures)
            + "</ul>"
        )
    for f in figures:
        data = base64.b64encode(f.png).decode("ascii")
        parts += [
            f'<figure id="{esc(f.stem)}">',
            f'<img alt="{esc(f.title)}" src="data:image/png;base64,{data}">',
            f"<figcaption><b>{esc(f.title)}.</b> {esc(f.caption)}</figcaption>",
            "</figure>",
        ]
    for name, table in (extra_tables or {}).items():
        parts += [
            f"<h2>{esc(name)}</h2>",
            '<details><summary>show</summary><div class="scroll">',
            _table_html(table),
            "</div></details>",
        ]
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)
