"""nccl-tests (`all_reduce_perf`, `all_gather_perf`, `sendrecv_perf`, ...) and NCCL debug logs.

Sample lines it matches (tool-formats.md, "nccl-tests" and "NCCL debug log"):

    # Collective test starting: all_reduce_perf
      1073741824     134217728     float    none      -1  27211.0   39.46   19.73       0  25806.7   41.61   20.80       0
    # Avg bus bandwidth    : 21.4033
    spark-4440:24302:24302 [0] NCCL INFO NET/IB : Using [0]rocep1s0f1:1/RoCE [1]roceP2p1s0f1:1/RoCE [RO]; OOB enp1s0f1np1:192.168.100.16<0>
    vm:1370:1381 [0] NCCL INFO Using network Socket
    [1,0]<stdout>:# Avg bus bandwidth    : 1.57614

Rows are found by shape (size, count, type, [redop, root], then out-of-place and in-place
time/algbw/busbw/#wrong), so INFO lines, Open MPI noise, ssh timeouts and `--tag-output`
prefixes between rows do not matter. `avg_busbw` is the tool's own footer (the mean of every
busbw cell, small sizes included) and is None when the run was cut short. A text that is only an
NCCL debug log (no table) parses too: `op` is then None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from wizard.errors import ParseError
from wizard.parsers.common import lines, load_json, to_float, to_int

TOOL = "nccl-tests"

_TAG = re.compile(r"^\[\d+,\d+\]<(?:stdout|stderr)>:")
_NCCL_MSG = re.compile(r"NCCL (INFO|WARN) ?(.*)$")
_USING_NET = re.compile(r"Using network (\w+)")
_VIA = re.compile(r"via (NET/(\w+)/(\d+)|P2P/\S+|SHM/\S+|CollNet\S*|NVLS\S*)")
_RANK_HOST = re.compile(r"^\s*([^\s:]+):\d+:\d+ \[")  # `spark1:3111:3111 [0] NCCL INFO`
_IB_DEV = re.compile(r"\[(\d+)\]([^\s:\[\]]+):(\d+)/(\w+)")
_HCA = re.compile(r"NCCL_IB_HCA set (?:by environment )?to ([^\s]+?)\.?$")
_SOCKET_IFNAME = re.compile(r"NCCL_SOCKET_IFNAME set (?:by environment )?to ([^\s]+?)\.?$")
_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+\S*)")
_TESTS_VERSION = re.compile(r"#\s*nccl-tests version (\S+)")
_OP = re.compile(r"#\s*Collective test (starting|concluded): (\S+)")
_RANK = re.compile(
    r"#\s*Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+"
    r"\[([^\]]+)\]\s*(.*)$"
)
_OOB = re.compile(r"^\s*#?\s*Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?")
_AVG = re.compile(r"^\s*#?\s*Avg bus bandwidth\s*:\s*(\S+)\s*(OK|FAILED)?")
_TEST_FAIL = re.compile(r"Test NCCL failure (.*)$|Test failure (.*)$|Test CUDA failure (.*)$")
_TYPE = re.compile(r"[a-z][a-z0-9_]*$")
_RC = re.compile(r"^rc=(\d+)\s*$")


@dataclass(frozen=True, slots=True)
class NcclRow:
    """One size of a sweep: times in µs, bandwidths in GB/s (10^9 B/s)."""

    size: int
    count: int
    type: str
    redop: str | None
    root: int | None
    time_out_of_place: float
    algbw_out_of_place: float
    busbw_out_of_place: float
    wrong_out_of_place: int | None
    time_in_place: float
    algbw_in_place: float
    busbw_in_place: float
    wrong_in_place: int | None  # None for `N/A` (in-place of sendrecv/alltoall)


@dataclass(frozen=True, slots=True)
class NcclIbDevice:
    index: int
    name: str
    port: int
    link: str  # RoCE, IB, IB/SHARP...


@dataclass(frozen=True, slots=True)
class NcclResult:
    """A parsed nccl-tests run and/or NCCL debug log."""

    op: str | None = None  # all_reduce_perf, all_gather_perf, ...
    tests_version: str | None = None
    nccl_version: str | None = None
    ranks: int | None = None
    hosts: tuple[str, ...] = ()
    gpus: tuple[str, ...] = ()
    rows: tuple[NcclRow, ...] = ()
    avg_busbw: float | None = None  # GB/s, the tool's footer; None when cut short
    peak_busbw: float | None = None  # the best busbw cell (GB/s)
    largest_size_busbw: float | None = None  # busbw (max of both) at the largest size
    out_of_bounds: int | None = None
    out_of_bounds_ok: bool | None = None
    complete: bool = False  # the footer was reached
    transport: str | None = None  # IB, Socket, P2P, or None when the log does not say
    networks: tuple[str, ...] = ()  # every `Using network X` name seen (IB, IBext_v6, Socket)
    net_ib_devices: tuple[NcclIbDevice, ...] = ()  # from the `NET/IB : Using` line with most
    net_ib_device_count: int | None = None
    # (host, devices) per rank host that printed a `NET/IB : Using` line: ranks can differ when
    # their environments do (the launch node's login shell against mpirun's ssh-started ranks)
    net_ib_devices_per_host: tuple[tuple[str, int], ...] = ()
    virtual_devices: tuple[str, ...] = ()  # NCCL 2.28 `Made virtual device [k] name=...`
    channel_nets: tuple[str, ...] = ()  # distinct `via NET/IB/0`, `NET/Socket/0`, `P2P/IPC`
    ib_hca: str | None = None  # NCCL_IB_HCA value as NCCL reports it
    socket_ifname: str | None = None
    ib_no_device: bool = False  # `NET/IB : No device found.`
    net_plugin_failed: bool = False  # `Failed to initialize any NET plugin`
    gdr: bool | None = None  # False: `GPU Direct RDMA Disabled` / `GDR 0`
    warnings: tuple[str, ...] = ()
    failures: tuple[str, ...] = ()  # `Test NCCL failure ...` lines
    exit_code: int | None = None  # `rc=N` lines some capture scripts append
    error: str | None = None


def _wrong(text: str) -> int | None:
    """`#wrong` (an int), `N/A`, or the `error` column of old versions (`0e+00`)."""
    if text == "N/A":
        return None
    value = to_int(text)
    if value is None:
        f = to_float(text)
        value = int(f) if f is not None and abs(f) < 1e18 else None
    return value


def _is_wrong(text: str) -> bool:
    return text == "N/A" or to_float(text) is not None


def _row(fields: list[str]) -> NcclRow | None:
    if len(fields) < 11:
        return None
    size, count = to_int(fields[0]), to_int(fields[1])
    if size is None or count is None or not _TYPE.match(fields[2]):
        return None
    redop: str | None = None
    root: int | None = None
    rest = fields[3:]
    if _TYPE.match(rest[0]) and to_int(rest[1]) is not None:
        redop, root = rest[0], to_int(rest[1])
        rest = rest[2:]
    if len(rest) == 16:  # -I 1: four per-iteration columns after each #wrong
        out, inp = rest[0:4], rest[8:12]
    elif len(rest) == 8:
        out, inp = rest[0:4], rest[4:8]
    else:
        return None
    nums = [to_float(v) for v in (*out[:3], *inp[:3])]
    if any(n is None for n in nums):
        return None
    if not (_is_wrong(out[3]) and _is_wrong(inp[3])):
        return None
    v = [float(n) for n in nums if n is not None]
    return NcclRow(
        size,
        count,
        fields[2],
        redop,
        root,
        v[0],
        v[1],
        v[2],
        _wrong(out[3]),
        v[3],
        v[4],
        v[5],
        _wrong(inp[3]),
    )


def _transport(
    networks: list[str], vias: list[str], socket_using: bool, ib_using: bool
) -> str | None:
    if networks:
        last = networks[-1]
        return "Socket" if last == "Socket" else "IB" if last.startswith("IB") else last
    if any(v.startswith("NET/Socket") for v in vias):
        return "Socket"
    if any(v.startswith("NET/") for v in vias):
        return "IB"
    if socket_using:
        return "Socket"
    if ib_using:
        return "IB"
    if any(v.startswith(("P2P", "SHM")) for v in vias):
        return "P2P"
    return None


@dataclass(slots=True)
class _Scan:
    """What a walk over an nccl-tests / NCCL_DEBUG=INFO text has read so far."""

    op: str | None = None
    tests_version: str | None = None
    nccl_version: str | None = None
    ranks: dict[int, tuple[str, str]] = field(default_factory=dict)
    rows: list[NcclRow] = field(default_factory=list)
    avg: float | None = None
    oob: int | None = None
    oob_ok: bool | None = None
    networks: list[str] = field(default_factory=list)
    vias: list[str] = field(default_factory=list)
    ib_devs: list[NcclIbDevice] = field(default_factory=list)
    per_host: dict[str, int] = field(default_factory=dict)
    vdevs: list[str] = field(default_factory=list)
    hca: str | None = None
    ifname: str | None = None
    no_device: bool = False
    plugin_failed: bool = False
    socket_using: bool = False
    ib_using: bool = False
    gdr: bool | None = None
    warnings: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    exit_code: int | None = None
    saw_nccl: bool = False

    def message(self, line: str, level: str, msg: str) -> None:
        """One `NCCL INFO` / `NCCL WARN` line."""
        self.saw_nccl = True
        if level == "WARN":
            if msg not in self.warnings:
                self.warnings.append(msg)
            if "Failed to initialize any NET plugin" in msg:
                self.plugin_failed = True
            return
        self._network(line, msg)
        if "No device found" in msg and "NET/IB" in msg:
            self.no_device = True
        if "Failed to initialize any NET plugin" in msg:
            self.plugin_failed = True
        self._settings(msg)

    def _network(self, line: str, msg: str) -> None:
        """Which network NCCL chose and which IB devices it uses."""
        if (u := _USING_NET.search(msg)) and msg.startswith("Using network"):
            self.networks.append(u.group(1))
        elif msg.startswith("NET/IB") and "Using" in msg and "No device" not in msg:
            found = [NcclIbDevice(int(d[0]), d[1], int(d[2]), d[3]) for d in _IB_DEV.findall(msg)]
            if len(found) > len(self.ib_devs):
                self.ib_devs = found
            if (hm := _RANK_HOST.match(line)) is not None:
                self.per_host[hm.group(1)] = max(self.per_host.get(hm.group(1), 0), len(found))
            if found:
                self.ib_using = True
        elif "Made virtual device" in msg:
            vm = re.search(r"name=(\S+)", msg)
            if vm and vm.group(1) not in self.vdevs:
                self.vdevs.append(vm.group(1))
        elif msg.startswith("NET/Socket") and "Using [" in msg:
            self.socket_using = True

    def _settings(self, msg: str) -> None:
        """The HCA filter, socket interface, version, GDR state and channel transports."""
        if (h := _HCA.search(msg)) and self.hca is None:
            self.hca = h.group(1)
        if (s := _SOCKET_IFNAME.search(msg)) and self.ifname is None:
            self.ifname = s.group(1)
        if (v := _VERSION.search(msg)) and self.nccl_version is None:
            self.nccl_version = v.group(1)
        if "GPU Direct RDMA Disabled" in msg:
            self.gdr = False
        elif "GPU Direct RDMA Enabled" in msg:
            self.gdr = True
        elif (g := re.search(r"\bGDR (\d)\b", msg)) and self.gdr is None:
            self.gdr = g.group(1) != "0"
        if (via := _VIA.search(msg)) and via.group(1) not in self.vias:
            self.vias.append(via.group(1))

    def test_line(self, line: str, stripped: str) -> None:
        """One line of the nccl-tests output itself (header, ranks, rows, summary)."""
        if (v := _VERSION.search(line)) and self.nccl_version is None:
            self.nccl_version = v.group(1)
        elif tv := _TESTS_VERSION.search(line):
            self.tests_version = tv.group(1)
        elif o := _OP.search(line):
            self.op = self.op or o.group(2)
        elif r := _RANK.search(line):
            self.ranks[int(r.group(1))] = (r.group(2), r.group(4).strip())
        elif ob := _OOB.search(line):
            self.oob = int(ob.group(1))
            self.oob_ok = (ob.group(2) or "OK") == "OK" and self.oob == 0
        elif a := _AVG.search(line):
            self.avg = to_float(a.group(1))
        elif _TEST_FAIL.search(line):
            self.failures.append(stripped)
        elif rc := _RC.match(stripped):
            self.exit_code = int(rc.group(1))
        else:
            fields = stripped.lstrip("#").split()
            row = _row(fields) if fields and fields[0].isdigit() else None
            if row is not None:
                self.rows.append(row)

    def error(self) -> str | None:
        """Why the run is not a complete, clean result (None when it is)."""
        if self.failures:
            return self.failures[0]
        if self.plugin_failed:
            return "Failed to initialize any NET plugin"
        if self.warnings:
            return self.warnings[0]
        if self.op is not None and self.avg is None and self.rows:
            error = "run cut short: no '# Avg bus bandwidth' line"
            if self.exit_code not in (None, 0):
                error += f" (exit code {self.exit_code})"
            return error
        if self.op is not None and not self.rows:
            return "no result row"
        if self.exit_code not in (None, 0):
            return f"exit code {self.exit_code}"
        return None

    def result(self) -> NcclResult:
        rows, ib_devs = self.rows, self.ib_devs
        busbws = [b for r in rows for b in (r.busbw_out_of_place, r.busbw_in_place)]
        largest = max(rows, key=lambda r: r.size) if rows else None
        return NcclResult(
            op=self.op,
            tests_version=self.tests_version,
            nccl_version=self.nccl_version,
            ranks=len(self.ranks) or None,
            hosts=tuple(dict.fromkeys(h for h, _ in self.ranks.values())),
            gpus=tuple(dict.fromkeys(g for _, g in self.ranks.values())),
            rows=tuple(rows),
            avg_busbw=self.avg,
            peak_busbw=max(busbws) if busbws else None,
            largest_size_busbw=(
                max(largest.busbw_out_of_place, largest.busbw_in_place) if largest else None
            ),
            out_of_bounds=self.oob,
            out_of_bounds_ok=self.oob_ok,
            complete=self.avg is not None,
            transport=_transport(self.networks, self.vias, self.socket_using, self.ib_using),
            networks=tuple(dict.fromkeys(self.networks)),
            net_ib_devices=tuple(ib_devs),
            net_ib_device_count=len(ib_devs) if ib_devs else (0 if self.no_device else None),
            net_ib_devices_per_host=tuple(self.per_host.items()),
            virtual_devices=tuple(self.vdevs),
            channel_nets=tuple(self.vias),
            ib_hca=self.hca,
            socket_ifname=self.ifname,
            ib_no_device=self.no_device,
            net_plugin_failed=self.plugin_failed,
            gdr=self.gdr,
            warnings=tuple(self.warnings),
            failures=tuple(self.failures),
            exit_code=self.exit_code,
            error=self.error(),
        )


def parse_nccl(text: str) -> NcclResult:
    """Parse nccl-tests text output with or without NCCL INFO lines, or its `-J` JSON."""
    if text.lstrip().startswith("{"):
        return parse_nccl_json(text)
    scan = _Scan()
    for raw in lines(text):
        line = _TAG.sub("", raw).rstrip()
        stripped = line.strip()
        if not stripped:
            continue
        m = _NCCL_MSG.search(line)
        if m:
            scan.message(line, m.group(1), m.group(2).strip())
        else:
            scan.test_line(line, stripped)
    if scan.op is None and not scan.rows and not scan.saw_nccl and scan.avg is None:
        raise ParseError("no nccl-tests header, result row or NCCL log line", tool=TOOL, raw=text)
    return scan.result()


def _f(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return to_float(value)
    return None


def parse_nccl_json(text: str) -> NcclResult:
    """Parse the `-J file` JSON of nccl-tests (version 3):

    {"version": 3, "args": ["./build/all_reduce_perf", ...], "results": [{"size": 8,
     "out_of_place": {"time": 16.3, "alg_bw": 0.0005, "bus_bw": 0.0005, "nwrong": 0.0}, ...}],
     "average_bus_bandwidth": {"bandwidth": 76.298006, "okay": "unchecked"}, ...}
    """
    data = load_json(text, tool=TOOL)
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ParseError("JSON without a results list", tool=TOOL, raw=text)
    args = data.get("args")
    op = None
    if isinstance(args, list) and args and isinstance(args[0], str):
        op = args[0].rsplit("/", 1)[-1] or None
    rows: list[NcclRow] = []
    for item in data["results"]:
        if not isinstance(item, dict):
            continue
        out, inp = item.get("out_of_place"), item.get("in_place")
        if not isinstance(out, dict) or not isinstance(inp, dict):
            continue
        vals = [_f(d.get(k)) for d in (out, inp) for k in ("time", "alg_bw", "bus_bw", "nwrong")]
        size, count = _f(item.get("size")), _f(item.get("count"))
        if size is None or count is None or any(v is None for v in vals[:3] + vals[4:7]):
            continue
        v = [x if x is not None else 0.0 for x in vals]
        root = to_int(str(item.get("root", "")))
        rows.append(
            NcclRow(
                int(size),
                int(count),
                str(item.get("type", "")),
                str(item["redop"]) if "redop" in item else None,
                root,
                v[0],
                v[1],
                v[2],
                int(v[3]) if vals[3] is not None else None,
                v[4],
                v[5],
                v[6],
                int(v[7]) if vals[7] is not None else None,
            )
        )
    avg_obj = data.get("average_bus_bandwidth")
    avg = _f(avg_obj.get("bandwidth")) if isinstance(avg_obj, dict) else None
    oob_obj = data.get("out_of_bounds")
    oob = _f(oob_obj.get("count")) if isinstance(oob_obj, dict) else None
    cfg = data.get("config")
    devices = cfg.get("devices") if isinstance(cfg, dict) else None
    hosts: list[str] = []
    gpus: list[str] = []
    if isinstance(devices, list):
        for d in devices:
            if isinstance(d, dict):
                hosts.append(str(d.get("hostname", "")))
                gpus.append(str(d.get("device_info", "")))
    errs = data.get("errors")
    err_list = [str(e) for e in errs if str(e).strip()] if isinstance(errs, list) else []
    version = data.get("nccl_version")
    busbws = [b for r in rows for b in (r.busbw_out_of_place, r.busbw_in_place)]
    largest = max(rows, key=lambda r: r.size) if rows else None
    return NcclResult(
        op=op,
        nccl_version=str(version) if version is not None else None,
        ranks=len(devices) if isinstance(devices, list) and devices else None,
        hosts=tuple(dict.fromkeys(hosts)),
        gpus=tuple(dict.fromkeys(gpus)),
        rows=tuple(rows),
        avg_busbw=avg,
        peak_busbw=max(busbws) if busbws else None,
        largest_size_busbw=(
            max(largest.busbw_out_of_place, largest.busbw_in_place) if largest else None
        ),
        out_of_bounds=int(oob) if oob is not None else None,
        out_of_bounds_ok=None if oob is None else oob == 0,
        complete=avg is not None,
        error=err_list[0] if err_list else (None if avg is not None else "run cut short"),
    )
