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
from dataclasses import dataclass, field
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


_SERVER_FLAGS = ("-F", "-b", "-a", "-R", "--report_gbits", "--run_infinitely", "--cpu_util")
_HEADER_KEYS = (
    "Device",
    "Number of qps",
    "Mtu",
    "Link type",
    "GID index",
    "Connection type",
    "rdma_cm QPs",
    "Transport type",
)
_ERROR_KINDS = {
    12: "retry-exceeded",
    4: "local-protection",
    13: "rnr-retry-exceeded",
    10: "remote-access",
}
_FAILURE_PREFIXES = (
    "Completion with error",
    "got completion with error",
    "Failed to complete run_iter",
    "Failed to close connection",
    "Couldn't ",
    "Unable to ",
    "Failed to ",
)


def _server_of(args: list[str]) -> str | None:
    """The server address among a perftest command's positional arguments."""
    positional = [
        a
        for i, a in enumerate(args)
        if not a.startswith("-")
        and (i == 0 or not args[i - 1].startswith("-") or args[i - 1] in _SERVER_FLAGS)
    ]
    return next((p for p in positional if re.fullmatch(r"[\w.:-]+", p)), None)


@dataclass(slots=True)
class _Scan:
    """What a walk over a perftest text output has read so far."""

    titles: list[str] = field(default_factory=list)
    header: dict[str, str] = field(default_factory=dict)
    devices: list[str] = field(default_factory=list)
    command_test: str | None = None
    server: str | None = None
    unit: str | None = None
    in_lat: bool = False
    rows: list[PerftestRow] = field(default_factory=list)
    lat_rows: list[PerftestLatencyRow] = field(default_factory=list)
    peak_warning: bool = False
    waiting: bool = False
    errors: list[str] = field(default_factory=list)
    error_kind: str | None = None
    wc_status: int | None = None
    syndrome: str | None = None
    seen_anything: bool = False

    def line(self, line: str) -> None:
        if self._command(line) or self._marker(line) or self._failure(line):
            self.seen_anything = True
        elif _SCNT.search(line):
            self.errors.append(line)
        elif line.startswith(("local address", "remote address", "GID:")):
            return
        elif ":" in line and not line[0].isdigit() and "address" not in line:
            self._header_line(line)
        elif (fields := line.split())[0].isdigit():
            self._result_row(fields)

    def _command(self, line: str) -> bool:
        """The command line itself (`ib_write_bw -d ... <server>`), once."""
        cmd = _COMMAND.search(line)
        if not cmd or line.startswith("#bytes") or self.command_test is not None:
            return False
        self.command_test = cmd.group(1)
        self.server = _server_of(cmd.group(2).split())
        return True

    def _marker(self, line: str) -> bool:
        """The test title, the peak warning, a waiting server, a result header."""
        if _TITLE.match(line):
            self.titles.append(line)
        elif "BW peak won't be measured" in line:
            self.peak_warning = True
        elif "Waiting for client to connect" in line:
            self.waiting = True
        elif hm := _BW_HEADER.search(line):
            self.unit = hm.group(1)
            self.in_lat = False
        elif _LAT_HEADER.search(line):
            self.in_lat = True
        else:
            return False
        return True

    def _failure(self, line: str) -> bool:
        """A completion error with its status, or a connection / run failure line."""
        if fm := _FAILED_STATUS.search(line):
            code = int(fm.group("old") or fm.group("new"))
            self.wc_status = code
            self.syndrome = fm.group("syn")
            status_text = fm.group("text") or WC_STATUS.get(code, f"status {code}")
            self.errors.append(
                f"Failed status {code} ({status_text}): wr_id {fm.group('wr')} "
                f"syndrom {self.syndrome}"
            )
            self.error_kind = _ERROR_KINDS.get(code, "completion-error")
            return True
        if (
            _CONNECT.search(line)
            or "Unable to init the socket connection" in line
            or "Unable to open file descriptor for socket connection" in line
        ):
            kind = "connect-failed"
        elif "Couldn't read remote address" in line or "Unable to read to socket" in line:
            kind = "remote-address"
        elif line.startswith(_FAILURE_PREFIXES):
            kind = "failed"
        else:
            return False
        self.errors.append(line)
        self.error_kind = self.error_kind or kind
        return True

    def _header_line(self, line: str) -> None:
        """`Device : rocep1s0f0  Number of qps : 1 ...`: the settings the test ran with."""
        for km in _KV.finditer(line.replace("\t", "  ")):
            key = km.group(1).strip()
            if key in _HEADER_KEYS:
                self.header.setdefault(key, km.group(2))
                if key == "Device" and km.group(2) not in self.devices:
                    self.devices.append(km.group(2))

    def _result_row(self, fields: list[str]) -> None:
        """One numeric row: latency (after a latency header) or bandwidth."""
        if self.in_lat and len(fields) >= 5:
            nums = [to_float(f) for f in fields]
            if all(n is not None for n in nums[:5]):
                vals = [float(n) if n is not None else 0.0 for n in nums]
                extra: list[float | None] = [*vals[5:9], None, None, None, None]
                self.lat_rows.append(
                    PerftestLatencyRow(
                        int(vals[0]), int(vals[1]), vals[2], vals[3], vals[4], *extra[:4]
                    )
                )
            return
        if self.unit is None or not 4 <= len(fields) <= 6:
            return
        size, iters = to_int(fields[0]), to_int(fields[1])
        peak, avg = to_float(fields[2]), to_float(fields[3])
        if size is None or iters is None or peak is None or avg is None:
            return
        rate = to_float(fields[4]) if len(fields) > 4 else None
        cpu = to_float(fields[5]) if len(fields) > 5 else None
        self.rows.append(
            PerftestRow(size, iters, _gbps(peak, self.unit), _gbps(avg, self.unit), rate, cpu)
        )

    def headline(self) -> tuple[int | None, float | None, float | None]:
        """(message size, peak, average): the mean of one size's rows, else the largest size."""
        rows = self.rows
        if rows:
            if len({r.msg_size for r in rows}) == 1:
                bw_avg = round(sum(r.bw_avg_gbps for r in rows) / len(rows), 4)
                return rows[0].msg_size, max(r.bw_peak_gbps for r in rows), bw_avg
            # an -a sweep: the largest message size is the headline
            big = max(rows, key=lambda r: r.msg_size)
            return big.msg_size, big.bw_peak_gbps, big.bw_avg_gbps
        if self.lat_rows:
            return self.lat_rows[-1].msg_size, None, None
        return None, None, None

    def result(self) -> PerftestResult:
        title = self.titles[0] if self.titles else None
        test, bidir, latency = (
            _test_from_title(title) if title else ("perftest", False, self.in_lat)
        )
        if self.command_test:
            test = self.command_test
            latency = latency or test.endswith("_lat")
        error = "; ".join(self.errors) if self.errors else None
        error_kind = self.error_kind
        if error is None and not self.rows and not self.lat_rows:
            error = (
                "no result row: server still waiting for a client"
                if self.waiting
                else "no result row"
            )
            error_kind = "no-result-row"
        msg_size, bw_peak, bw_avg = self.headline()
        header, rows = self.header, self.rows
        rdma_cm = header.get("rdma_cm QPs")
        return PerftestResult(
            test=test,
            title=title,
            latency=latency,
            bidirectional=bidir,
            device=self.devices[0] if self.devices else None,
            devices=tuple(self.devices),
            qps=to_int(header.get("Number of qps", "")),
            mtu=to_int(header.get("Mtu", "").split("[")[0]),
            link_type=header.get("Link type"),
            gid_index=to_int(header.get("GID index", "")),
            connection_type=header.get("Connection type"),
            rdma_cm=None if rdma_cm is None else rdma_cm.upper() == "ON",
            server=self.server,
            reported_unit=self.unit,
            msg_size=msg_size,
            bw_peak_gbps=bw_peak,
            bw_avg_gbps=bw_avg,
            peak_measured=not self.peak_warning
            and not (rows and all(r.bw_peak_gbps == 0 for r in rows)),
            rows=tuple(rows),
            latency_rows=tuple(self.lat_rows),
            waiting_for_client=self.waiting,
            error=error,
            error_kind=error_kind,
            wc_status=self.wc_status,
            syndrome=self.syndrome,
        )


def parse_perftest(text: str) -> PerftestResult:
    """Parse perftest text output (or its `--out_json` JSON, detected by a leading `{`)."""
    if text.lstrip().startswith("{"):
        return parse_perftest_json(text)
    scan = _Scan()
    for raw in lines(text):
        line = strip_prompt(raw).strip()
        if line:
            scan.line(line)
    empty = not (scan.titles or scan.header or scan.rows or scan.errors or scan.waiting)
    if (not scan.seen_anything and not scan.header) or (empty and scan.unit is None):
        raise ParseError("no perftest title, result header or error line", tool=TOOL, raw=text)
    return scan.result()


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
