"""Lab scenarios: a topology and a list of faults, as YAML (built-in by name, or a file path).

```yaml
name: crs804-three-bugs
description: The July 2026 CRS804 build: split cage, lossless QoS, duplicate IPs.
topology: {nodes: 4, switches: [{model: CRS804-4DDQ}], cables_per_node: 2}
faults:
  - id: switch.offload-split-cage
  - id: switch.qos-pfc-stall
  - id: host.duplicate-ip
    nodes: [spark2, spark3]
```

Validation errors name the file and the field (the records' checks are `wizard.schema`'s). `build_world` turns a scenario into a
booted `World`: nodes spark1..N in cabling order, switches from the RouterOS model,
ISLs on the native QSFP56 ports, optional campus uplinks on ether1, then the faults.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import yaml

from wizard.errors import ScenarioError
from wizard.lab.catalog import ALL_IDS, CRS804, CRS812
from wizard.lab.facts import Facts
from wizard.schema import (
    Check,
    SchemaError,
    choice,
    flag,
    mapping,
    optional,
    parse,
    record,
    sequence,
    text,
    validated,
    whole,
)

if TYPE_CHECKING:
    from wizard.lab.clock import Clock
    from wizard.lab.world import World

_TEXT = text(strip=False)
_NAMES = optional(sequence(_TEXT, as_list=True))


@dataclass(kw_only=True)
class SwitchSpec:
    model: Literal["CRS804-4DDQ", "CRS812-8DS-2DQ-2DDQ"]
    name: str | None = None
    uplink: bool = False  # a copper uplink from ether1 into the campus LAN

    SCHEMA: ClassVar[Mapping[str, Check]] = {
        "model": choice(CRS804, CRS812),
        "name": optional(_TEXT),
        "uplink": flag,
    }


@dataclass(kw_only=True)
class Topology:
    nodes: int
    switches: list[SwitchSpec] = field(default_factory=list)
    cables_per_node: Literal[1, 2] = 1
    isl: bool = True

    SCHEMA: ClassVar[Mapping[str, Check]] = {
        "nodes": whole(ge=1, le=64),
        "switches": sequence(record(SwitchSpec), max_length=12, as_list=True),
        "cables_per_node": choice(1, 2),
        "isl": flag,
    }


def _known(v: str) -> str:
    if v not in ALL_IDS:
        raise ValueError(f"unknown fault id {v!r}; expected one of FAULTS.md's ids")
    return v


@dataclass(kw_only=True)
class FaultSpec:
    id: str
    nodes: list[str] | None = None
    switches: list[str] | None = None
    ports: list[str] | None = None
    params: dict[str, Any] = field(default_factory=dict)

    SCHEMA: ClassVar[Mapping[str, Check]] = {
        "id": validated(_TEXT, _known),
        "nodes": _NAMES,
        "switches": _NAMES,
        "ports": _NAMES,
        "params": mapping(None, _TEXT),
    }


@dataclass(kw_only=True)
class Scenario:
    name: str
    description: str = ""
    source: str | None = None  # the seed document it reproduces (000..003)
    seed: int = 0
    topology: Topology
    faults: list[FaultSpec] = field(default_factory=list)
    facts: Facts = field(default_factory=Facts)

    SCHEMA: ClassVar[Mapping[str, Check]] = {
        "name": _TEXT,
        "description": _TEXT,
        "source": optional(_TEXT),
        "seed": whole(),
        "topology": record(Topology),
        "faults": sequence(record(FaultSpec), as_list=True),
        "facts": record(Facts),
    }

    @classmethod
    def from_data(cls, data: Any) -> Scenario:
        """A scenario from its loaded data (a file's, or a saved lab state's); raises
        SchemaError with every problem."""
        return parse(cls, data)


def _builtin_dir() -> Path:
    return Path(str(resources.files("wizard.lab") / "scenarios"))


def builtin_names() -> list[str]:
    return sorted(p.stem for p in _builtin_dir().glob("*.yaml"))


def load_text(text: str, *, path: str) -> Scenario:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        raise ScenarioError(
            f"not valid YAML: {exc}", path=path, line=None if line is None else line + 1
        ) from None
    if not isinstance(data, dict):
        raise ScenarioError("expected a mapping with name, topology, faults", path=path)
    try:
        scenario = Scenario.from_data(data)
    except SchemaError as exc:
        err = exc.errors()[0]
        field = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in err["loc"]).replace(
            ".[", "["
        )
        raise ScenarioError(
            err["msg"], path=path, field=field or None, hint=f"{len(exc.errors())} error(s)"
        ) from None
    _check_topology(scenario, path)
    return scenario


def _check_topology(s: Scenario, path: str) -> None:
    t = s.topology
    if not t.switches and t.nodes != 2:
        raise ScenarioError(
            f"a scenario without switches cables two nodes directly, not {t.nodes}",
            path=path,
            field="topology.nodes",
        )
    capacity = sum(
        len(_node_ports(sw.model, len(t.switches) > 1, _middle(i, len(t.switches), t.isl)))
        for i, sw in enumerate(t.switches)
    )
    if t.switches and t.nodes * t.cables_per_node > capacity:
        raise ScenarioError(
            f"{t.nodes} nodes x {t.cables_per_node} cables need more than the {capacity} "
            "200G ports of these switches",
            path=path,
            field="topology.nodes",
        )
    seen: set[str] = set()
    for sw in t.switches:
        name = getattr(sw, "name", None)
        if name is None:
            continue
        if name in seen:
            raise ScenarioError(
                f"duplicate switch name {name!r}: every switch needs its own name",
                path=path,
                field="topology.switches",
            )
        seen.add(name)
    names = {f"spark{i}" for i in range(1, t.nodes + 1)}
    for i, f in enumerate(s.faults):
        for n in f.nodes or []:
            if n not in names:
                raise ScenarioError(
                    f"no node {n!r} (nodes are spark1..spark{t.nodes})",
                    path=path,
                    field=f"faults[{i}].nodes",
                )
        if f.id.startswith("switch.") and not t.switches:
            raise ScenarioError(
                f"{f.id} needs a switch in the topology", path=path, field=f"faults[{i}].id"
            )
    _check_facts(s, names, path)


def _check_facts(s: Scenario, names: set[str], path: str) -> None:
    """Facts name nodes, switches and ports that exist in the topology."""
    switches = set(switch_names(s.topology))
    for section, keys in (
        ("nodes", s.facts.nodes),
        ("containers", s.facts.containers),
        ("processes", s.facts.processes),
    ):
        for n in keys:
            if n not in names:
                raise ScenarioError(
                    f"no node {n!r} (nodes are spark1..spark{s.topology.nodes})",
                    path=path,
                    field=f"facts.{section}.{n}",
                )
    for n in s.facts.switches:
        if n not in switches:
            raise ScenarioError(
                f"no switch {n!r} (switches are {', '.join(sorted(switches)) or 'none'})",
                path=path,
                field=f"facts.switches.{n}",
            )
    for key in s.facts.ports:
        sw, _, port = key.partition("/")
        if sw not in switches or not port:
            raise ScenarioError(
                f"a port is named switch/port, with a switch of the topology; not {key!r}",
                path=path,
                field=f"facts.ports.{key}",
            )


def load(name_or_path: str) -> Scenario:
    """A built-in scenario by name, or a scenario file by path."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists() or "/" in name_or_path:
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise ScenarioError(f"cannot read: {exc.strerror}", path=str(p)) from None
        return load_text(text, path=str(p))
    builtin = _builtin_dir() / f"{name_or_path}.yaml"
    if not builtin.exists():
        raise ScenarioError(
            f"no built-in scenario named {name_or_path!r}",
            path=name_or_path,
            hint="`fabwiz lab scenarios` lists them",
        )
    return load_text(builtin.read_text(encoding="utf-8"), path=str(builtin))


