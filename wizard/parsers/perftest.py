"""perftest (`ib_write_bw`, `ib_read_bw`, `ib_send_bw`, `ib_*_lat`) text and JSON output.

Sample lines it matches (tool-formats.md, "perftest"; fixtures real/perftest/):

    RDMA_Write BW Test
     Device         : rocep1s0f1
     #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
     65536      20000            111.72             111.71             0.213070
      Failed status 12: wr_id 0 syndrom 0x81
      Failed status-transport retry counter exceeded (12): wr_id 0 syndrom 0x81

Bandwidths are always Gb/s here: `MB/sec` and `MiB/sec` both mean 2^20 B/s (perftest commit
1d202bb only renamed the label) and are converted with 2^20 * 8 / 1e9. A run that printed its
header but no result row (wrong `-x` GID index, a stalled path) is a *failed result*
(`error="no result row"`), not a parse error: the verdict needs it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from wizard.errors import ParseError
from wizard.parsers.common import lines, load_json, strip_prompt, to_float, to_int

TOOL = "perftest"
MIB_TO_GBPS = 2**20 * 8 / 1e9

_TITLES = {
    ("RDMA_Write", "BW"): "ib_write_bw",
    ("RDMA_Read", "BW"): "ib_read_bw",
    ("Send", "BW"): "ib_send_bw",
    ("Atomic", "BW"): "ib_atomic_bw",
    ("RDMA_Write", "Latency"): "ib_write_lat",
    ("RDMA_Read", "Latency"): "ib_read_lat",
    ("Send", "Latency"): "ib_send_lat",
    ("Atomic", "Latency"): "ib_atomic_lat",
}
_TITLE = re.compile(
    r"^\s*(RDMA_Write|RDMA_Read|Send|Atomic[A-Za-z_]*)(_| )(Bidirectional(?:_| ))?"
    r"(BW|Latency)(?:_| )Test\s*$"
)
_COMMAND = re.compile(r"\b(ib_(?:write|read|send|atomic)_(?:bw|lat))\b(.*)$")
_BW_HEADER = re.compile(r"#bytes\s+#iterations\s+BW peak\[(Gb/sec|MB/sec|MiB/sec)\]")
_LAT_HEADER = re.compile(r"#bytes\s+#iterations\s+t_min\[usec\]")
_KV = re.compile(r"([A-Za-z][A-Za-z0-9_.*\- ]*?)\s*:\s*(\S+)")
_FAILED_STATUS = re.compile(
    r"Failed status(?:\s+(?P<old>\d+)|-(?P<text>.+?)\s*\((?P<new>\d+)\))\s*:\s*wr_id\s+(?P<wr>\d+)"
    r"\s+syndrom\s+(?P<syn>0x[0-9a-fA-F]+)"
)
_CONNECT = re.compile(r"Couldn't connect to (\S+?):(\d+)")
_SCNT = re.compile(r"scnt=(\d+),\s*ccnt=(\d+)")

# ibv_wc_status values that matter for verdicts (verbs.h)
WC_STATUS = {
    4: "local protection error",
    5: "work request flushed error",
    10: "remote access error",
    12: "transport retry counter exceeded",
    13: "RNR retry counter exceeded",
}


@dataclass(frozen=True, slots=True)
class PerftestRow:
    """One result row of a BW test, bandwidths in Gb/s."""

    msg_size: int
    iterations: int
    bw_peak_gbps: float
    bw_avg_gbps: float
    msg_rate_mpps: float | None = None
    cpu_util_pct: float | None = None


@dataclass(frozen=True, slots=True)
class PerftestLatencyRow:
    """One result row of a latency test, times in microseconds."""

    msg_size: int
    iterations: int
    t_min_us: float
    t_max_us: float
    t_typical_us: float
    t_avg_us: float | None = None
    t_stdev_us: float | None = None
    p99_us: float | None = None
    p999_us: float | None = None


@dataclass(frozen=True, slots=True)
class PerftestResult:
    """A parsed perftest run. `error` is None only when the run produced result rows."""

    test: str  # ib_write_bw, ib_read_bw, ... or "perftest" when the text does not say
    title: str | None = None  # "RDMA_Write BW Test"
    latency: bool = False
    bidirectional: bool = False
    device: str | None = None
    devices: tuple[str, ...] = ()  # several when concurrent runs were interleaved
    qps: int | None = None
    mtu: int | None = None
    link_type: str | None = None
    gid_index: int | None = None
    connection_type: str | None = None
    rdma_cm: bool | None = None
    server: str | None = None  # the address the client connected to, when the command is shown
    reported_unit: str | None = None  # as printed: Gb/sec, MB/sec or MiB/sec
    msg_size: int | None = None
    bw_peak_gbps: float | None = None  # 0.0 when perftest did not measure it (-D, run_infinitely)
    bw_avg_gbps: float | None = None
    peak_measured: bool = True
    rows: tuple[PerftestRow, ...] = ()
    latency_rows: tuple[PerftestLatencyRow, ...] = ()
    waiting_for_client: bool = False
    error: str | None = None
    error_kind: str | None = None  # retry-exceeded, local-protection, connect-failed, ...
    wc_status: int | None = None
    syndrome: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _test_from_title(title: str) -> tuple[str, bool, bool]:
    m = _TITLE.match(title)
    if not m:
        return "perftest", False, False
    verb = m.group(1)
    verb = "Atomic" if verb.startswith("Atomic") else verb
    kind = m.group(4)
    return _TITLES.get((verb, kind), "perftest"), bool(m.group(3)), kind == "Latency"


def _gbps(value: float, unit: str) -> float:
    return value if unit == "Gb/sec" else round(value * MIB_TO_GBPS, 4)


def parse_perftest(text: str) -> PerftestResult:
    """Parse perftest text output (or its `--out_json` JSON, detected by a leading `{`)."""
    if text.lstrip().startswith("{"):
        return parse_perftest_json(text)
    titles: list[str] = []
    header: dict[str, str] = {}
    devices: list[str] = []
    command_test: str | None = None
    server: str | None = None
    unit: str | None = None
    in_lat = False
    rows: list[PerftestRow] = []
    lat_rows: list[PerftestLatencyRow] = []
    peak_warning = False
    waiting = False
    errors: list[str] = []
    error_kind: str | None = None
    wc_status: int | None = None
    syndrome: str | None = None
    seen_anything = False

    for raw in lines(text):
        line = strip_prompt(raw).strip()
        if not line:
            continue
        cmd = _COMMAND.search(line)
        if cmd and not line.startswith("#bytes") and command_test is None:
            command_test = cmd.group(1)
            args = cmd.group(2).split()
            positional = [
                a
                for i, a in enumerate(args)
                if not a.startswith("-")
                and (
                    i == 0
                    or not args[i - 1].startswith("-")
                    or args[i - 1]
                    in ("-F", "-b", "-a", "-R", "--report_gbits", "--run_infinitely", "--cpu_util")
                )
            ]
            server = next((p for p in positional if re.fullmatch(r"[\w.:-]+", p)), None)
            seen_anything = True
            continue
        if _TITLE.match(line):
            titles.append(line)
            seen_anything = True
            continue
        if "BW peak won't be measured" in line:
            peak_warning = True
            seen_anything = True
            continue
        if "Waiting for client to connect" in line:
            waiting = True
            seen_anything = True
            continue
        hm = _BW_HEADER.search(line)
        if hm:
            unit = hm.group(1)
            in_lat = False
            seen_anything = True
            continue
        if _LAT_HEADER.search(line):
            in_lat = True
            unit = unit or None
            seen_anything = True
            continue
        fm = _FAILED_STATUS.search(line)
        if fm:
            code = int(fm.group("old") or fm.group("new"))
            wc_status = code
            syndrome = fm.group("syn")
            status_text = fm.group("text") or WC_STATUS.get(code, f"status {code}")
            errors.append(
                f"Failed status {code} ({status_text}): wr_id {fm.group('wr')} syndrom {syndrome}"
            )
            error_kind = {
                12: "retry-exceeded",
                4: "local-protection",
                13: "rnr-retry-exceeded",
                10: "remote-access",
            }.get(code, "completion-error")
            seen_anything = True
            continue
        cm = _CONNECT.search(line)
        if cm:
            errors.append(line)
            error_kind = error_kind or "connect-failed"
            seen_anything = True
            continue
        if (
            "Unable to init the socket connection" in line
            or "Unable to open file descriptor for socket connection" in line
        ):
            errors.append(line)
            error_kind = error_kind or "connect-failed"
            seen_anything = True
            continue
        if "Couldn't read remote address" in line or "Unable to read to socket" in line:
            errors.append(line)
            error_kind = error_kind or "remote-address"
            seen_anything = True
            continue
        if line.startswith(
            (
                "Completion with error",
                "got completion with error",
                "Failed to complete run_iter",
                "Failed to close connection",
                "Couldn't ",
                "Unable to ",
                "Failed to ",
            )
        ):
            errors.append(line)
            error_kind = error_kind or "failed"
            seen_anything = True
            continue
        if _SCNT.search(line):
            errors.append(line)
            continue
        if line.startswith(("local address", "remote address", "GID:")):
            continue
        if ":" in line and not line[0].isdigit() and "address" not in line:
            for km in _KV.finditer(line.replace("\t", "  ")):
                key = km.group(1).strip()
                if key in (
                    "Device",
                    "Number of qps",
                    "Mtu",
                    "Link type",
                    "GID index",
                    "Connection type",
                    "rdma_cm QPs",
                    "Transport type",
                ):
                    header.setdefault(key, km.group(2))
                    if key == "Device" and km.group(2) not in devices:
                        devices.append(km.group(2))
            continue
        fields = line.split()
        if not fields[0].isdigit():
            continue
        if in_lat and len(fields) >= 5:
            nums = [to_float(f) for f in fields]
            if all(n is not None for n in nums[:5]):
                vals = [float(n) if n is not None else 0.0 for n in nums]
                extra: list[float | None] = [*vals[5:9], None, None, None, None]
                lat_rows.append(
                    PerftestLatencyRow(
                        int(vals[0]),
                        int(vals[1]),
                        vals[2],
                        vals[3],
                        vals[4],
                        extra[0],
                        extra[1],
                        extra[2],
                        extra[3],
                    )
                )
            continue
        if unit is not None and 4 <= len(fields) <= 6:
            size = to_int(fields[0])
            iters = to_int(fields[1])
            peak = to_float(fields[2])
            avg = to_float(fields[3])
            if size is None or iters is None or peak is None or avg is None:
                continue
            rate = to_float(fields[4]) if len(fields) > 4 else None
            cpu = to_float(fields[5]) if len(fields) > 5 else None
            rows.append(PerftestRow(size, iters, _gbps(peak, unit), _gbps(avg, unit), rate, cpu))

    if not seen_anything and not header:
        raise ParseError("no perftest title, result header or error line", tool=TOOL, raw=text)
    if not titles and not header and not rows and not errors and not waiting and unit is None:
        raise ParseError("no perftest title, result header or error line", tool=TOOL, raw=text)

    title = titles[0] if titles else None
    test, bidir, latency = _test_from_title(title) if title else ("perftest", False, in_lat)
    if command_test:
        test = command_test
        latency = latency or test.endswith("_lat")
    error = "; ".join(errors) if errors else None
    if error is None and not rows and not lat_rows:
        error = "no result row: server still waiting for a client" if waiting else "no result row"
        error_kind = "no-result-row"

    msg_size: int | None = None
    bw_peak: float | None = None
    bw_avg: float | None = None
    if rows:
        sizes = {r.msg_size for r in rows}
        if len(sizes) == 1:
            msg_size = rows[0].msg_size
            bw_avg = round(sum(r.bw_avg_gbps for r in rows) / len(rows), 4)
            bw_peak = max(r.bw_peak_gbps for r in rows)
        else:  # an -a sweep: the largest message size is the headline
            big = max(rows, key=lambda r: r.msg_size)
            msg_size, bw_avg, bw_peak = big.msg_size, big.bw_avg_gbps, big.bw_peak_gbps
    elif lat_rows:
        msg_size = lat_rows[-1].msg_size

    rdma_cm = header.get("rdma_cm QPs")
    return PerftestResult(
        test=test,
        title=title,
        latency=latency,
        bidirectional=bidir,
        device=devices[0] if devices else None,
        devices=tuple(devices),
        qps=to_int(header.get("Number of qps", "")),
        mtu=to_int(header.get("Mtu", "").split("[")[0]),
        link_type=header.get("Link type"),
        gid_index=to_int(header.get("GID index", "")),
        connection_type=header.get("Connection type"),
        rdma_cm=None if rdma_cm is None else rdma_cm.upper() == "ON",
        server=server,
        reported_unit=unit,
        msg_size=msg_size,
        bw_peak_gbps=bw_peak,
        bw_avg_gbps=bw_avg,
        peak_measured=not peak_warning and not (rows and all(r.bw_peak_gbps == 0 for r in rows)),
        rows=tuple(rows),
        latency_rows=tuple(lat_rows),
        waiting_for_client=waiting,
        error=error,
        error_kind=error_kind,
        wc_status=wc_status,
        syndrome=syndrome,
    )


def _num(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return to_float(value)
    return None


def parse_perftest_json(text: str, *, report_gbits: bool | None = None) -> PerftestResult:
    """Parse `--out_json` output. Units follow `--report_gbits`, which the JSON does not record:
    pass `report_gbits`, or leave None to infer it (an average above 400 cannot be Gb/s on any
    NIC perftest drives today, so it is MB/sec).

        {"test_info": {"test": "RDMA_Write_BW_Test", "Device": "mlx5_11", ...},
         "results": {"MsgSize": 65536, "BW_peak": 5293.52, "BW_average": 2229.27, ...}}
    """
    data = load_json(text, tool=TOOL)
    if not isinstance(data, dict) or not isinstance(data.get("test_info"), dict):
        raise ParseError("JSON without a test_info object", tool=TOOL, raw=text)
    info: dict[str, Any] = data["test_info"]
    results = data.get("results")
    title_raw = str(info.get("test", ""))
    title = title_raw.strip() or None
    test, bidir, latency = _test_from_title(title) if title else ("perftest", False, False)
    rows: list[PerftestRow] = []
    unit: str | None = None
    if isinstance(results, dict) and not latency:
        size = _num(results.get("MsgSize"))
        iters = _num(results.get("n_iterations"))
        peak = _num(results.get("BW_peak"))
        avg = _num(results.get("BW_average"))
        if size is not None and peak is not None and avg is not None:
            gbits = report_gbits if report_gbits is not None else avg <= 400
            unit = "Gb/sec" if gbits else "MB/sec"
            rows.append(
                PerftestRow(
                    int(size),
                    int(iters or 0),
                    _gbps(peak, unit),
                    _gbps(avg, unit),
                    _num(results.get("MsgRate")),
                    _num(results.get("CPU_util")),
                )
            )
    device = info.get("Device")
    gid = _num(info.get("GID_index"))
    qps = _num(info.get("Number_of_qps"))
    mtu = _num(info.get("Mtu"))
    rdma_cm = info.get("rdma_cm_QPs")
    return PerftestResult(
        test=test,
        title=title,
        latency=latency,
        bidirectional=bidir,
        device=str(device) if device is not None else None,
        devices=(str(device),) if device is not None else (),
        qps=int(qps) if qps is not None else None,
        mtu=int(mtu) if mtu is not None else None,
        link_type=str(info["Link_type"]) if "Link_type" in info else None,
        gid_index=int(gid) if gid is not None else None,
        connection_type=str(info["Connection_type"]) if "Connection_type" in info else None,
        rdma_cm=None if rdma_cm is None else str(rdma_cm).upper() == "ON",
        reported_unit=unit,
        msg_size=rows[0].msg_size if rows else None,
        bw_peak_gbps=rows[0].bw_peak_gbps if rows else None,
        bw_avg_gbps=rows[0].bw_avg_gbps if rows else None,
        peak_measured=bool(rows and rows[0].bw_peak_gbps > 0),
        rows=tuple(rows),
        error=None if rows or latency else "no result row",
        error_kind=None if rows or latency else "no-result-row",
    )
