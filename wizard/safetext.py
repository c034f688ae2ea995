"""Text from targets made safe to show: no terminal escapes, never read as markup.

Switch comments, interface names, probe output and error texts come from the targets. Shown as
they are, an escape sequence could move the cursor and repaint a fix preview, `[bold red]` would
be read as rich/Textual markup (or crash the print), and `<script>`, `](javascript:...)` or a `|`
would be read by a Markdown or HTML renderer. `clean` removes escape sequences (CSI, OSC, DCS and
the other ESC forms) and shows every other control character and bidirectional override as
U+FFFD, keeping newlines and tabs; the other helpers add the escaping of one output format on top.
Screens and reports call these wherever target text is rendered.
"""

from __future__ import annotations

import re

__all__ = ["clean", "code_block", "html_text", "markdown", "markup"]

REPLACEMENT = "\ufffd"
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI ... final byte
    r"|\x1b[\]PX^_].*?(?:\x07|\x1b\\|\x9c|$)"  # OSC / DCS / SOS / PM / APC ... terminator
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
    r"|[\x90\x9d-\x9f].*?(?:\x07|\x1b\\|\x9c|$)"  # 8-bit DCS / OSC / PM / APC
    r"|\x1b[ -/]*[0-~]?",  # the other ESC sequences (and a lone ESC)
    re.S,
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def clean(text: object) -> str:
    """`text` with escape sequences removed and other controls shown as U+FFFD."""
    s = "" if text is None else str(text)
    s = s.replace("\r\n", "\n")
    s = _ESCAPES.sub("", s)
    return _CONTROLS.sub(REPLACEMENT, s)


_TAG = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")  # what rich reads as a markup tag


def markup(text: object) -> str:
    """For rich console strings that carry markup of their own: the target text stays literal
    (the escaping rich's own `markup.escape` does, without importing rich here)."""

    def esc(m: re.Match[str]) -> str:
        backslashes, tag = m.groups()
        return f"{backslashes}{backslashes}\\{tag}"

    s = _TAG.sub(esc, clean(text))
    if s.endswith("\\") and not s.endswith("\\\\"):
        s += "\\"
    return s


_MD_SPECIAL = re.compile(r"([\\`*\[\]|~])")
_ENTITY = re.compile(r"&(?=#?\w+;)")


def markdown(text: object) -> str:
    """For Markdown prose and table cells: the characters that make emphasis, code, links or
    table cells are backslash-escaped, `<` (raw HTML) and `&` before an entity name become
    entities; newlines become `<br>`."""
    s = _MD_SPECIAL.sub(r"\\\1", clean(text))
    s = _ENTITY.sub("&amp;", s).replace("<", "&lt;")
    return "<br>".join(s.splitlines()) if "\n" in s else s


def markdown_cell(text: object) -> str:
    """For a Markdown table cell that may carry the report's own code spans: no raw HTML (`<`),
    no cell break (`|`), no control or escape sequence; newlines become `<br>`."""
    s = clean(text).replace("\\", "\\\\").replace("|", "\\|")
    s = _ENTITY.sub("&amp;", s).replace("<", "&lt;")
    return "<br>".join(s.splitlines())


def code_block(text: object, lang: str = "") -> list[str]:
    """A fenced Markdown code block the text cannot close early."""
    s = clean(text).rstrip("\n")
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + lang, s, fence]


def html_text(text: object) -> str:
    # `html` loads its entity tables (~4 ms) for `unescape`: only reports need it, not the TUI's
    # first screen
    import html

    return html.escape(clean(text), quote=True)
