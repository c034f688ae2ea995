"""Parsers of real tool outputs: pure functions, text in, typed values out.

One module per tool. Every `parse_*` function takes the raw text and returns a frozen, slotted
dataclass, or raises `wizard.errors.ParseError` (and nothing else) when the text is not what it
parses. Results that describe a failed run (a perftest retry error, an NCCL run cut short) are
values, not exceptions: the flows judge them. `wizard.parsers.detect.detect` says which parser a
text belongs to; `wizard.parsers.common.to_jsonable` turns any result into plain JSON data.
"""
