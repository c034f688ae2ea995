"""The inventory's shape: frozen dataclasses of the YAML file, and the validated `Inventory`.

Every record refuses unknown keys and is frozen; its `SCHEMA` gives each field's check
(`wizard.schema`). `wizard.inventory` loads a file into them and turns their problems
into messages naming the file, the line and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

from wizard.schema import (
    Check,
    Loc,
    Problem,
    build,
    choice,
    fail,
    flag,
    mapping,
    number,
    optional,
    record,
    sequence,
    text,
    validated,
    whole,
)

__all__ = [
    "Addressing",
    "Defaults",
    "ExpectationsValidator",
    "Inventory",
    "InventoryFile",
    "LabLink",
    "NcclPolicy",
    "NodeSpec",
    "PasswordSource",
    "SwitchSpec",
    "TlsSpec",
]

_NAME = text(
    min_length=1, pattern=r"^[A-Za-z0-9._-]+$", means="letters, digits, '.', '_' or '-' only"
)
_PORT = optional(whole(ge=1, le=65535))
_PATH = optional(text())
_TEXT = text()


class ExpectationsValidator(Protocol):
    """Checks the `expectations:` overrides against their types (flows' `validate_overrides`):
    raises pydantic's ValidationError whose `loc` starts with the key (an unknown key: type
    `extra_forbidden`, its message naming the known ones)."""

    def __call__(self, overrides: Mapping[str, Any], /) -> object: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class PasswordSource:
    """Where a switch password comes from: exactly one of env, prompt, keyring, file."""

    env: str | None = None
    prompt: bool | None = None
    keyring: str | None = None
    file: str | None = None

    SCHEMA: ClassVar[Mapping[str, Check]] = {
        "env": optional(text()),
        "prompt": optional(flag),
        "keyring": optional(text()),
        "file": _PATH,
    }

    def check_record(self) -> None:
        given = [k for k in ("env", "prompt", "keyring", "file") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of {env: VAR}, {prompt: true}, {keyring: SERVICE}, "
                f"{{file: PATH}} (got {', '.join(given) or 'none'})"
            )

    @property
    def kind(self) -> str:
        for k in ("env", "prompt", "keyring", "file"):
            if getattr(self, k) is not None:
                return k
        return "none"  # pragma: no cover - excluded by validation


def _check_tools(v: dict[str, str]) -> dict[str, str]:
    from wizard.readiness import TOOLS

    names = [t.name for t in TOOLS]
    for tool, path in v.items():
        if tool not in names:
            raise ValueError(f"unknown tool {tool!r}; expected one of {', '.join(names)}")
        if not path.startswith("/"):
            raise ValueError(f"{tool}: {path!r} is not an absolute path on the node")
    return v


_TOOLS = validated(mapping(text()), _check_tools)  # tool -> absolute path on the nodes


@dataclass(frozen=True, slots=True, kw_only=True)
class Defaults:
    user: str | None = None
    port: int | None = None  # None: ~/.ssh/config or 22
    identity_file: str | None = None
    known_hosts: str | None = None
    tools: dict[str, str] = field(default_factory=dict)  # tool -> absolute path on the nodes

    SCHEMA: ClassVar[Mapping[str, Check]] = {
        "user": optional(text()),
        "port": _PORT,
        "identity_file": _PATH,
        "known_hosts": _PATH,
        "tools": _TOOLS,
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeSpec:
    name: str
    # address or ~/.ssh/config alias: required, a bare node name is never looked up in DNS
    host: str
    port: int | None = None
    user: str | None = None
    identity_file: str | None = None
    known_hosts: str | None = None
    tools: dict[str, str] = field(default_factory=dict)  # tool -> absolute path on this node
    # the container the real job runs in: its environment is where NCCL settings count
    job_container: str | None = None
    # or the process it runs as (its /proc/<pid>/comm name, as `pgrep -x` matches it)
    job_process: str | None = None

    SCHEMA: ClassVar[Mapping[str, Check]] = {
        "name": _NAME,
        "host": text(min_length=1),
        "port": _PORT,
        "user": optional(text()),
        "identity_file": _PATH,
        "known_hosts": _PATH,
        "tools": _TOOLS,
        "job_container": optional(
            text(
                pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
                means="a container name: a letter or digit, then letters, digits, '_', '.', '-'",
            )
        ),
        "job_process": optional(
            text(
                pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:+-]{0,14}$",
                means="a process name as /proc/PID/comm shows it (1 to 15 characters)",
            )
        ),
    }

    @property
    def address(self) -> str:
        return self.host


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsSpec:
    """How API-SSL is trusted: a pinned certificate, a CA file, or (opt-in) none at all."""

    fingerprint: str | None = None
    ca_file: str | None = None
    anonymous: bool = False  # RouterOS' certificate-less default api-ssl: not authenticated

    SCHEMA: ClassVar[Mapping[str, Check]] = {
        "fingerprint": optional(
            text(
                pattern=r"^sha256:([0-9A-Fa-f]{2}:?){31}[0-9A-Fa-f]{2}$",
                means="sha256: then the certificate's 32 bytes in hex (sha256:0F:3A:...)",
            )
        ),
        "ca_file": _PATH,
        "anonymous": flag,
    }


def _tls(value: Any, loc: Loc, errors: list[Problem]) -> Any:
    if isinstance(value, bool | TlsSpec):
        return value
    if isinstance(value, dict):
        return build(TlsSpec, value, loc, errors)
    return fail(
        errors,
        "value_error",
        loc,
        "Value error, expected a boolean (true: verify against the system CAs or ca_file) or "
        "{fingerprint: sha256:..., ca_file: PATH, anonymous: true}",
        value,
    )


def _password(value: Any, loc: Loc, errors: list[Problem]) -> Any:
    if value is None or isinstance(value, PasswordSource):
        return value
    if isinstance(value, str):
        return _TEXT(value, loc, errors)
    if isinstance(value, dict):
        unknown = sorted((k for k in value if k not in PasswordSource.SCHEMA), key=str)
        if unknown:
            return fail(
                errors,
                "value_error",
                loc,
                f"Value error, unknown password source {unknown[0]!r}; expected {{env: VAR}}, "
                "{prompt: true}, {keyring: SERVICE} or {file: PATH}",
                value,
            )
        return build(PasswordSource, value, loc, errors)
    return fail(
        errors,
        "value_error",
        loc,
        "Value error, expected a string or one of {env: VAR}, {prompt: true}, "
        "{keyring: SERVICE}, {file: PATH}",
        value,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class SwitchSpec:
    name: str
    model: Literal["CRS804-4DDQ", "CRS812-8DS-2DQ-2DDQ"] | None = None
    host: str
    port: int | None = None
    tls: bool | TlsSpec = False
    user: str = "admin"
    password: str | PasswordSource | None = None
    management_ports: tuple[str, ...] = ("ether1",)
    ca_file: str | None = None  # for API-SSL: a CA bundle; default: no verification warning
    timeout_s: float = 10.0

    SCHEMA: ClassVar[Mapping[str, Check]] = {
        "name": _NAME,
        "model": optional(choice("CRS804-4DDQ", "CRS812-8DS-2DQ-2DDQ")),
        "host": text(min_length=1),
        "port": _PORT,
        "tls": _tls,
        "user": text(),
        "password": _password,
        "management_ports": sequence(text()),
        "ca_file": _PATH,
        "timeout_s": number(gt=0),
    }

    @property
    def api_port(self) -> int:
        return self.port or (8729 if self.tls else 8728)


@dataclass(frozen=True, slots=True, kw_only=True)
class LabLink:
    control: str
    token_file: str | None = None

    SCHEMA: ClassVar[Mapping[str, Check]] = {"control": text(), "token_file": _PATH}


def _unique_octets(v: dict[str, int]) -> dict[str, int]:
    seen: dict[int, str] = {}
    for node, octet in v.items():
        if not 1 <= octet <= 254:
            raise ValueError(f"{node}: host octet {octet} is not in 1..254")
        if octet in seen:
            raise ValueError(f"{seen[octet]} and {node} both have host octet {octet}")
        seen[octet] = node
    return v


def _has_fields(v: str) -> str:
    if "{rail}" not in v or "{host}" not in v:
        raise ValueError("must contain {rail} and {host}, e.g. '10.9.{rail}.{host}/24'")
    return v


@dataclass(frozen=True, slots=True, kw_only=True)
class Addressing:
    pattern: str = "10.9.{rail}.{host}/24"
    # node -> host octet, for names whose trailing digits do not give unique ones
    hosts: dict[str, int] = field(default_factory=dict)

    SCHEMA: ClassVar[Mapping[str, Check]] = {
        "pattern": validated(text(), _has_fields),
        "hosts": validated(mapping(whole()), _unique_octets),
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclPolicy:
    """`nccl: {devices: one|all}`: whether NCCL is meant to use one RDMA device per node (a
    latency-bound workload measured faster that way) or every active one."""

    devices: Literal["one", "all"] | None = None

    SCHEMA: ClassVar[Mapping[str, Check]] = {"devices": optional(choice("one", "all"))}


@dataclass(frozen=True, slots=True, kw_only=True)
class InventoryFile:
    name: str | None = None
    lab: LabLink | None = None
    defaults: Defaults = field(default_factory=Defaults)
    nodes: tuple[NodeSpec, ...]
    switches: tuple[SwitchSpec, ...] = ()
    cabling: dict[str, str] = field(default_factory=dict)
    addressing: Addressing = field(default_factory=Addressing)
    expectations: dict[str, Any] = field(default_factory=dict)
    known_good_firmware: str | None = None
    nccl: NcclPolicy = field(default_factory=NcclPolicy)

    SCHEMA: ClassVar[Mapping[str, Check]] = {
        "name": optional(text()),
        "lab": optional(record(LabLink)),
        "defaults": record(Defaults),
        "nodes": sequence(record(NodeSpec), min_length=1),
        "switches": sequence(record(SwitchSpec)),
        "cabling": mapping(text()),
        "addressing": record(Addressing),
        "expectations": mapping(None),
        "known_good_firmware": optional(text()),
        "nccl": record(NcclPolicy),
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class Inventory:
    """A validated inventory with paths resolved and defaults applied."""

    path: Path
    name: str
    nodes: tuple[NodeSpec, ...]
    switches: tuple[SwitchSpec, ...]
    cabling: Mapping[str, tuple[str, str]]  # "node/netdev" -> (switch, port)
    addressing_pattern: str
    expectations: Mapping[str, Any]
    lab: LabLink | None
    known_good_firmware: str | None
    warnings: tuple[str, ...] = ()
    nccl_devices: str | None = None  # `nccl: {devices: one|all}`
    addressing_hosts: Mapping[str, int] = field(default_factory=dict)  # node -> host octet

    def node(self, name: str) -> NodeSpec:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def switch(self, name: str) -> SwitchSpec:
        for s in self.switches:
            if s.name == name:
                return s
        raise KeyError(name)

    @property
    def lab_token(self) -> str | None:
        if self.lab is None or self.lab.token_file is None:
            return None
        return Path(self.lab.token_file).read_text(encoding="utf-8").strip()
