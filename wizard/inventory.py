"""The inventory: which nodes and switches make up the fabric, and how to reach them.

A YAML file (see `examples/fabric.yaml`) validated with pydantic at the file boundary. Every
error names the file, the field (dotted path), the line when YAML gives it, and what is expected,
so a technician can fix a typo without reading a traceback. Relative paths (identity files,
known_hosts, password files, the lab's token file) are relative to the inventory file. A password
written in clear is accepted with a warning (`Inventory.warnings`); the other sources are an
environment variable, a prompt, the keyring, or a file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from wizard.errors import InventoryError

__all__ = [
    "Defaults",
    "ExpectationsValidator",
    "Inventory",
    "LabLink",
    "NodeSpec",
    "PasswordSource",
    "SwitchSpec",
    "load_inventory",
    "parse_inventory",
    "resolve_password",
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


class _InventoryFile(_Strict):
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


# --- loading ------------------------------------------------------------------------------


def load_inventory(
    path: str | os.PathLike[str],
    *,
    expectation_keys: Collection[str] | None = None,
    expectations: ExpectationsValidator | None = None,
) -> Inventory:
    """Read and validate an inventory file. Raises InventoryError naming file, field, line.

    `expectations` (flows' `validate_overrides`) types the `expectations:` overrides;
    `expectation_keys` (the field names of flows' Expectations) only refuses unknown keys."""
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InventoryError(
            "no such file", path=str(p), hint="give the inventory with -i PATH"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InventoryError(f"cannot read it: {exc}", path=str(p)) from None
    return parse_inventory(
        text, path=p, expectation_keys=expectation_keys, expectations=expectations
    )


def parse_inventory(
    text: str,
    *,
    path: str | os.PathLike[str] = "<inventory>",
    expectation_keys: Collection[str] | None = None,
    expectations: ExpectationsValidator | None = None,
) -> Inventory:
    """Validate inventory text; `path` names it in errors and anchors relative paths."""
    p = Path(path)
    name = str(p)
    try:
        root = yaml.compose(text, Loader=_Loader)
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    except _DuplicateKey as exc:
        raise InventoryError(
            f"key {exc.key!r} appears twice in the same mapping",
            path=name,
            line=exc.line,
            field=exc.key,
            hint="remove one of them",
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise InventoryError(
            f"not valid YAML: {problem}",
            path=name,
            line=None if mark is None else mark.line + 1,
            hint="check indentation and quoting around that line",
        ) from None
    if data is None:
        raise InventoryError(
            "the file is empty", path=name, hint="see examples/fabric.yaml for the shape"
        )
    if not isinstance(data, dict):
        raise InventoryError(
            f"expected a mapping with `nodes:` and `switches:`, got {type(data).__name__}",
            path=name,
            line=1,
        )
    try:
        model = _InventoryFile.model_validate(data)
    except ValidationError as exc:
        errors = _root_causes(exc.errors())
        err = errors[0]
        loc = tuple(err["loc"])
        field = _dotted(loc, data)
        more = len(errors) - 1
        raise InventoryError(
            _explain(err),
            path=name,
            field=field,
            line=_line_of(root, loc),
            hint=None if more == 0 else f"{more} more problem(s) after this one",
        ) from None
    overrides = _expectations(model, name, root, expectation_keys, expectations)
    return _build(model.model_copy(update={"expectations": overrides}), p, root)


def _build(model: _InventoryFile, p: Path, root: yaml.Node | None) -> Inventory:
    name = str(p)
    base = p.parent

    def rel(value: str | None) -> str | None:
        if value is None:
            return None
        q = Path(value).expanduser()
        return str(q if q.is_absolute() else base / q)

    _unique([n.name for n in model.nodes], "nodes", name, root)
    _unique([s.name for s in model.switches], "switches", name, root)
    d = model.defaults
    nodes = tuple(
        n.model_copy(
            update={
                "port": n.port or d.port,
                "user": n.user or d.user,
                "identity_file": rel(n.identity_file or d.identity_file),
                "known_hosts": rel(n.known_hosts or d.known_hosts),
                "tools": {**d.tools, **n.tools},
            }
        )
        for n in model.nodes
    )
    warnings: list[str] = []
    switches: list[SwitchSpec] = []
    for i, s in enumerate(model.switches):
        pw = s.password
        if isinstance(pw, str):
            warnings.append(
                f"{name}: switches.{i}.password: the password of switch {s.name!r} is written "
                "in clear; prefer {env: VAR}, {keyring: SERVICE} or {file: PATH} (mode 600)"
            )
        elif isinstance(pw, PasswordSource) and pw.file is not None:
            pw = pw.model_copy(update={"file": rel(pw.file)})
        switches.append(s.model_copy(update={"password": pw, "ca_file": rel(s.ca_file)}))
    node_names = {n.name for n in nodes}
    switch_names = {s.name for s in switches}
    cabling: dict[str, tuple[str, str]] = {}
    for key, dest in model.cabling.items():
        loc = ("cabling", key)
        node, _, netdev = key.partition("/")
        sw, _, port = dest.partition("/")
        if not netdev or not port:
            raise InventoryError(
                f"expected `node/netdev: switch/port`, got `{key}: {dest}`",
                path=name,
                field=f"cabling.{key}",
                line=_line_of(root, loc),
            )
        if node not in node_names:
            raise InventoryError(
                f"unknown node {node!r}; expected one of {sorted(node_names)}",
                path=name,
                field=f"cabling.{key}",
                line=_line_of(root, loc),
            )
        if sw not in switch_names:
            raise InventoryError(
                f"unknown switch {sw!r}; expected one of {sorted(switch_names)}",
                path=name,
                field=f"cabling.{key}",
                line=_line_of(root, loc),
            )
        cabling[key] = (sw, port)
    for node in model.addressing.hosts:
        if node not in node_names:
            raise InventoryError(
                f"unknown node {node!r}; expected one of {sorted(node_names)}",
                path=name,
                field=f"addressing.hosts.{node}",
                line=_line_of(root, ("addressing", "hosts", node)),
            )
    lab = model.lab
    if lab is not None and lab.token_file is not None:
        lab = lab.model_copy(update={"token_file": rel(lab.token_file)})
    return Inventory(
        path=p,
        name=model.name or p.stem,
        nodes=nodes,
        switches=tuple(switches),
        cabling=cabling,
        addressing_pattern=model.addressing.pattern,
        expectations=dict(model.expectations),
        lab=lab,
        known_good_firmware=model.known_good_firmware,
        warnings=tuple(warnings),
        nccl_devices=model.nccl.devices,
        addressing_hosts=dict(model.addressing.hosts),
    )


def _expectations(
    model: _InventoryFile,
    name: str,
    root: yaml.Node | None,
    keys: Collection[str] | None,
    validate: ExpectationsValidator | None,
) -> dict[str, Any]:
    """The `expectations:` overrides, checked: unknown keys (against `keys`) and, with
    `validate`, each value's type and range. Raises InventoryError naming file, line and key."""
    overrides = dict(model.expectations)
    if keys is not None:
        unknown = sorted(set(overrides) - set(keys))
        if unknown:
            raise InventoryError(
                f"unknown expectation {unknown[0]!r}; expected one of: " + ", ".join(sorted(keys)),
                path=name,
                field=f"expectations.{unknown[0]}",
                line=_line_of(root, ("expectations", unknown[0])),
            )
    if validate is None:
        return overrides
    try:
        validate(overrides)  # kept as written (sessions record them): with_overrides types them
    except ValidationError as exc:
        errors = _root_causes(exc.errors())
        err = errors[0]
        loc = ("expectations", *err["loc"])
        # an unknown key's message already says which keys are expected
        message = str(err["msg"]) if err["type"] == "extra_forbidden" else _explain(err)
        more = len(errors) - 1
        raise InventoryError(
            message,
            path=name,
            field=_dotted(loc, None),
            line=_line_of(root, loc),
            hint=None if more == 0 else f"{more} more problem(s) after this one",
        ) from None
    return overrides


def _unique(names: list[str], section: str, path: str, root: yaml.Node | None) -> None:
    seen: dict[str, int] = {}
    for i, n in enumerate(names):
        if n in seen:
            raise InventoryError(
                f"name {n!r} is used twice (entries {seen[n]} and {i}); expected unique names",
                path=path,
                field=f"{section}.{i}.name",
                line=_line_of(root, (section, i, "name")),
            )
        seen[n] = i


# --- passwords ----------------------------------------------------------------------------


def resolve_password(
    spec: SwitchSpec,
    *,
    env: Mapping[str, str] | None = None,
    prompt: Callable[[str], str] | None = None,
    keyring_get: Callable[[str, str], str | None] | None = None,
) -> str:
    """The switch password from its source. Raises InventoryError saying what is missing."""
    pw = spec.password
    where = f"switch {spec.name}"
    if pw is None:
        return ""
    if isinstance(pw, str):
        return pw
    if pw.env is not None:
        environ = os.environ if env is None else env
        if pw.env not in environ:
            raise InventoryError(
                f"environment variable {pw.env} is not set",
                path=where,
                field="password.env",
                hint=f"export {pw.env}=... before running fabwiz",
            )
        return environ[pw.env]
    if pw.file is not None:
        try:
            return Path(pw.file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise InventoryError(
                f"cannot read password file {pw.file}: {exc.strerror}",
                path=where,
                field="password.file",
            ) from None
    if pw.keyring is not None:
        getter = keyring_get
        if getter is None:
            import keyring

            def getter(service: str, user: str) -> str | None:
                value = keyring.get_password(service, user)
                return None if value is None else str(value)

        try:
            value = getter(pw.keyring, spec.user)
        except Exception as exc:  # keyring.errors.KeyringError: no backend, locked, refused
            raise InventoryError(
                f"the keyring could not be read for service {pw.keyring!r} ({exc})",
                path=where,
                field="password.keyring",
                hint="this machine has no usable keyring backend: install and unlock one "
                "(e.g. gnome-keyring, or `pip install keyrings.alt`), or give the password as "
                "{env: VAR} or {file: PATH}",
            ) from None
        if value is None:
            raise InventoryError(
                f"no password in the keyring for service {pw.keyring!r}, user {spec.user!r}",
                path=where,
                field="password.keyring",
                hint=f"keyring set {pw.keyring} {spec.user}",
            )
        return value
    if prompt is None:
        raise InventoryError(
            "the password must be typed, but there is no terminal to ask it on",
            path=where,
            field="password.prompt",
        )
    return prompt(f"Password for {spec.user}@{spec.name} ({spec.host}): ")


# --- error formatting ---------------------------------------------------------------------

_EXPECTED = {
    "missing": "this field is required",
    "extra_forbidden": "unknown key",
}


def _root_causes(errors: list[Any]) -> list[Any]:
    """Drop errors that only follow from a deeper one (an invalid item making its list short)."""
    locs = [tuple(e["loc"]) for e in errors]
    return [
        e
        for e, loc in zip(errors, locs, strict=True)
        if not any(len(o) > len(loc) and o[: len(loc)] == loc for o in locs)
    ] or errors


def _explain(err: Mapping[str, Any]) -> str:
    kind = str(err.get("type", ""))
    loc = tuple(err.get("loc", ()))
    if kind == "extra_forbidden":
        known = _known_keys(loc[:-1])
        tail = f"; expected one of: {', '.join(known)}" if known else ""
        return f"unknown key {loc[-1]!r}{tail}"
    if kind == "missing":
        if loc and loc[0] == "nodes" and loc[-1] == "host":
            return (
                "this field is required: give the node's address or its ~/.ssh/config alias "
                "(fabwiz never looks a bare node name up in DNS)"
            )
        return "this field is required"
    got = err.get("input")
    msg = str(err.get("msg", "invalid"))
    msg = msg.removeprefix("Value error, ")
    shown = repr(got) if not isinstance(got, dict | list) else type(got).__name__
    return f"{msg} (got {shown})"


def _known_keys(loc: tuple[Any, ...]) -> list[str]:
    model: type[BaseModel] = _InventoryFile
    sections: dict[str, type[BaseModel]] = {
        "nodes": NodeSpec,
        "switches": SwitchSpec,
        "defaults": Defaults,
        "lab": LabLink,
        "addressing": Addressing,
    }
    for part in loc:
        if isinstance(part, str) and part in sections and model is _InventoryFile:
            model = sections[part]
        elif part in {"password", "PasswordSource"}:
            model = PasswordSource
    return sorted(model.model_fields)


_UNION_TAGS = frozenset({"str", "PasswordSource", "function-after[_has_fields(), str]"})


def _dotted(loc: tuple[Any, ...], data: Any) -> str:
    # pydantic puts union member names in the loc (`str`, `PasswordSource`): drop them
    parts = [str(p) for p in loc if not (isinstance(p, str) and p in _UNION_TAGS)]
    return ".".join(parts)


def _line_of(root: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """The 1-based line of the YAML node at `loc` (or its deepest existing parent)."""
    node = root
    line = None if node is None else node.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            nxt = None
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value == str(part):
                    nxt = v
                    line = k.start_mark.line + 1
                    break
            if nxt is None:
                return line
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                return line
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


class _DuplicateKey(Exception):
    def __init__(self, key: str, line: int) -> None:
        super().__init__(key)
        self.key = key
        self.line = line


class _Loader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys (PyYAML silently keeps the last one)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for k, _v in node.value:
            key = self.construct_object(k, deep=deep)
            if key in seen:
                raise _DuplicateKey(str(key), k.start_mark.line + 1)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)
