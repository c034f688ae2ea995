"""RouterOS replies: API rows, raw API sentences, CLI `print` tables/detail/monitor, `/log`, `/export`.

Sample inputs it matches (real/routeros-api/, real/routeros-cli/, real/routeros-export/):

    {"data": [{".id": "*1", "name": "ether1", "running": false, "mtu": 1500}]}   librouteros rows
    !re / =.id=*1 / =running=yes / .tag=5 / !done                                  raw API words
    0 H ether2     bridge1  yes  none ...                                          v7 print table
     0  R  name="ether1" default-name="ether1" mtu=1500                            print detail
                      status: link-ok                                              monitor / resource
     07-10 06:42:50 bridge,info hardware offloading activated on bridge "bridge1"  /log print
    /interface ethernet switch qos port
    set qsfp28-1-1 egress-rate-queue3=100.0Gbps pfc=pfc-tc3 trust-l3=trust        /export

Values are typed the way librouteros does (tool-formats.md, "RouterOS"): `true`/`yes` -> True,
`false`/`no` -> False, digit strings -> int; `*HEX` ids stay strings. CLI numbers with space
thousands separators (`2 969 461 776 402`) become ints. Export items keep their raw strings.
"""

from __future__ import annotations

import re

from wizard.parsers.common import lines
from wizard.parsers.routeros_api import (
    parse_api_json,
    parse_api_python_repr,
    parse_api_rows,
    parse_api_sentences,
)
from wizard.parsers.routeros_cli import LOG_LINE, parse_cli, parse_log, prompt_path
from wizard.parsers.routeros_export import parse_export
from wizard.parsers.routeros_values import (
    TOOL,
    ExportItem,
    LogEntry,
    RosValue,
    RouterOsResult,
    RouterOsTrap,
    typed_row,
    typed_value,
)

__all__ = [
    "TOOL",
    "ExportItem",
    "LogEntry",
    "RosValue",
    "RouterOsResult",
    "RouterOsTrap",
    "parse_api_json",
    "parse_api_python_repr",
    "parse_api_rows",
    "parse_api_sentences",
    "parse_cli",
    "parse_export",
    "parse_log",
    "parse_routeros",
    "typed_row",
    "typed_value",
]


def parse_routeros(text: str) -> RouterOsResult:
    """Any RouterOS text above, chosen by shape."""
    s = text.lstrip()
    if s.startswith(("{", "[{", "[ {")) and not s.startswith("[admin"):
        if s.startswith("[{") and "'" in s.split("\n", 1)[0]:
            return parse_api_python_repr(text)
        return parse_api_json(text)
    first = [line.strip() for line in lines(text) if line.strip()]
    if any(line.startswith(("# ", "#\t")) and "by RouterOS" in line for line in first[:3]) or (
        first
        and re.match(r"^/[a-z]", first[0])
        and not first[0].startswith("/log")
        and any(re.match(r"^(add|set|remove) ", line) for line in first)
    ):
        return parse_export(text)
    if any(
        line.lstrip(">< \xa0").startswith(("!re", "!done", "!trap", "!fatal")) for line in first
    ):
        return parse_api_sentences(text)
    if first and first[0].startswith("[{"):
        return parse_api_python_repr(text)
    if first and re.match(r"^[a-z][a-z0-9.-]*=", first[0]) and not first[0].startswith("/"):
        return parse_api_sentences(text)
    if any(LOG_LINE.match(line) for line in first[:3]) or (
        len(first) > 1 and LOG_LINE.match(first[1]) and prompt_path(first[0])[0]
    ):
        return parse_log(text)
    return parse_cli(text)
