"""The host's netplan as found, so the fabric fix edits it instead of fighting it.

DGX OS ships `renderer: NetworkManager` (seed 000's `/etc/netplan/98-roce-4rail.yaml`, NVIDIA's
playbook); other hosts use networkd. netplan merges every file in name order and the last
`network.renderer` wins for every interface without its own: a fabric file that says
`renderer: networkd` on a NetworkManager host moves every interface to another renderer (links go
down, the management port with them). So the fix keeps the renderer it finds, edits the file that
already defines the fabric netdevs (the backup is taken by the fix executor), and says when a
renderer change bounces links.

Pure functions over `sudo -n grep -H . /etc/netplan/*.yaml` output.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from wizard.probes import HostProbe
from wizard.yamlload import safe_load

PROBE = HostProbe(name="netplan.files", command="grep -H . /etc/netplan/*.yaml", sudo=True)
DEFAULT_RENDERER = "networkd"
_LINE = re.compile(r"^(/etc/netplan/[^:\s]+\.ya?ml):(.*)$")


def parse_files(text: str) -> dict[str, str]:
    """`grep -H .` output -> path -> content (blank lines dropped, which YAML does not need)."""
    files: dict[str, list[str]] = {}
    for raw in text.splitlines():
        m = _LINE.match(raw)
        if m:
            files.setdefault(m.group(1), []).append(m.group(2))
    return {p: "\n".join(lines) + "\n" for p, lines in sorted(files.items())}


def _doc(text: str) -> dict[str, Any]:
    try:
        data = safe_load(text) or {}
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def _network(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    net = doc.get("network")
    return net if isinstance(net, dict) else {}


@dataclass(frozen=True, slots=True)
class Found:
    renderer: str  # what the fabric netdevs are rendered by now
    path: str | None  # the file that defines them (the last one, which wins), if any
    doc: dict[str, Any]  # its content, to be edited in place


def found(files: Mapping[str, str], netdevs: Iterable[str]) -> Found:
    """The renderer in force for the fabric netdevs and the file that defines them."""
    wanted = set(netdevs)
    renderer = DEFAULT_RENDERER
    path: str | None = None
    doc: dict[str, Any] = {}
    own: str | None = None
    for p in sorted(files):
        d = _doc(files[p])
        net = _network(d)
        if isinstance(net.get("renderer"), str):
            renderer = str(net["renderer"])
        eths = net.get("ethernets")
        if isinstance(eths, dict) and wanted & set(map(str, eths)):
            path, doc = p, d
            per = [
                c.get("renderer") for n, c in eths.items() if n in wanted and isinstance(c, dict)
            ]
            own = next((str(r) for r in per if isinstance(r, str)), own)
    return Found(own or renderer, path, doc)


def edited(
    doc: Mapping[str, Any], ethernets: Mapping[str, Mapping[str, Any]], renderer: str
) -> dict[str, Any]:
    """`doc` with the fabric netdevs' entries replaced and everything else kept."""
    out = dict(doc)
    net = dict(_network(doc))
    net.setdefault("version", 2)
    net["renderer"] = renderer
    eths = dict(net.get("ethernets") or {})
    for name, cfg in ethernets.items():
        eths[name] = dict(cfg)
    net["ethernets"] = eths
    out["network"] = net
    return out
