"""The RouterOS API server of the lab: the real wire protocol on 127.0.0.1 over a SwitchState.

Follows routeros-api.md sections 1 and 7: plain and legacy challenge login, `!re`/`!done`,
`!trap` carrying only `message` and `category`, `!fatal` with a bare reason word then close,
`!empty` before `!done` for an empty print (switchable to the pre-7.18 bare `!done`), `.tag`
echoed only when the client sent one, `/quit`, `/cancel`, streaming `monitor` without `once`.
Passwords are never logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import secrets
import ssl as ssl_module
from collections.abc import Awaitable, Callable

from wizard.lab.routeros import script
from wizard.lab.routeros.codec import ProtocolViolation, encode_sentence, read_sentence
from wizard.lab.routeros.export import render_export
from wizard.lab.routeros.menus import (
    PREFIXES,
    EthernetMenu,
    FileMenu,
    MenuError,
    find_menu,
    write_file,
)
from wizard.lab.routeros.query import QueryError, matches
from wizard.lab.routeros.switch import Item, SwitchState

__all__ = ["RouterOsServer", "api_ssl_context"]

LOG = logging.getLogger("wizard.lab.routeros")
BAD_LOGIN = "invalid user name or password (6)"
Sentence = list[str]
FaultHook = Callable[[str, "_Session", str, dict[str, str]], Awaitable[bool]]


class _Reply:
    """Collects the sentences answering one command."""

    def __init__(self, tag: str | None) -> None:
        self.tag = tag
        self.sentences: list[Sentence] = []

    def add(self, head: str, attrs: Item | None = None, *bare: str) -> None:
        words = [head]
        words.extend(f"={k}={v}" for k, v in (attrs or {}).items())
        words.extend(bare)
        if self.tag is not None:
            words.append(f".tag={self.tag}")
        self.sentences.append(words)

    def trap(self, message: str, category: int | None = None) -> None:
        attrs: Item = {} if category is None else {"category": str(category)}
        attrs["message"] = message
        self.add("!trap", attrs)


class _Session:
    def __init__(
        self, server: RouterOsServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.server = server
        self.reader = reader
        self.writer = writer
        self.user: str | None = None
        self.challenge: bytes | None = None
        self.lock = asyncio.Lock()
        self.streams: dict[str | None, asyncio.Task[None]] = {}
        peer = writer.get_extra_info("peername")
        self.peer = str(peer[0]) if isinstance(peer, tuple) else "127.0.0.1"

    async def send(self, sentences: list[Sentence]) -> None:
        async with self.lock:
            for words in sentences:
                self.writer.write(encode_sentence(words))
            await self.writer.drain()

    async def fatal(self, reason: str) -> None:
        with contextlib.suppress(ConnectionError):
            await self.send([["!fatal", reason]])
        self.writer.close()

    async def serve(self) -> None:
        try:
            while True:
                try:
                    words = await read_sentence(self.reader)
                except ProtocolViolation:
                    await self.fatal("protocol error")
                    return
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                if not await self.handle(words):
                    return
        finally:
            for task in self.streams.values():
                task.cancel()
            with contextlib.suppress(ConnectionError, ssl_module.SSLError):
                self.writer.close()

    async def handle(self, words: Sentence) -> bool:
        cmd = words[0]
        tag: str | None = None
        attrs: dict[str, str] = {}
        queries: list[str] = []
        for word in words[1:]:
            if word.startswith(".tag="):
                tag = word[5:]
            elif word.startswith("="):
                key, _, value = word[1:].partition("=")
                attrs[key] = value
            elif word.startswith("?"):
                queries.append(word[1:])
        reply = _Reply(tag)
        if cmd == "/login":
            self.login(attrs, reply)
            await self.send(reply.sentences)
            return True
        if self.user is None:
            await self.fatal("not logged in")
            return False
        if cmd == "/quit":
            await self.fatal("session terminated on request")
            return False
        if cmd == "/cancel":
            await self.cancel(attrs.get("tag"), reply)
            return True
        LOG.debug("%s: %s", self.server.switch.name, cmd)
        self.server.switch.tick()
        if await self.maybe_stream(cmd, attrs, tag):
            return True
        hook = self.server.fault_hook  # wizard.lab.faulthooks: True when it cut the session
        if hook is not None and await hook("before", self, cmd, attrs):
            return False
        reboot = self.server.dispatch(cmd, attrs, queries, reply)
        if hook is not None and await hook("after", self, cmd, attrs):
            return False
        await self.send(reply.sentences)
        if hook is not None and await hook("replied", self, cmd, attrs):
            return False
        if reboot:
            self.server.switch.reboot()
            await self.server.drop_sessions()
            return False
        return True

    def login(self, attrs: dict[str, str], reply: _Reply) -> None:
        users = self.server.users
        name = attrs.get("name")
        if _version(self.server.switch.routeros_version) >= (6, 43) and "password" not in attrs:
            # RouterOS 6.43 and later take only name and password: no challenge, no response
            reply.trap(BAD_LOGIN)
            reply.add("!done")
            return
        if name is None and "password" not in attrs and "response" not in attrs:
            self.challenge = secrets.token_bytes(16)
            reply.add("!done", {"ret": self.challenge.hex()})
            return
        ok = False
        if name is not None and name in users:
            if "password" in attrs:
                ok = secrets.compare_digest(attrs["password"], users[name])
            elif "response" in attrs and self.challenge is not None:
                digest = hashlib.md5(
                    b"\x00" + users[name].encode() + self.challenge, usedforsecurity=False
                ).hexdigest()
                ok = secrets.compare_digest(attrs["response"], "00" + digest)
        if ok:
            self.user = name
            reply.add("!done")
            LOG.info("%s: api user %s logged in", self.server.switch.name, name)
            self.server.switch.log(
                "system,info,account", f"user {name} logged in from {self.peer} via api"
            )
        else:
            reply.trap(BAD_LOGIN)
            reply.add("!done")
            LOG.info("%s: failed api login for %r", self.server.switch.name, name)
            self.server.switch.log(
                "system,error,critical", f"login failure for user {name} from {self.peer} via api"
            )

    async def cancel(self, which: str | None, reply: _Reply) -> None:
        tags = [which] if which is not None else list(self.streams)
        for t in tags:
            task = self.streams.pop(t, None)
            if task is None:
                continue
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            done = _Reply(t)
            done.trap("interrupted", 2)
            done.add("!done")
            await self.send(done.sentences)
        reply.add("!done")
        await self.send(reply.sentences)

    async def maybe_stream(self, cmd: str, attrs: dict[str, str], tag: str | None) -> bool:
        """`monitor` without `once` streams until `/cancel` (librouteros then hangs)."""
        if cmd != "/interface/ethernet/monitor" or "once" in attrs:
            return False
        menu = EthernetMenu()
        refs = attrs.get("numbers", attrs.get(".id", ""))

        async def stream() -> None:
            while True:
                reply = _Reply(tag)
                try:
                    for row in menu.monitor(self.server.switch, refs):
                        reply.add("!re", row)
                except MenuError as exc:
                    reply.trap(exc.message, exc.category)
                    reply.add("!done")
                    await self.send(reply.sentences)
                    return
                await self.send(reply.sentences)
                await asyncio.sleep(1.0)

        self.streams[tag] = asyncio.create_task(stream())
        return True


def api_ssl_context() -> ssl_module.SSLContext:
    """API-SSL like RouterOS with `certificate=none`: anonymous (EC)DH ciphers, TLS <= 1.2.

    Clients need the same cipher string: `ctx.set_ciphers("AECDH:ADH:@SECLEVEL=0")`, no
    certificate verification (routeros-api.md 1.1).
    """
    ctx = ssl_module.SSLContext(ssl_module.PROTOCOL_TLS_SERVER)
    ctx.maximum_version = ssl_module.TLSVersion.TLSv1_2
    ctx.set_ciphers("AECDH:ADH:@SECLEVEL=0")
    return ctx


class RouterOsServer:
    """Serves one SwitchState over the RouterOS API on 127.0.0.1."""

    def __init__(
        self,
        switch: SwitchState,
        users: dict[str, str] | None = None,
        *,
        empty_reply: bool = True,
        tick_interval: float | None = 0.25,
        max_sessions: int = 20,
        ssl: ssl_module.SSLContext | None = None,
    ) -> None:
        self.switch = switch
        self.users = dict(users or {"admin": ""})
        self.empty_reply = empty_reply
        self.tick_interval = tick_interval
        self.max_sessions = max_sessions
        self.ssl = ssl
        self.port = 0
        self._server: asyncio.Server | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._sessions: set[_Session] = set()
        self._tasks: set[asyncio.Task[object]] = set()
        self.fault_hook: FaultHook | None = None
        self._mgmt_gone = False
        self._mgmt_bridged = False

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        mgmt = self.switch.management_port
        self._mgmt_bridged = bool(mgmt) and self.switch.bridge_port(mgmt) is not None
        self._mgmt_gone = bool(mgmt) and self._mgmt_cut()
        self.switch.listeners.append(self._switch_event)
        self._server = await asyncio.start_server(self._accept, host, port, ssl=self.ssl)
        self.port = int(self._server.sockets[0].getsockname()[1])
        if self.tick_interval:
            self._ticker = asyncio.create_task(self._tick_loop(self.tick_interval))
        return self.port

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self._ticker = None
        if self._server is not None:
            self._server.close()
            await self.drop_sessions()
            if self._tasks:
                await asyncio.wait(set(self._tasks), timeout=2)
            await self._server.wait_closed()
            self._server = None

    def _switch_event(self, event: str, port: str) -> None:
        """The API session rides the management port: a bounce of that port cuts it, and so
        does disabling it or taking it out of its bridge (where the switch's address lives)."""
        sw = self.switch
        mgmt = sw.management_port
        if not mgmt:
            return
        cut = event == "link-bounced" and port in (mgmt, sw.resolve_port(mgmt))
        if event == "config-changed":
            gone = self._mgmt_cut()
            cut = gone and not self._mgmt_gone
            self._mgmt_gone = gone
        if cut:
            task = asyncio.get_running_loop().create_task(self.drop_sessions())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _mgmt_cut(self) -> bool:
        """Whether the management port is disabled or out of the bridge it started in."""
        sw = self.switch
        item = sw.ether(sw.management_port)
        if item is None or item.get("disabled") == "true":
            return True
        return self._mgmt_bridged and sw.bridge_port(sw.management_port) is None

    async def drop_sessions(self) -> None:
        for session in list(self._sessions):
            with contextlib.suppress(ConnectionError, ssl_module.SSLError):
                session.writer.close()

    async def _tick_loop(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                self.switch.tick()
            except Exception:  # the scheduler must survive one bad tick, as the router does
                LOG.exception("%s: scheduler tick failed", self.switch.name)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session = _Session(self, reader, writer)
        if len(self._sessions) >= self.max_sessions:
            writer.close()
            return
        self._sessions.add(session)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await session.serve()
        finally:
            self._sessions.discard(session)
            if task is not None:
                self._tasks.discard(task)

    # ------------------------------------------------------------------ commands

    def dispatch(self, cmd: str, attrs: dict[str, str], queries: list[str], reply: _Reply) -> bool:
        """Answer one command into `reply`; True when the switch should reboot afterwards."""
        parts = tuple(p for p in cmd.split("/") if p)
        if not cmd.startswith("/") or not parts:
            self._unknown(cmd.strip("/") or cmd, reply)
            return False
        path, verb = parts[:-1], parts[-1]
        for i in range(len(path)):
            if path[: i + 1] not in PREFIXES:
                self._unknown(path[i], reply)
                return False
        try:
            if verb == "export":
                self._export(path, attrs, reply)
            elif path == () and verb == "import":
                self._import(attrs, reply)
            elif path == ("system",) and verb == "reboot":
                reply.add("!done")
                return True
            else:
                self._menu_command(path, verb, attrs, queries, reply)
        except MenuError as exc:
            reply.sentences.clear()
            reply.trap(exc.message, exc.category)
            reply.add("!done")
        except QueryError as exc:
            reply.sentences.clear()
            reply.trap(str(exc), 5)
            reply.add("!done")
        return False

    def _unknown(self, word: str, reply: _Reply) -> None:
        reply.trap(f"no such command or directory ({word})", 0)
        reply.trap("no such command prefix")
        reply.add("!done")

    def _export(self, path: tuple[str, ...], attrs: dict[str, str], reply: _Reply) -> None:
        text = render_export(
            self.switch,
            path=path,
            terse="terse" in attrs,
            hide_sensitive="show-sensitive" not in attrs,
        )
        name = attrs.get("file")
        if name:
            if not name.endswith(".rsc"):
                name += ".rsc"
            write_file(self.switch, name, text)
        reply.add("!done")

    def _import(self, attrs: dict[str, str], reply: _Reply) -> None:
        """`/import file-name=X`: run a script file now (not transactional, as on RouterOS)."""
        name = attrs.get("file-name", "")
        files = [f for f in self.switch.tables["file"] if f["name"] == name]
        if not files:
            raise MenuError("no such item (4)")
        before = len(self.switch.tables["log"])
        script.run(
            self.switch, files[0].get("contents", ""), owner="import", now=self.switch.clock()
        )
        errors = [e for e in self.switch.tables["log"][before:] if e["topics"] == "script,error"]
        if errors:
            raise MenuError(errors[0]["message"].split(": ", 1)[-1], 3)
        reply.add("!done")

    def _menu_command(
        self,
        path: tuple[str, ...],
        verb: str,
        attrs: dict[str, str],
        queries: list[str],
        reply: _Reply,
    ) -> None:
        menu = find_menu(path)
        if menu is None:
            self._unknown(verb, reply)
            return
        sw = self.switch
        refs = attrs.pop(".id", None) or attrs.pop("numbers", None)
        if verb in ("print", "getall"):
            with sw.reading():
                rows = menu.rows(sw)
            if refs:
                wanted = {i.get(".id") for i in menu.resolve(sw, refs)}
                rows = [r for r in rows if r.get(".id") in wanted]
            self._print(rows, attrs, queries, reply)
        elif verb == "add" and menu.can_add:
            reply.add("!done", {"ret": menu.add(sw, attrs)})
        elif verb == "set":
            if refs is None and menu.table not in ("identity", "switch"):
                raise MenuError("missing value(s) of argument(s) numbers", 1)
            menu.set(sw, refs or "*1", attrs)
            reply.add("!done")
        elif verb == "remove" and menu.can_remove:
            if refs is None:
                raise MenuError("missing value(s) of argument(s) numbers", 1)
            menu.remove(sw, refs)
            reply.add("!done")
        elif verb in ("enable", "disable") and menu.schema.get("disabled") == "bool":
            if refs is None:
                raise MenuError("missing value(s) of argument(s) numbers", 1)
            menu.set(sw, refs, {"disabled": "yes" if verb == "disable" else "no"})
            reply.add("!done")
        elif verb == "monitor" and isinstance(menu, EthernetMenu):
            keys = _proplist(attrs)
            for row in menu.monitor(sw, refs or ""):
                reply.add("!re", _select(row, keys))
            reply.add("!done")
        elif verb == "read" and isinstance(menu, FileMenu):
            reply.add("!re", menu.read(sw, attrs))
            reply.add("!done")
        else:
            self._unknown(verb, reply)

    def _print(
        self, rows: list[Item], attrs: dict[str, str], queries: list[str], reply: _Reply
    ) -> None:
        rows = [r for r in rows if matches(r, queries)]
        if "count-only" in attrs:
            reply.add("!done", {"ret": str(len(rows))})
            return
        keys = _proplist(attrs)
        for row in rows:
            reply.add("!re", _select(row, keys))
        if not rows and self.empty_reply:
            reply.add("!empty")
        reply.add("!done")


def _proplist(attrs: dict[str, str]) -> list[str] | None:
    proplist = attrs.get(".proplist")
    return [k for k in proplist.split(",") if k] if proplist is not None else None


def _select(row: Item, keys: list[str] | None) -> Item:
    return row if keys is None else {k: row[k] for k in keys if k in row}


def _version(text: str) -> tuple[int, ...]:
    """`7.23.1` -> (7, 23, 1); anything unparsable counts as a current release."""
    parts = []
    for piece in text.split(" ", maxsplit=1)[0].split("."):
        if not piece.isdigit():
            return (99,)
        parts.append(int(piece))
    return tuple(parts)
