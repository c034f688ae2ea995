"""The lab's control channel: its hands (and fault hooks) over 127.0.0.1, guarded by a token.

Protocol: one JSON object per line. Request `{"token": T, "action": A, "args": [...]}`, reply
`{"ok": true, "result": ...}` or `{"ok": false, "error": "..."}`. Actions are the words an
instructor types at the `fabwiz lab` prompt, so the prompt, `fabwiz lab hands ACTION ...` and
the wizard (offering "perform this physical action in the lab") share one dispatcher.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from wizard.errors import FabwizError
from wizard.lab import faults as fault_mod
from wizard.lab.hands import Hands
from wizard.lab.world import End, World
from wizard.model import PhysicalAction

HELP = """\
status                              nodes, boot ids, CX7 state, cabling
recable NODE PORT DEST              DEST: switch:SW:PORT | node:NODE:PORT | unplugged
unplug NODE PORT                    pull a cable
reseat NODE PORT                    pull and push back a cable
drain NODE...                       AC drain (clears the CX7 degraded state)
reboot NODE...                      warm reboot (does not clear it)
power-off NODE... | power-on NODE...
firmware NODE...                    install the known-good CX7 firmware (active after reboot)
reboot-switch SWITCH
inject FAULT_ID [NODE|SWITCH ...]   inject a fault of FAULTS.md
help"""


# the actions that take one node (or switch) name after another
_PER_TARGET: dict[str, Callable[[Hands, str], Any]] = {
    "drain": Hands.ac_drain,
    "ac-drain": Hands.ac_drain,
    "reboot": Hands.reboot,
    "power-off": Hands.power_off,
    "power-on": Hands.power_on,
    "firmware": Hands.firmware_update,
    "firmware-update": Hands.firmware_update,
    "reboot-switch": Hands.reboot_switch,
}


@dataclass
class Dispatcher:
    """Turns an action word and string arguments into a hands call on one world."""

    world: World
    hands: Hands
    on_change: Callable[[], None] | None = None

    def __call__(self, action: str, args: list[str]) -> Any:
        a = action.replace("_", "-").lower()
        h = self.hands
        if a in ("help", "?"):
            return HELP
        if a == "status":
            return self.status()
        per_target = _PER_TARGET.get(a)
        if per_target is not None:
            return [per_target(h, n) for n in self._need(args, 1)]
        if a == "recable":
            node, port, dest = self._need(args, 3)[:3]
            return h.recable(node, port, dest)
        if a == "unplug":
            node, port = self._need(args, 2)[:2]
            return h.unplug(node, port)
        if a == "reseat":
            node, port = self._need(args, 2)[:2]
            return h.reseat(node, port)
        if a == "inject":
            return self._inject(args)
        if a == "perform":
            return self._perform(args)
        raise FabwizError(f"unknown action {action!r}", hint="type `help` for the list")

    def _inject(self, args: list[str]) -> str:
        fid, *targets = self._need(args, 1)
        nodes = [t for t in targets if t in self.world.nodes] or None
        switches = [t for t in targets if t in self.world.switches] or None
        fault_mod.inject(self.world, fid, nodes=nodes, switches=switches)
        if self.world.traffic is not None:
            self.world.traffic.recompute()
        self.world.changed("inject")
        return f"injected {fid}" + (f" on {', '.join(targets)}" if targets else "")

    def _perform(self, args: list[str]) -> Any:
        data = json.loads(args[0]) if args else {}
        action_obj = PhysicalAction(
            kind=data["kind"],
            nodes=tuple(data.get("nodes", ())),
            instructions=str(data.get("instructions", "")),
            cables=tuple((str(a), str(b), str(c)) for a, b, c in data.get("cables", ())),
        )
        return self.hands.perform_now(action_obj)

    @staticmethod
    def _need(args: list[str], n: int) -> list[str]:
        if len(args) < n:
            raise FabwizError(f"needs {n} argument(s)", hint="type `help` for the list")
        return args

    def status(self) -> dict[str, Any]:
        w = self.world
        nodes = {}
        for name, n in w.nodes.items():
            ports = {}
            for p in (0, 1):
                other = w.peer(End("node", name, f"port{p}"))
                ports[f"port{p}"] = {
                    "to": other.label if other else None,
                    "link": w.port_link(name, p),
                }
            nodes[name] = {
                "powered": n.powered,
                "boot_id": n.boot_id,
                "uptime_s": round(w.now() - n.boot_time, 1),
                "firmware": n.firmware,
                "degraded": n.degraded,
                "throttled": n.throttled,
                "ports": ports,
            }
        return {"nodes": nodes, "switches": sorted(w.switches)}


class ControlServer:
    """JSON-lines control server on 127.0.0.1 (port 0 by default)."""

    def __init__(self, dispatch: Dispatcher, token: str | None = None) -> None:
        self.dispatch = dispatch
        self.token = token or secrets.token_urlsafe(24)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._conns: set[asyncio.StreamWriter] = set()

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        return f"{host}:{await self.start_port(host, port)}"

    async def start_port(self, host: str = "127.0.0.1", port: int = 0) -> int:
        self._server = await asyncio.start_server(self._serve, host, port)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for w in list(self._conns):
                w.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._conns.add(writer)
        try:
            while line := await reader.readline():
                reply = self._handle(line)
                writer.write((json.dumps(reply) + "\n").encode())
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._conns.discard(writer)
            writer.close()

    def _handle(self, line: bytes) -> dict[str, Any]:
        try:
            req = json.loads(line)
        except ValueError:
            return {"ok": False, "error": "not JSON"}
        if not isinstance(req, dict):
            return {"ok": False, "error": "expected an object"}
        token = str(req.get("token", ""))
        if not hmac.compare_digest(token.encode(), self.token.encode()):
            return {"ok": False, "error": "bad token"}
        try:
            args = [str(a) for a in req.get("args", [])]
            return {"ok": True, "result": self.dispatch(str(req.get("action", "")), args)}
        except FabwizError as exc:
            return {"ok": False, "error": str(exc)}
        except (KeyError, ValueError, TypeError) as exc:
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}


async def call(address: str, token: str, action: str, *args: str, timeout: float = 30.0) -> Any:
    """Ask a running lab to do something; raises FabwizError with the lab's answer on failure."""
    host, _, port = address.rpartition(":")
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), timeout)
    except (OSError, TimeoutError) as exc:
        raise FabwizError(
            f"cannot reach the lab's control channel at {address}: {exc}",
            hint="is `fabwiz lab` still running?",
        ) from None
    try:
        req = {"token": token, "action": action, "args": list(args)}
        writer.write((json.dumps(req) + "\n").encode())
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), timeout)
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
    if not line:
        raise FabwizError(f"the lab at {address} closed the control channel")
    reply = json.loads(line)
    if not reply.get("ok"):
        raise FabwizError(f"lab: {reply.get('error')}")
    return reply.get("result")


class RemoteHands:
    """The engine's `Hands` port for a lab in another process (inventory `lab:` section)."""

    def __init__(self, address: str, token: str) -> None:
        self.address = address
        self.token = token

    async def perform(self, action: PhysicalAction) -> str:
        data = {
            "kind": action.kind,
            "nodes": list(action.nodes),
            "instructions": action.instructions,
            "cables": [list(c) for c in action.cables],
        }
        result = await call(self.address, self.token, "perform", json.dumps(data))
        return "; ".join(str(x) for x in result) if isinstance(result, list) else str(result)
