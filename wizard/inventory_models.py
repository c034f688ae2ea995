"""The inventory's shape: pydantic models of the YAML file, and the validated `Inventory`.

Every model refuses unknown keys and is frozen; `wizard.inventory` loads a file into them and
turns their validation errors into messages naming the file, the line and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

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


class ExpectationsValidator(Protocol):
    """Checks the `expectations:` overrides against their types (flows' `validate_overrides`):
    raises pydantic's ValidationError whose `loc` starts with the key (an unknown key: type
    `extra_forbidden`, its message naming the known ones)."""

    def __call__(self, overrides: Mapping[str, Any], /) -> object: ...


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


class PasswordSource(_Strict):
    """Where a switch password comes from: exactly one of env, prompt, keyring, file."""

    env: str | None = None
    prompt: bool | None = None
    keyring: str | None = None
    file: str | None = None

    def model_post_init(self, context: Any, /) -> None:
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


class Defaults(_Strict):
    user: str | None = None
    port: int | None = Field(default=None, ge=1, le=65535)  # None: ~/.ssh/config or 22
    identity_file: str | None = None
    known_hosts: str | None = None
    tools: dict[str, str] = Field(default_factory=dict)  # tool -> absolute path on the nodes

    @field_validator("tools")
    @classmethod
    def _tools(cls, v: dict[str, str]) -> dict[str, str]:
        return _check_tools(v)


def _check_tools(v: dict[str, str]) -> dict[str, str]:
    from wizard.readiness import TOOLS

    names = [t.name for t in TOOLS]
    for tool, path in v.items():
        if tool not in names:
            raise ValueError(f"unknown tool {tool!r}; expected one of {', '.join(names)}")
        if not path.startswith("/"):
            raise ValueError(f"{tool}: {path!r} is not an absolute path on the node")
    return v


class NodeSpec(_Strict):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9._-]+$")
    # address or ~/.ssh/config alias: required, a bare node name is never looked up in DNS
    host: str = Field(min_length=1)
    port: int | None = Field(default=None, ge=1, le=65535)
    user: str | None = None
    identity_file: str | None = None
    known_hosts: str | None = None
    tools: dict[str, str] = Field(default_factory=dict)  # tool -> absolute path on this node
    # the container the real job runs in: its environment is where NCCL settings count
    job_container: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    # or the process it runs as (its /proc/<pid>/comm name, as `pgrep -x` matches it)
    job_process: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:+-]{0,14}$")

    @field_validator("tools")
    @classmethod
    def _tools(cls, v: dict[str, str]) -> dict[str, str]:
        return _check_tools(v)

    @property
    def address(self) -> str:
        return self.host


class TlsSpec(_Strict):
    """How API-SSL is trusted: a pinned certificate, a CA file, or (opt-in) none at all."""

    fingerprint: str | None = Field(
        default=None, pattern=r"^sha256:([0-9A-Fa-f]{2}:?){31}[0-9A-Fa-f]{2}$"
    )
    ca_file: str | None = None
    anonymous: bool = False  # RouterOS' certificate-less default api-ssl: not authenticated


class SwitchSpec(_Strict):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9._-]+$")
    model: Literal["CRS804-4DDQ", "CRS812-8DS-2DQ-2DDQ"] | None = None
    host: str = Field(min_length=1)
    port: int | None = Field(default=None, ge=1, le=65535)
    tls: bool | TlsSpec = False
    user: str = "admin"
    password: str | PasswordSource | None = None
    management_ports: tuple[str, ...] = ("ether1",)
    ca_file: str | None = None  # for API-SSL: a CA bundle; default: no verification warning
    timeout_s: float = Field(default=10.0, gt=0)

    @field_validator("tls", mode="before")
    @classmethod
    def _tls(cls, v: Any) -> Any:
        if isinstance(v, bool | TlsSpec):
            return v
        if isinstance(v, dict):
            return TlsSpec.model_validate(v)
        raise ValueError(
            "expected a boolean (true: verify against the system CAs or ca_file) or "
            "{fingerprint: sha256:..., ca_file: PATH, anonymous: true}"
        )

    @field_validator("password", mode="before")
    @classmethod
    def _password(cls, v: Any) -> Any:
        if v is None or isinstance(v, str | PasswordSource):
            return v
        if isinstance(v, dict):
            unknown = sorted(set(v) - set(PasswordSource.model_fields))
            if unknown:
                raise ValueError(
                    f"unknown password source {unknown[0]!r}; expected {{env: VAR}}, "
                    "{prompt: true}, {keyring: SERVICE} or {file: PATH}"
                )
            return PasswordSource.model_validate(v)
        raise ValueError(
            "expected a string or one of {env: VAR}, {prompt: true}, {keyring: SERVICE}, "
            "{file: PATH}"
        )

    @property
    def api_port(self) -> int:
        return self.port or (8729 if self.tls else 8728)


class LabLink(_Strict):
    control: str
    token_file: str | None = None


class Addressing(_Strict):
    pattern: str = "10.9.{rail}.{host}/24"
    # node -> host octet, for names whose trailing digits do not give unique ones
    hosts: dict[str, int] = Field(default_factory=dict)

    @field_validator("hosts")
    @classmethod
    def _unique_octets(cls, v: dict[str, int]) -> dict[str, int]:
        seen: dict[int, str] = {}
        for node, octet in v.items():
            if not 1 <= octet <= 254:
                raise ValueError(f"{node}: host octet {octet} is not in 1..254")
            if octet in seen:
                raise ValueError(f"{seen[octet]} and {node} both have host octet {octet}")
            seen[octet] = node
        return v

    @field_validator("pattern")
    @classmethod
    def _has_fields(cls, v: str) -> str:
        if "{rail}" not in v or "{host}" not in v:
            raise ValueError("must contain {rail} and {host}, e.g. '10.9.{rail}.{host}/24'")
        return v


class NcclPolicy(_Strict):
    """`nccl: {devices: one|all}`: whether NCCL is meant to use one RDMA device per node (a
    latency-bound workload measured faster that way) or every active one."""

    devices: Literal["one", "all"] | None = None


class InventoryFile(_Strict):
    name: str | None = None
    lab: LabLink | None = None
    defaults: Defaults = Defaults()
    nodes: tuple[NodeSpec, ...] = Field(min_length=1)
    switches: tuple[SwitchSpec, ...] = ()
    cabling: dict[str, str] = Field(default_factory=dict)
    addressing: Addressing = Addressing()
    expectations: dict[str, Any] = Field(default_factory=dict)
    known_good_firmware: str | None = None
    nccl: NcclPolicy = NcclPolicy()


@dataclass(frozen=True, slots=True)
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
