"""Render the report document through Jinja2 templates (wizard/templates/report.*.j2).

HTML is autoescaped; what the targets sent is also cleaned of escape sequences and controls
(`safetext.html_text`), so every value is escaped the same way it always was. Markdown has no
autoescape of its own: every value goes through an explicit filter (`code` for a code span,
`fence` for a verbatim block) and anything printed without one is Markdown-escaped
(`safetext.markdown`) by the environment's finalizer, so a template cannot forget.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from wizard import safetext
from wizard.report_records import ReportDoc

TEMPLATES = Path(__file__).with_name("templates")

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.2em auto;
 max-width:76em;padding:0 1em;color:#1d1d1f}
h1{font-size:1.4em;margin:.2em 0}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;
 margin-top:1.4em}
table{border-collapse:collapse;margin:.6em 0}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums}
pre{background:#f6f6f6;padding:.6em;overflow:auto;font-size:12px}code{font-size:12px}
.st{font-weight:600;padding:0 .3em;border-radius:3px}
.st-pass{background:#d9f2dc}.st-benign,.st-fixed{background:#e3eefc}.st-unknown{background:#eee}
.st-warn{background:#fff0c2}.st-fail{background:#f9d2d0}.st-none{background:#fff}
.verdict{font-size:1.15em;padding:.4em .6em;border-radius:4px}
.verdict.ok{background:#d9f2dc}.verdict.bad{background:#f9d2d0}
.banner{background:#fff0c2;border:1px solid #e0c060;padding:.5em}.note{color:#555}
svg text{font:11px system-ui,sans-serif}
"""


class _Md(str):
    """Text already made safe for Markdown by a filter."""

    __slots__ = ()


def _md_finalize(value: Any) -> str:
    if isinstance(value, _Md):
        return value
    return safetext.markdown("" if value is None else value)


def _md_code(value: Any) -> _Md:
    """A code span: no backtick can close it, no `|` breaks the table cell, one line."""
    s = safetext.clean(value).replace("`", "'").replace("|", "\\|")
    return _Md("`" + " ".join(s.splitlines()) + "`")


def _md_fence(value: Any, lang: str = "") -> _Md:
    return _Md("\n".join(safetext.code_block(value, lang or "")))


def _md_upper(value: Any) -> _Md:
    return _Md(safetext.markdown(str(value).upper()))


def _html_finalize(value: Any) -> Markup:
    if isinstance(value, Markup):
        return value
    return Markup(safetext.html_text("" if value is None else value))  # noqa: S704


@cache
def _markdown_env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=False,  # noqa: S701  Markdown: escaped by the finalizer and the filters
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        finalize=_md_finalize,
    )
    env.filters.update(code=_md_code, fence=_md_fence, upper=_md_upper)
    return env


@cache
def _html_env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        finalize=_html_finalize,
    )
    return env


def render_markdown(doc: ReportDoc) -> str:
    text = _markdown_env().get_template("report.md.j2").render(doc=doc)
    return text.rstrip("\n") + "\n"


def render_html(doc: ReportDoc) -> str:
    from wizard.report_svg import charts_for, fabric_map_for

    page = (
        _html_env()
        .get_template("report.html.j2")
        .render(
            doc=doc,
            css=Markup(CSS),  # noqa: S704  our own constant
            charts=charts_for(doc.data),
            fabric_map=fabric_map_for(doc.data),
        )
    )
    return page.rstrip("\n") + "\n"


__all__ = ["CSS", "render_html", "render_markdown"]
