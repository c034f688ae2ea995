"""`ib_write_bw`'s command line, parsed the way perftest parses it (getopt_long and its checks).

The option table is perftest's own (src/perftest_parameters.c: the short-option string and
`long_options`), so an option the real tool does not know gets glibc's getopt message, perftest's
"Invalid Command or flag." and the usage text; a value the real tool refuses gets its message
(" Gid index should be between 0 and 64", " num of Qps should be between 1 and 16384", ...) and
" Parser function exited with Error". Options the lab does not model beyond accepting them are
accepted exactly when perftest accepts them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from wizard.lab.perftest_usage import USAGE

PROG = "ib_write_bw"
SHORT = "w:y:p:d:i:m:s:n:t:u:S:x:c:q:I:o:M:r:Q:A:l:D:f:B:T:L:E:J:j:K:k:X:W:aFegzRvhbNVCHUOZP"
# (name, has_arg, short letter it stands for or "" for a flag-style long option)
LONG: tuple[tuple[str, int, str], ...] = (
    ("port", 1, "p"), ("ib-dev", 1, "d"), ("ib-port", 1, "i"), ("mtu", 1, "m"),
    ("size", 1, "s"), ("iters", 1, "n"), ("tx-depth", 1, "t"), ("qp-timeout", 1, "u"),
    ("sl", 1, "S"), ("gid-index", 1, "x"), ("all", 0, "a"), ("CPU-freq", 0, "F"),
    ("connection", 1, "c"), ("qp", 1, "q"), ("events", 0, "e"), ("vector", 1, "X"),
    ("inline_size", 1, "I"), ("outs", 1, "o"), ("mcg", 0, "g"), ("comm_rdma_cm", 0, "z"),
    ("rdma_cm", 0, "R"), ("tos", 1, "T"), ("hop_limit", 1, "L"), ("help", 0, "h"),
    ("MGID", 1, ""), ("rx-depth", 1, "r"), ("bidirectional", 0, "b"), ("cq-mod", 1, "Q"),
    ("noPeak", 0, "N"), ("version", 0, "V"), ("report-cycles", 0, "C"),
    ("report-histogrm", 0, "H"), ("report-unsorted", 0, "U"), ("atomic_type", 1, "A"),
    ("dualport", 0, "O"), ("post_list", 1, "l"), ("duration", 1, "D"), ("margin", 1, "f"),
    ("source_mac", 1, "B"), ("dest_mac", 1, "E"), ("dest_ip", 1, "J"), ("source_ip", 1, "j"),
    ("dest_port", 1, "K"), ("source_port", 1, "k"), ("ethertype", 1, "Y"),
    ("limit_bw", 1, "w"), ("limit_msgrate", 1, "y"), ("server", 0, "Z"), ("client", 0, "P"),
    ("mac_fwd", 0, "v"), ("use_rss", 0, "G"), ("report-counters", 1, ""),
    ("force-link", 1, ""), ("remote_mac", 1, ""), ("local_mac", 1, ""), ("remote_ip", 1, ""),
    ("local_ip", 1, ""), ("remote_port", 1, ""), ("local_port", 1, ""),
    ("run_infinitely", 0, ""), ("report_gbits", 0, ""), ("use-srq", 0, ""), ("no_lock", 0, ""),
    ("use-null-mr", 0, ""), ("report-both", 0, ""), ("reversed", 0, ""), ("pkey_index", 1, ""),
    ("tcp", 0, ""), ("burst_size", 1, ""), ("typical_pkt_size", 1, ""), ("rate_limit", 1, ""),
    ("rate_limit_type", 1, ""), ("rate_units", 1, ""), ("output", 1, ""), ("cpu_util", 0, ""),
    ("out_json", 0, ""), ("out_json_file", 1, ""), ("latency_gap", 1, ""),
    ("flow_label", 1, ""), ("retry_count", 1, ""), ("dont_xchg_versions", 0, ""),
    ("payload_file_path", 1, ""), ("use_cuda", 1, ""), ("use_cuda_bus_id", 1, ""),
    ("use_cuda_dmabuf", 0, ""), ("use_cuda_pcie_mapping", 0, ""), ("use_data_direct", 0, ""),
    ("cuda_mem_type", 1, ""), ("use_musa", 1, ""), ("use_musa_bus_id", 1, ""),
    ("use_musa_dmabuf", 0, ""), ("use_musa_pcie_mapping", 0, ""), ("use_rocm", 1, ""),
    ("use_rocm_dmabuf", 0, ""), ("use_neuron", 1, ""), ("use_neuron_dmabuf", 0, ""),
    ("use_hl", 1, ""), ("use_mlu", 1, ""), ("use_mlu_dmabuf", 0, ""), ("use_opencl", 1, ""),
    ("opencl_platform_id", 1, ""), ("use_ib_dm_dmabuf", 1, ""), ("gpu_touch", 1, ""),
    ("mmap", 1, ""), ("mmap-offset", 1, ""), ("ipv6", 0, ""), ("ipv6-addr", 0, ""),
    ("raw_ipv6", 0, ""), ("report-per-port", 0, ""), ("odp", 0, ""), ("use_hugepages", 0, ""),
    ("use_old_post_send", 0, ""), ("promiscuous", 0, ""), ("sniffer", 0, ""),
    ("raw_mcast", 0, ""), ("mr_per_qp", 0, ""), ("dlid", 1, ""), ("tclass", 1, ""),
    ("wait_destroy", 1, ""), ("flows", 1, ""), ("flows_burst", 1, ""), ("reply_every", 1, ""),
    ("perform_warm_up", 0, ""), ("vlan_en", 0, ""), ("vlan_pcp", 1, ""),
    ("recv_post_list", 1, ""), ("aes_xts", 0, ""), ("encrypt_on_tx", 0, ""),
    ("sig_before", 0, ""), ("aes_block_size", 1, ""), ("kek_path", 1, ""),
    ("credentials_path", 1, ""), ("data_enc_keys_number", 1, ""),
    ("data_enc_key_app_path", 1, ""), ("log_dci_streams", 1, ""),
    ("log_active_dci_streams", 1, ""), ("disable_pcie_relaxed", 0, ""), ("use_ooo", 0, ""),
    ("congest_type", 1, ""), ("bind_source_ip", 1, ""), ("write_with_imm", 0, ""),
    ("send_with_imm", 0, ""), ("no_enhanced_reorder", 0, ""), ("unsolicited_write", 0, ""),
    ("connectionless", 0, ""), ("cqe_poll", 1, ""), ("tph_mem", 1, ""), ("cpu_id", 1, ""),
    ("ph", 1, ""), ("disable_dynamic_polling", 0, ""), ("sig_offload", 0, ""),
    ("data_validation", 0, ""), ("data_validation_debug", 0, ""), ("pin_cores", 1, ""),
    ("numa_node", 1, ""), ("disable_numa", 0, ""),
)  # fmt: skip
DEFAULT_PORT = 18515
DEFAULT_ITERS = 5000
DEF_QP_TIME = 14  # perftest's default `-u`: 4.096 us x 2^14, a 67 ms ACK timeout
MAX_ITERS = 100_000_000
MAX_SIZE = 2**32 // 2 - 1


@dataclass
class Options:
    """What one `ib_write_bw` run was asked to do."""

    device: str = ""
    gid: int | None = None  # None: perftest picks the best GID (RoCE v2, IPv4)
    ib_port: int = 1
    qps: int = 1
    duration: float | None = None
    iters: int = DEFAULT_ITERS
    size: int = 65536
    all_sizes: bool = False
    bidir: bool = False
    gbits: bool = False
    cpu_util: bool = False
    run_infinitely: bool = False
    force_link: str = ""
    port: int = DEFAULT_PORT
    rdma_cm: bool = False
    tos: int | None = None
    mtu: int | None = None
    qp_timeout: int = DEF_QP_TIME  # the QPs' ACK timeout field (`physics.ack_timeout_s`)
    server_ip: str | None = None
    version: bool = False
    help: bool = False
    seen: list[str] = field(default_factory=list)  # canonical long names, in order


@dataclass
class Parsed:
    """Options, or the text and exit status of a refused command line."""

    options: Options
    stdout: str = ""
    stderr: str = ""
    status: int = 0

    @property
    def ok(self) -> bool:
        return self.status == 0 and not self.stderr


def _bad_flag(message: str) -> Parsed:
    return Parsed(
        Options(),
        stdout=USAGE,
        stderr=f"{PROG}: {message}\n Invalid Command or flag.\n"
        " Please check command line and run again.\n\n Parser function exited with Error\n",
        status=1,
    )


def _refused(message: str) -> Parsed:
    return Parsed(Options(), stderr=f"{message}\n Parser function exited with Error\n", status=1)


def _strtol(text: str) -> int | None:
    """C `strtol(text, &end, 0)` when the whole text is a number (base prefixes honoured)."""
    t = text.strip()
    sign = -1 if t.startswith("-") else 1
    t = t.lstrip("+-")
    try:
        if t.lower().startswith("0x"):
            return sign * int(t[2:], 16)
        if t.startswith("0") and len(t) > 1:
            return sign * int(t[1:], 8)
        return sign * int(t, 10)
    except ValueError:
        return None


def _strtol_prefix(text: str) -> int:
    """C `strtol(text, NULL, 0)`: the number the text begins with (0 when it begins with none)."""
    m = re.match(r"\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)", text)
    if m is None:
        return 0
    sign, digits = m.groups()
    n = (
        int(digits, 16)
        if digits[:2].lower() == "0x"
        else int(digits, 8 if digits[0] == "0" else 10)
    )
    return -n if sign == "-" else n


def _short_specs() -> dict[str, int]:
    """Each short option letter of `SHORT` and whether it takes an argument (getopt's `:`)."""
    shorts: dict[str, int] = {}
    i = 0
    while i < len(SHORT):
        letter = SHORT[i]
        takes = i + 1 < len(SHORT) and SHORT[i + 1] == ":"
        shorts[letter] = 1 if takes else 0
        i += 2 if takes else 1
    return shorts


Token = tuple[str, str | None]


def _long_option(a: str, args: list[str], k: int) -> tuple[Token, int] | Parsed:
    """`--name[=value]` (a unique prefix of a name will do); its value may be the next word.
    The token and the index of the next word, or the refusal."""
    longs = {name: (has_arg, letter) for name, has_arg, letter in LONG}
    name, eq, value = a[2:].partition("=")
    hits = [name] if name in longs else [n for n, _h, _l in LONG if n.startswith(name)]
    if not hits:
        return _bad_flag(f"unrecognized option '--{name}'")
    if len(hits) > 1:
        poss = " ".join(f"'--{h}'" for h in hits)
        return _bad_flag(f"option '--{name}' is ambiguous; possibilities: {poss}")
    full = hits[0]
    has_arg, _letter = longs[full]
    if has_arg == 0 and eq:
        return _bad_flag(f"option '--{full}' doesn't allow an argument")
    if has_arg == 1 and not eq:
        if k >= len(args):
            return _bad_flag(f"option '--{full}' requires an argument")
        value = args[k]
        k += 1
    return (full, value if has_arg else None), k


def _short_options(
    a: str, args: list[str], k: int, shorts: dict[str, int]
) -> tuple[list[Token], int] | Parsed:
    """A cluster of short options (`-abVALUE`, `-a -b VALUE`): its tokens and the index of the
    next word, or the refusal."""
    out: list[Token] = []
    j = 1
    while j < len(a):
        letter = a[j]
        j += 1
        if letter not in shorts:
            return _bad_flag(f"invalid option -- '{letter}'")
        if shorts[letter]:
            value = a[j:]
            if not value:
                if k >= len(args):
                    return _bad_flag(f"option requires an argument -- '{letter}'")
                value = args[k]
                k += 1
            out.append((letter, value))
            break
        out.append((letter, None))
    return out, k


def _tokens(args: list[str]) -> tuple[list[Token], list[str], Parsed | None]:
    """getopt_long with GNU permutation: (option key, value) pairs and the operands."""
    shorts = _short_specs()
    out: list[Token] = []
    operands: list[str] = []
    k = 0
    while k < len(args):
        a = args[k]
        k += 1
        if a == "--":
            operands += args[k:]
            break
        if a.startswith("--"):
            got = _long_option(a, args, k)
            if isinstance(got, Parsed):
                return [], [], got
            token, k = got
            out.append(token)
        elif a.startswith("-") and len(a) > 1:
            cluster = _short_options(a, args, k, shorts)
            if isinstance(cluster, Parsed):
                return [], [], cluster
            tokens, k = cluster
            out += tokens
        else:
            operands.append(a)
    return out, operands, None


_CANON = {letter: name for name, _h, letter in LONG if letter}


@dataclass(frozen=True)
class _Number:
    """A numeric option: the `Options` field it sets, perftest's refusal of a value that is not
    a number, the range it accepts and its refusal of one outside it (None: the first one)."""

    field: str
    not_a_number: str
    ok: Callable[[int], bool] | None = None
    out_of_range: str | None = None


_NUMBERS = {
    "gid-index": _Number(
        "gid",
        " Gid index argument {v} should be uint8_t",
        lambda n: 0 <= n <= 64,
        " Gid index should be between 0 and 64",
    ),
    "ib-port": _Number(
        "ib_port",
        " IB Port argument {v} should be uint8_t",
        lambda n: n >= 1,
        "IB Port can't be less than 1",
    ),
    "qp": _Number(
        "qps",
        " num of Qps argument {v} should be int",
        lambda n: 1 <= n <= 16384,
        " num of Qps should be between 1 and 16384",
    ),
    "iters": _Number(
        "iters",
        " Iteration num argument {v} should be uint64_t",
        lambda n: 5 <= n <= MAX_ITERS,
        f" Iteration num should be between 5 and {MAX_ITERS}",
    ),
    "duration": _Number(
        "duration",
        " Duration period argument {v} should be int",
        lambda n: n > 0,
        " Duration period must be positive",
    ),
    "port": _Number("port", " Port argument {v} should be int"),
    "tos": _Number("tos", " TOS argument {v} should be int", lambda n: 0 <= n <= 256),
    "mtu": _Number("mtu", " MTU argument {v} should be int"),
}

# the options that only switch something on
_SWITCHES = {
    "all": "all_sizes",
    "bidirectional": "bidir",
    "report_gbits": "gbits",
    "cpu_util": "cpu_util",
    "run_infinitely": "run_infinitely",
    "rdma_cm": "rdma_cm",
    "version": "version",
    "help": "help",
}


def _number(o: Options, rule: _Number, v: str) -> Parsed | None:
    n = _strtol(v)
    if n is None:
        return _refused(rule.not_a_number.format(v=v))
    if rule.ok is not None and not rule.ok(n):
        return _refused((rule.out_of_range or rule.not_a_number).format(v=v))
    setattr(o, rule.field, float(n) if rule.field == "duration" else n)
    return None


def _size(o: Options, v: str) -> Parsed | None:
    """`-s SIZE`, with perftest's K and M suffixes."""
    text, factor = v, 1
    if text.endswith("K"):
        text, factor = text[:-1], 1024
    elif text.endswith("M"):
        text, factor = text[:-1], 1024 * 1024
    n = _strtol(text) or 0
    if not 1 <= n * factor <= MAX_SIZE:
        return Parsed(
            Options(),
            stderr=f" Message Size should be between 1 and {MAX_SIZE}\n"
            " Parser function exited with Error\n",
            status=1,
        )
    o.size = n * factor
    return None


def _apply(o: Options, name: str, v: str) -> Parsed | None:
    """Set one option on `o`; the refusal when perftest rejects its value."""
    if name in _NUMBERS:
        return _number(o, _NUMBERS[name], v)
    if name in _SWITCHES:
        setattr(o, _SWITCHES[name], True)
    elif name == "ib-dev":
        o.device = v
    elif name == "qp-timeout":
        o.qp_timeout = _strtol_prefix(v) & 0xFF  # `(uint8_t)strtol(optarg, NULL, 0)`: no refusal
    elif name == "size":
        return _size(o, v)
    elif name == "force-link":
        if v not in ("IB", "ETHERNET"):
            return _refused("Invalid link layer value should be IB or ETHERNET.")
        o.force_link = v
    return None


def parse(args: list[str]) -> Parsed:
    """Parse an `ib_write_bw` command line as perftest does."""
    tokens, operands, refused = _tokens(args)
    if refused is not None:
        return refused
    o = Options()
    for key, value in tokens:
        name = _CANON.get(key, key)
        o.seen.append(name)
        refused = _apply(o, name, value or "")
        if refused is not None:
            return refused
    if o.help:
        return Parsed(o, stdout=USAGE, status=1)
    if o.version:
        return Parsed(o, stdout="Version: 6.06\n", status=1)
    if len(operands) > 1:
        return _refused(" Invalid Command line. Please check command rerun ")
    o.server_ip = operands[0] if operands else None
    if o.duration is not None and o.all_sizes:
        rule = "-" * 87 + "\n"
        return Parsed(
            o,
            stdout=rule,
            stderr="Duration mode currently doesn't support running on all sizes.\n",
            status=1,
        )
    return Parsed(o)
