"""The RouterOS API to the MikroTik switches, with librouteros' asyncio client.

librouteros logs in (`async_connect`, plain login, 8728 or API-SSL 8729 with an SSLContext); the
sentences are then written and read on its protocol object directly so the rows keep the values
exactly as the wire carries them (strings: `true`, `9216`, `*1A`), which is what the session log
records and what the parsers read. librouteros has no `.tag` support, so one command is
outstanding per connection: a lock serialises them. Every failure (refused, timeout, login
refused, `!trap`, `!fatal`, connection closed) comes back as a `ProbeResult` with `error` naming
the switch and what to do, never as an exception.

Write calls select items by a stable key (`interface=qsfp56-dd-1-2`) and look the `.id` up right
before sending: RouterOS ids change after a reboot.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import librouteros
import librouteros.login
from librouteros.exceptions import (
    ConnectionClosed,
    FatalError,
    LibRouterosError,
    MultiTrapError,
    TrapError,
)

from wizard.model import ApiCommand, ProbeResult
from wizard.transports import routeros_tls
from wizard.transports.capped import cap_from_env, mark, rows_from_env
from wizard.transports.routeros_batch import Reply, pipelined
from wizard.transports.routeros_wire import (
    FILE_CHUNK,
    READ_ONLY,
    WIRE_ENCODING,
    RouterOsTarget,
    api_attrs,
    brief,
    read_sentence,
    with_fields,
    word_int,
)

__all__ = ["WIRE_ENCODING", "RouterOsTarget", "RouterOsTransport"]


class _Failed(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class RouterOsTransport:
    """One API session to one switch, opened on first use and reopened after a failure."""

    def __init__(self, target: RouterOsTarget) -> None:
        self.target = target
        self._api: Any = None
        self._lock = asyncio.Lock()
        self._starting: asyncio.Future[str | None] | None = None  # a login begun by start()
        self._begun: asyncio.Future[str | None] | None = None  # the same, kept once connect took it
        self.logins = 0
        # API-SSL certificates trusted on first use (only when the operator asked)
        self.known_certs: Path | None = None
        self.accept_new_certs = False
        self.on_new_cert: Callable[[str, str, str], None] | None = None
        # what one reply (or one file read) may bring: more is drained and said, never kept
        self.reply_cap = cap_from_env()
        self.reply_rows = rows_from_env()

    @property
    def name(self) -> str:
        return self.target.name

    # --- read ------------------------------------------------------------------------------

    def start(self) -> None:
        """Begin the login now, in the background, so that a caller overlaps its round trips
        with work of its own; the next `connect` waits for that login (still one try)."""
        if self._starting is None and self._api is None:
            self._starting = self._begun = asyncio.ensure_future(self._connect())

    async def started(self, timeout: float) -> bool:
        """Wait until the login `start` began has ended (either way), at most `timeout` seconds.
        True when it has (or none was begun)."""
        begun = self._begun
        if begun is not None and not begun.done():
            await asyncio.wait([begun], timeout=timeout)
        return begun is None or begun.done()

    async def connect(self) -> str | None:
        """Log in now. Returns None, or the error text."""
        started, self._starting = self._starting, None
        return await (started if started is not None else self._connect())

    async def _connect(self) -> str | None:
        async with self._lock:
            try:
                await self._session()
            except _Failed as exc:
                return exc.message
        return None

    async def print(
        self,
        path: str,
        proplist: Iterable[str] | None = None,
        where: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
    ) -> ProbeResult:
        """`<path>/print`, optionally with `.proplist` and `?key=value` filters."""
        words: list[str] = []
        if proplist is not None:
            words.append(f"=.proplist={','.join(proplist)}")
        words.extend(f"?{k}={v}" for k, v in (where or {}).items())
        return await self._command(path, "print", words, timeout=timeout)

    async def call(
        self, path: str, verb: str, *, timeout: float | None = None, **args: str
    ) -> ProbeResult:
        """Any command: `<path>/<verb>` with attribute words `=k=v` (use ** for dotted keys)."""
        return await self._command(path, verb, api_attrs(args.items()), timeout=timeout)

    async def call_many(
        self, calls: Sequence[tuple[str, str, Mapping[str, str]]], *, timeout: float | None = None
    ) -> list[ProbeResult]:
        """Several reads at once on the session, each tagged (one round trip, not one per
        command); each result is what `call` gives for it. Writes go one `call` after the
        other. When the session fails before every reply is in, the reads without their reply
        are asked again one `call` after the other (a read is safe to send again; `call`
        reconnects and names its own error); when the switch does not answer in time, they get
        `call`'s timeout error and are not asked again (never wait twice)."""
        if len(calls) < 2 or any(verb not in READ_ONLY for _p, verb, _a in calls):
            return [await self.call(p, v, timeout=timeout, **dict(a)) for p, v, a in calls]
        limit = self.target.timeout_s if timeout is None else timeout
        commands = [(f"{p}/{v}", api_attrs(a.items())) for p, v, a in calls]
        replies = [Reply(self.reply_rows, self.reply_cap) for _ in calls]
        started, t0 = time.time(), time.monotonic()
        failed: type[BaseException] | None = None
        async with self._lock:
            try:
                api = await self._session()
                await asyncio.wait_for(pipelined(api.protocol, commands, replies), limit)
            except (_Failed, TimeoutError, ConnectionClosed, OSError, LibRouterosError) as exc:
                failed = type(exc)
                await self._reset()
        took = time.monotonic() - t0
        out: list[ProbeResult] = []
        for (path, verb, args), (_cmd, words), reply in zip(calls, commands, replies, strict=True):
            if reply.done:
                out.append(self._replied(path, verb, words, reply, started, took))
            elif failed is TimeoutError:
                shown = self._shown(path, verb, words)
                out.append(
                    ProbeResult(
                        target=self.name,
                        kind="api",
                        command=shown,
                        started_at=started,
                        duration_s=took,
                        error=self._no_answer(shown, limit),
                    )
                )
            else:
                out.append(await self.call(path, verb, timeout=timeout, **dict(args)))
        return out

    def _replied(
        self, path: str, verb: str, words: list[str], reply: Reply, started: float, took: float
    ) -> ProbeResult:
        shown = self._shown(path, verb, words)
        base = ProbeResult(
            target=self.name, kind="api", command=shown, started_at=started, duration_s=took
        )
        try:
            rows, cut = reply.result()
        except (TrapError, MultiTrapError) as exc:
            return replace(base, **self._refused(shown, exc))
        return replace(base, **self._answered(shown, rows, cut))

    def _refused(self, shown: str, exc: Exception) -> dict[str, Any]:
        """A `!trap`'s result fields: what the switch refused, in its words."""
        return {
            "error": f"{self.name}: `{shown}` was refused by the switch: {exc}",
            "stderr": str(exc),
        }

    def _answered(self, shown: str, rows: list[dict[str, str]], cut: str) -> dict[str, Any]:
        """A reply's result fields: its rows, and the truncation as the error when it was cut."""
        if cut:
            return {"rows": tuple(rows), "error": f"{self.name}: `{shown}`: {cut}", "stderr": cut}
        return {"rows": tuple(rows)}

    def _no_answer(self, shown: str, limit: float) -> str:
        return (
            f"{self.name}: `{shown}` gave no answer within {limit:g} s; the API session was "
            "dropped (if a fix just ran, it may have cut the management path)"
        )

    @staticmethod
    def _shown(path: str, verb: str, words: list[str]) -> str:
        return (f"{path} {verb}" if path else f"/{verb}") + "".join(
            f" {brief(w[1:])}" for w in words if not w.startswith("=password=")
        )

    async def monitor_once(
        self, ports: Iterable[str], *, timeout: float | None = None
    ) -> ProbeResult:
        """`/interface/ethernet/monitor numbers=<ports> once`: one row per port."""
        numbers = ",".join(ports)
        return await self._command(
            "/interface/ethernet",
            "monitor",
            [f"=numbers={numbers}", "=once="],
            timeout=timeout,
        )

    # --- write (the engine's fix executor) --------------------------------------------------

    async def add(self, path: str, **args: str) -> ProbeResult:
        return await self._command(path, "add", api_attrs(args.items()))

    async def set(self, path: str, select: tuple[str, str], **args: str) -> ProbeResult:
        """`set` on every item whose `select[0]` equals `select[1]`."""
        return await self._on_selected(path, "set", select, api_attrs(args.items()))

    async def remove(self, path: str, select: tuple[str, str]) -> ProbeResult:
        return await self._on_selected(path, "remove", select, [])

    async def execute(self, cmd: ApiCommand) -> ProbeResult:
        """Run one `ApiCommand` of a fix plan (select by key when it has one)."""
        words = api_attrs(cmd.args)
        if cmd.select is not None and cmd.verb in ("set", "unset", "remove", "enable", "disable"):
            return await self._on_selected(cmd.path, cmd.verb, cmd.select, words)
        return await self._command(cmd.path, cmd.verb, words)

    async def export(self, file: str, *, show_sensitive: bool = False) -> ProbeResult:
        """`/export file=NAME` (writes NAME.rsc on the switch; the API returns nothing).

        RouterOS 7 leaves sensitive values (passwords, keys, secrets) out of an export unless
        `show-sensitive` is given: exports kept in the session are taken without them, and
        `show_sensitive=True` is only for an operator who asked."""
        words = [f"=file={file}"] + (["=show-sensitive="] if show_sensitive else [])
        return await self._command("", "export", words)

    async def read_file(self, name: str) -> ProbeResult:
        """The contents of a switch file, in `stdout` (and a row name/size/contents).

        `/file print` carries `contents` only below ~60 KiB; larger files are read with
        `/file/read` in 32 KiB chunks (RouterOS 7.13+)."""
        listing = await self._command(
            "/file", "print", ["=.proplist=name,size,contents", f"?name={name}"]
        )
        if listing.error is not None:
            return listing
        if not listing.rows:
            return with_fields(listing, error=f"{self.name}: no file {name!r} on the switch")
        row = listing.rows[0]
        contents = row.get("contents")
        size = word_int(row.get("size", "0"))
        cut = ""
        if contents is None and size > 0:
            parts: list[str] = []
            offset = 0
            while offset < size:
                if offset >= self.reply_cap:  # the rest is never read
                    cut = mark(self.reply_cap, size)
                    break
                chunk = await self._command(
                    "/file",
                    "read",
                    [f"=file={name}", f"=offset={offset}", f"=chunk-size={FILE_CHUNK}"],
                )
                if chunk.error is not None:
                    return chunk
                data = chunk.rows[0].get("data", "") if chunk.rows else ""
                if not data:
                    break
                data = data.encode("utf-8", "surrogateescape")[: self.reply_cap - offset].decode(
                    "utf-8", "replace"
                )
                parts.append(data)
                offset += len(data.encode("utf-8", "surrogateescape"))
            contents = "".join(parts)
        text = contents or ""
        return with_fields(
            listing,
            command=f"/file print ?name={name} (contents)",
            stdout=text + cut,
            rows=({"name": name, "size": str(size), "contents": text},),
            error=(
                f"{self.name}: {name} is {size} bytes, more than the {self.reply_cap} read "
                "(cap FABWIZ_PROBE_OUTPUT_MB); only its start was kept"
                if cut
                else None
            ),
        )

    async def close(self) -> None:
        started, self._starting = self._starting, None
        self._begun = None
        if started is not None:
            started.cancel()
            await asyncio.gather(started, return_exceptions=True)
        api, self._api = self._api, None
        if api is not None:
            try:
                await asyncio.wait_for(api.close(), 2.0)
            except (TimeoutError, OSError, LibRouterosError):
                pass

    async def __aenter__(self) -> RouterOsTransport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- internals -------------------------------------------------------------------------

    async def _on_selected(
        self, path: str, verb: str, select: tuple[str, str], words: list[str]
    ) -> ProbeResult:
        key, value = select
        found = await self._command(path, "print", ["=.proplist=.id", f"?{key}={value}"])
        if found.error is not None:
            return found
        ids = [r[".id"] for r in found.rows if ".id" in r]
        command = f"{path} {verb} [find {key}={value}] {' '.join(w[1:] for w in words)}".strip()
        if not ids:
            return with_fields(
                found,
                command=command,
                error=f"{self.name}: nothing in {path} has {key}={value}; the configuration "
                "changed since it was read: re-run the check",
            )
        last = found
        for item in ids:
            last = await self._command(path, verb, [f"=.id={item}", *words])
            if last.error is not None:
                break
        return with_fields(last, command=command)

    async def _command(
        self, path: str, verb: str, words: list[str], *, timeout: float | None = None
    ) -> ProbeResult:
        cmd = f"{path}/{verb}"
        shown = self._shown(path, verb, words)
        started = time.time()
        t0 = time.monotonic()
        limit = self.target.timeout_s if timeout is None else timeout

        def result(**kw: Any) -> ProbeResult:
            return ProbeResult(
                target=self.name,
                kind="api",
                command=shown,
                started_at=started,
                duration_s=time.monotonic() - t0,
                **kw,
            )

        async with self._lock:
            reused = self._api is not None
            try:
                api = await self._session()
            except _Failed as exc:
                return result(error=exc.message)
            try:
                try:
                    rows, cut = await asyncio.wait_for(self._exchange(api, cmd, words), limit)
                except TimeoutError:
                    raise  # no answer is not a closed session: never wait twice
                except (ConnectionClosed, OSError):
                    # A session that sat idle may have been closed by the switch (a reboot, a
                    # management link flap): a read is safe to send again on a fresh session.
                    # A write is never repeated: it may have reached the switch.
                    if not (reused and verb in READ_ONLY):
                        raise
                    await self._reset()
                    try:
                        api = await self._session()
                    except _Failed as exc:
                        return result(error=exc.message)
                    rows, cut = await asyncio.wait_for(self._exchange(api, cmd, words), limit)
            except (TrapError, MultiTrapError) as exc:
                return result(**self._refused(shown, exc))
            except TimeoutError:
                await self._reset()
                return result(error=self._no_answer(shown, limit))
            except FatalError as exc:
                await self._reset()
                return result(error=f"{self.name}: the switch ended the API session: {exc}")
            except (ConnectionClosed, OSError) as exc:
                await self._reset()
                return result(
                    error=f"{self.name}: the API connection to {self.target.where} closed "
                    f"during `{shown}` ({exc or 'closed'}); fabwiz reconnects on the next call"
                )
            except LibRouterosError as exc:
                await self._reset()
                return result(error=f"{self.name}: API protocol error during `{shown}`: {exc}")
        return result(**self._answered(shown, rows, cut))

    async def _exchange(
        self, api: Any, cmd: str, words: list[str]
    ) -> tuple[list[dict[str, str]], str]:
        """The reply's rows, and a truncation mark when it was larger than the caps (the rest
        is read off the wire, so the session stays in step, but not kept)."""
        protocol = api.protocol
        await protocol.writeSentence(cmd, *words)
        reply = Reply(self.reply_rows, self.reply_cap)
        while not reply.feed(*await read_sentence(protocol)):
            pass
        return reply.result()

    async def _reset(self) -> None:
        api, self._api = self._api, None
        if api is not None:
            try:
                await asyncio.wait_for(api.close(), 1.0)
            except (TimeoutError, OSError, LibRouterosError):
                pass

    def _tls_target(self) -> tuple[RouterOsTarget, bool, ssl.SSLContext | None]:
        """The target with a recorded certificate pinned, whether this is a first use (no pin,
        no CA, not anonymous), and the TLS context (None without TLS)."""
        t = self.target
        first_use = t.tls and not (t.tls_fingerprint or t.ca_file or t.tls_anonymous)
        if first_use and self.known_certs is not None:
            pin = routeros_tls.known_cert(self.known_certs, t.where)
            if pin:
                t = replace(t, tls_fingerprint=pin)
                first_use = False
        context: ssl.SSLContext | None = None
        if t.tls:
            try:
                context = routeros_tls.client_context(t)
            except (OSError, ssl.SSLError) as exc:
                raise _Failed(f"{t.name}: cannot load the CA file {t.ca_file}: {exc}") from None
        return t, first_use, context

    async def _untrusted(
        self, t: RouterOsTarget, exc: ssl.SSLCertVerificationError, first_use: bool
    ) -> None:
        """A certificate not trusted: recorded when the operator accepts new ones (returns, to
        log in again with it pinned), else refused with what to do."""
        seen = await routeros_tls.peer_fingerprint(t.host, t.api_port, t.timeout_s)
        if seen and first_use and self.accept_new_certs and self.known_certs is not None:
            # recorded, then checked as a pin on the connection that logs in
            routeros_tls.record_cert(self.known_certs, t.where, seen)
            if self.on_new_cert is not None:
                self.on_new_cert(t.name, t.where, seen)
            return
        raise _Failed(
            f"{t.name}: the API-SSL certificate at {t.where} is not trusted "
            f"({exc.verify_message or exc.reason or exc}); the password was not sent. It "
            f"presents {seen or 'a certificate'}: if that is the switch's own (check "
            "`/certificate print detail` on its console), pin it in the inventory with "
            f"`tls: {{fingerprint: {seen or 'sha256:...'}}}`, or give the CA in `ca_file`"
        ) from None

    async def _session(self) -> Any:
        if self._api is not None:
            return self._api
        t, first_use, context = self._tls_target()

        async def checked_login(api: Any, user: str, password: str) -> None:
            # the peer is checked on this connection before the password is written
            writer = getattr(api.protocol.transport, "writer", None)
            why = routeros_tls.check_peer(
                t, writer.get_extra_info("ssl_object") if writer else None
            )
            if why:
                raise _Failed(why)
            await librouteros.login.async_plain(api, user, password)

        self.logins += 1
        try:
            self._api = await asyncio.wait_for(
                librouteros.async_connect(
                    t.host,
                    t.user,
                    t.password,
                    port=t.api_port,
                    timeout=t.timeout_s,
                    ssl_wrapper=context,
                    encoding=WIRE_ENCODING,
                    login_method=checked_login,
                ),
                t.timeout_s + 1,
            )
        except (TrapError, MultiTrapError) as exc:
            raise _Failed(
                f"{t.name}: login refused for user {t.user!r} at {t.where} ({exc}): check the "
                "password source in the inventory and that the user's group has the api, read "
                "(and for fixes write) policies"
            ) from None
        except ConnectionRefusedError:
            service = "api-ssl" if t.tls else "api"
            raise _Failed(
                f"{t.name}: {t.where} refused the connection: enable the service with "
                f"`/ip service enable {service}` and check its `address=` allows this machine"
            ) from None
        except TimeoutError:
            raise _Failed(
                f"{t.name}: no answer from the RouterOS API at {t.where} within "
                f"{t.timeout_s:g} s: is the switch up, and is {t.api_port} reachable?"
            ) from None
        except ssl.SSLCertVerificationError as exc:
            await self._untrusted(t, exc, first_use)
            return await self._session()
        except (ssl.SSLError, ConnectionResetError) as exc:
            reason = getattr(exc, "reason", None) or exc.strerror or type(exc).__name__
            if not t.tls:
                raise _Failed(
                    f"{t.name}: {t.where} reset the connection during login ({reason}); is "
                    f"{t.api_port} the api service (or is it api-ssl, `tls: true`)?"
                ) from None
            raise _Failed(
                f"{t.name}: TLS handshake with {t.where} failed ({reason}). RouterOS' default "
                "api-ssl has no certificate (anonymous DH): give it one (`/certificate add "
                "name=api common-name=<host>`, `/certificate sign api`, `/ip service set api-ssl "
                "certificate=api`), or accept it unauthenticated with `tls: {anonymous: true}`"
            ) from None
        except (ConnectionClosed, FatalError) as exc:
            raise _Failed(
                f"{t.name}: the switch closed the API session during login ({exc}); is "
                f"{t.api_port} really the {'api-ssl' if t.tls else 'api'} service?"
            ) from None
        except OSError as exc:
            why = exc.strerror or str(exc) or type(exc).__name__
            raise _Failed(f"{t.name}: cannot reach {t.where}: {why}") from None
        except (LibRouterosError, UnicodeError) as exc:
            raise _Failed(f"{t.name}: API login failed at {t.where}: {exc}") from None
        return self._api
