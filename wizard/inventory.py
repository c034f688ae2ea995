"""The inventory: which nodes and switches make up the fabric, and how to reach them.

A YAML file (see `examples/fabric.yaml`) validated at the file boundary. Every
error names the file, the field (dotted path), the line when YAML gives it, and what is expected,
so a technician can fix a typo without reading a traceback. Relative paths (identity files,
known_hosts, password files, the lab's token file) are relative to the inventory file. A password
written in clear is accepted with a warning (`Inventory.warnings`); the other sources are an
environment variable, a prompt, the keyring, or a file (`wizard.inventory_passwords`).

The file's models are in `wizard.inventory_models`, the YAML line of a field and the wording of
an error in `wizard.inventory_yaml`; the `expectations:` overrides are typed by the validator
the caller passes (flows' `validate_overrides`: this layer does not know the table).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import yaml

from wizard.errors import InventoryError
from wizard.inventory_models import (
    Defaults,
    ExpectationsValidator,
    Inventory,
    InventoryFile,
    LabLink,
    NodeSpec,
    PasswordSource,
    SwitchSpec,
)
from wizard.inventory_passwords import resolve_password
from wizard.inventory_yaml import DuplicateKey, Loader, dotted, explain, line_of, root_causes
from wizard.schema import SchemaError, parse

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
        root = yaml.compose(text, Loader=Loader)
        data = yaml.load(text, Loader=Loader)  # noqa: S506 - Loader is a SafeLoader
    except DuplicateKey as exc:
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
        model = parse(InventoryFile, data)
    except SchemaError as exc:
        errors = root_causes(exc.errors())
        err = errors[0]
        loc = tuple(err["loc"])
        field = dotted(loc)
        more = len(errors) - 1
        raise InventoryError(
            explain(err),
            path=name,
            field=field,
            line=line_of(root, loc),
            hint=None if more == 0 else f"{more} more problem(s) after this one",
        ) from None
    overrides = _expectations(model, name, root, expectation_keys, expectations)
    return _build(dataclasses.replace(model, expectations=overrides), p, root)


def _build(model: InventoryFile, p: Path, root: yaml.Node | None) -> Inventory:
    name = str(p)
    rel = _relative_to(p.parent)
    _unique([n.name for n in model.nodes], "nodes", name, root)
    _unique([s.name for s in model.switches], "switches", name, root)
    nodes = _nodes(model, rel)
    switches, warnings = _switches(model, name, rel)
    node_names = {n.name for n in nodes}
    cabling = _cabling(model, name, root, node_names, {s.name for s in switches})
    for node in model.addressing.hosts:
        if node not in node_names:
            raise InventoryError(
                f"unknown node {node!r}; expected one of {sorted(node_names)}",
                path=name,
                field=f"addressing.hosts.{node}",
                line=line_of(root, ("addressing", "hosts", node)),
            )
    lab = model.lab
    if lab is not None and lab.token_file is not None:
        lab = dataclasses.replace(lab, token_file=rel(lab.token_file))
    return Inventory(
        path=p,
        name=model.name or p.stem,
        nodes=nodes,
        switches=switches,
        cabling=cabling,
        addressing_pattern=model.addressing.pattern,
        expectations=dict(model.expectations),
        lab=lab,
        known_good_firmware=model.known_good_firmware,
        warnings=warnings,
        nccl_devices=model.nccl.devices,
        addressing_hosts=dict(model.addressing.hosts),
    )


def _relative_to(base: Path) -> Callable[[str | None], str | None]:
    """A path of the inventory made absolute: `~` expanded, relative to the inventory's folder."""

    def rel(value: str | None) -> str | None:
        if value is None:
            return None
        q = Path(value).expanduser()
        return str(q if q.is_absolute() else base / q)

    return rel


def _nodes(model: InventoryFile, rel: Callable[[str | None], str | None]) -> tuple[NodeSpec, ...]:
    """The nodes with `defaults:` applied and their paths resolved."""
    d = model.defaults
    return tuple(
        dataclasses.replace(
            n,
            port=n.port or d.port,
            user=n.user or d.user,
            identity_file=rel(n.identity_file or d.identity_file),
            known_hosts=rel(n.known_hosts or d.known_hosts),
            tools={**d.tools, **n.tools},
        )
        for n in model.nodes
    )


def _switches(
    model: InventoryFile, name: str, rel: Callable[[str | None], str | None]
) -> tuple[tuple[SwitchSpec, ...], tuple[str, ...]]:
    """The switches with their paths resolved, and a warning per password written in clear."""
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
            pw = dataclasses.replace(pw, file=rel(pw.file))
        switches.append(dataclasses.replace(s, password=pw, ca_file=rel(s.ca_file)))
    return tuple(switches), tuple(warnings)


def _cabling(
    model: InventoryFile,
    name: str,
    root: yaml.Node | None,
    node_names: set[str],
    switch_names: set[str],
) -> dict[str, tuple[str, str]]:
    """`node/netdev: switch/port` entries, each naming a known node and switch."""
    cabling: dict[str, tuple[str, str]] = {}
    for key, dest in model.cabling.items():
        node, _, netdev = key.partition("/")
        sw, _, port = dest.partition("/")
        problem = None
        if not netdev or not port:
            problem = f"expected `node/netdev: switch/port`, got {key!r}: {dest!r}"
        elif node not in node_names:
            problem = f"unknown node {node!r}; expected one of {sorted(node_names)}"
        elif sw not in switch_names:
            problem = f"unknown switch {sw!r}; expected one of {sorted(switch_names)}"
        if problem is not None:
            raise InventoryError(
                problem, path=name, field=f"cabling.{key}", line=line_of(root, ("cabling", key))
            )
        cabling[key] = (sw, port)
    return cabling


def _expectations(
    model: InventoryFile,
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
                line=line_of(root, ("expectations", unknown[0])),
            )
    if validate is None or not overrides:
        return overrides
    from pydantic import ValidationError  # the validator's own errors: loaded with it

    try:
        validate(overrides)  # kept as written (sessions record them): with_overrides types them
    except ValidationError as exc:
        errors = root_causes(exc.errors())
        err = errors[0]
        loc = ("expectations", *err["loc"])
        # an unknown key's message already says which keys are expected
        message = str(err["msg"]) if err["type"] == "extra_forbidden" else explain(err)
        more = len(errors) - 1
        raise InventoryError(
            message,
            path=name,
            field=dotted(loc),
            line=line_of(root, loc),
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
                line=line_of(root, (section, i, "name")),
            )
        seen[n] = i