@dataclass(frozen=True, slots=True)
class ScenarioInfo:
    name: str
    description: str
    nodes: int
    switches: tuple[str, ...]
    faults: tuple[str, ...]


def list_builtin() -> list[ScenarioInfo]:
    out = []
    for name in builtin_names():
        s = load(name)
        out.append(
            ScenarioInfo(
                s.name,
                s.description,
                s.topology.nodes,
                tuple(sw.model for sw in s.topology.switches),
                tuple(f.id for f in s.faults),
            )
        )
    return out


# --- building the world ---------------------------------------------------------------------


def _node_ports(model: str, multi: bool, middle: bool = False) -> list[str]:
    """The 200G ports nodes are cabled to; a switch inside a chain keeps a second ISL port."""
    if model == CRS812:
        ports = ["qsfp56-dd-1-1", "qsfp56-dd-1-5", "qsfp56-dd-2-1", "qsfp56-dd-2-5", "qsfp56-2"]
        ports = ports if multi else [*ports, "qsfp56-1"]
    else:
        ports = [f"qsfp56-dd-{c}-{leg}" for c in range(1, 5) for leg in (1, 5)]
        ports = ports[:-1] if multi else ports
    return [p for p in ports if p != _second_isl_port(model)] if middle else ports


def _isl_port(model: str) -> str:
    return "qsfp56-1" if model == CRS812 else "qsfp56-dd-4-5"


