"""Helpers shared by the RouterOS emulator tests (unique basename: imported by path)."""

from __future__ import annotations

import asyncio
import threading

from wizard.lab.routeros.server import RouterOsServer
from wizard.lab.routeros.switch import SwitchState

T0 = 1_790_000_000.0  # 2026-09-21 14:13:20 UTC


class FakeClock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class ThreadedServer:
    """A RouterOsServer on its own loop in a thread, for librouteros' blocking client."""

    def __init__(self, switch: SwitchState, **kw: object) -> None:
        self.loop = asyncio.new_event_loop()
        self.server = RouterOsServer(switch, users={"admin": "s3cret"}, **kw)  # type: ignore[arg-type]
        self.port = self.loop.run_until_complete(self.server.start())
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        fut = asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop)
        fut.result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()