def _second_isl_port(model: str) -> str:
    """A chained switch's ISL towards the next switch (its first ISL faces the previous one)."""
    return "qsfp56-2" if model == CRS812 else "qsfp56-dd-4-1"


def _middle(index: int, count: int, isl: bool) -> bool:
    return isl and 0 < index < count - 1


def switch_names(t: Topology) -> list[str]:
    names = []
    for i, sw in enumerate(t.switches):
        base = "crs804" if sw.model == CRS804 else "crs812"
        same = sum(1 for o in t.switches if o.model == sw.model)
        names.append(sw.name or (base if same == 1 else f"{base}-{chr(ord('a') + i)}"))
    return names


def build_world(
    scenario: Scenario,
    *,
    time_scale: float = 1.0,
    clock: Clock | Callable[[], float] | None = None,
) -> World:
    """The world of `scenario`; `clock` injects lab time (a test passes a `ManualClock` and
    advances it)."""
    from wizard.lab import boots, nmprofiles, nodetools, renderer, scenario_facts
    from wizard.lab import faults as fault_mod
    from wizard.lab.traffic import Traffic
    from wizard.lab.world import World

    world = World(seed=scenario.seed, time_scale=time_scale, name=scenario.name, clock=clock)
    world.facts = scenario.facts
    Traffic(world)
    t = scenario.topology
    for i in range(1, t.nodes + 1):
        world.add_node(f"spark{i}", i).powered = False
    nodetools.apply_naming(world)
    names = switch_names(t)
    _add_switches(world, scenario, names)
    _cable(world, t, names)
    world.planned_cabling = world.current_cabling()
    for node in world.nodes.values():
        world.boot(node)
        node.boot_time -= 3600 + 600 * node.index  # the nodes have been up a while
    boots.seed_history(world)
    renderer.apply_facts(world)
    nmprofiles.apply_facts(world)
    world.compute_rstp()
    for f in scenario.faults:
        fault_mod.inject(
            world, f.id, nodes=f.nodes, switches=f.switches, ports=f.ports, params=f.params
        )
    for switch in world.switches.values():
        if hasattr(switch, "management_port"):  # the wizard reaches each switch on ether1
            switch.management_port = "ether1"  # unless the scenario's facts say otherwise
    scenario_facts.apply(world)  # also: the legs the faults bounced have come up since
    world.traffic.recompute()
    return world


def _add_switches(world: World, scenario: Scenario, names: list[str]) -> None:
    """The topology's switches, each on the world's clock, at the RouterOS the facts tell."""
    from wizard.lab.switchport import new_switch

    for name, spec in zip(names, scenario.topology.switches, strict=True):
        switch = new_switch(name, spec.model, clock=world.now)
        told = scenario.facts.switches.get(name)
        if told is not None and told.routeros_version:
            from wizard.lab.routeros.switch import SwitchState

            if isinstance(switch, SwitchState):
                switch.routeros_version = told.routeros_version
        world.add_switch(name, spec.model, switch)


def _cable(world: World, t: Topology, names: list[str]) -> None:
    """The cables as built: node legs to switch ports (or node to node without a switch), the
    ISLs of a chain of switches, and the campus uplinks."""
    from wizard.lab.world import End

    if not t.switches:
        for p in range(t.cables_per_node):
            world.connect(End("node", "spark1", f"port{p}"), End("node", "spark2", f"port{p}"))
        return
    multi = len(t.switches) > 1
    slots = [
        (name, port)
        for i, (name, spec) in enumerate(zip(names, t.switches, strict=True))
        for port in _node_ports(spec.model, multi, _middle(i, len(names), t.isl))
    ]
    if multi:
        # fill the DD legs of each switch first, as the 003 build did (4 + 2)
        slots.sort(key=lambda s: (not s[1].startswith("qsfp56-dd"), names.index(s[0])))
    k = 0
    for i in range(1, t.nodes + 1):
        for p in range(t.cables_per_node):
            sw, port = slots[k]
            k += 1
            world.connect(End("node", f"spark{i}", f"port{p}"), End("switch", sw, port))
    if multi and t.isl:
        for i, (a, b, sa, sb) in enumerate(
            zip(names, names[1:], t.switches, t.switches[1:], strict=False)
        ):
            out = _second_isl_port(sa.model) if i > 0 else _isl_port(sa.model)
            world.connect(End("switch", a, out), End("switch", b, _isl_port(sb.model)))
    for name, spec in zip(names, t.switches, strict=True):
        if spec.uplink:
            world.connect(End("switch", name, "ether1"), End("campus", "campus", "lan"))
