"""Whom the RouterOS password goes to: API-SSL verified before the login is sent.

`tls: true` verifies the switch's certificate against the system CAs (with its host name), or
`ca_file` (then the host name may be in the certificate's SAN or, as RouterOS' own certificates
often have it, only in its CN). `tls: {fingerprint: sha256:...}` pins the certificate itself (a
self-signed one): anything else is refused. `tls: {anonymous: true}` is RouterOS' default
api-ssl without a certificate (anonymous DH): encrypted but not authenticated, only on that
explicit opt-in, and said when the session opens. The check runs on the connection that then
logs in, before the password is written. Plaintext API (8728) with a password is said once per
session too. With `tls: true` and neither a CA that vouches for the switch nor a pin, the
certificate is recorded on first use only when the operator asks (`--accept-new-host-keys`, as
for SSH host keys) in a `known_switch_certs` file, and pinned from then on.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import ssl
from pathlib import Path
from typing import Any

__all__ = [
    "check_peer",
    "client_context",
    "fingerprint",
    "known_cert",
    "peer_fingerprint",
    "record_cert",
    "trust_warnings",
]

ANON_CIPHERS = "AECDH:ADH:@SECLEVEL=0"


def fingerprint(der: bytes) -> str:
    digest = hashlib.sha256(der).hexdigest().upper()
    return "sha256:" + ":".join(digest[i : i + 2] for i in range(0, 64, 2))


def _norm(fp: str) -> str:
    return fp.lower().removeprefix("sha256:").replace(":", "")


def client_context(target: Any) -> ssl.SSLContext:
    """The client context for `target` (a RouterOsTarget with tls on)."""
    if target.tls_anonymous:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        ctx.set_ciphers(ANON_CIPHERS)
        return ctx
    if target.tls_fingerprint:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # the pin is checked by `check_peer`, before the login
        return ctx
    if target.ca_file:
        ctx = ssl.create_default_context(cafile=target.ca_file)
        ctx.check_hostname = False  # SAN or CN, checked by `check_peer`
        return ctx
    return ssl.create_default_context()


def _names(cert: dict[str, Any]) -> list[str]:
    sans = [v for k, v in cert.get("subjectAltName", ()) if k in ("DNS", "IP Address")]
    if sans:
        return sans
    return [v for rdn in cert.get("subject", ()) for k, v in rdn if k == "commonName"]


def _matches(host: str, name: str) -> bool:
    try:
        return ipaddress.ip_address(host) == ipaddress.ip_address(name)
    except ValueError:
        pass
    host, name = host.lower().rstrip("."), name.lower().rstrip(".")
    if name.startswith("*.") and "." in host:
        return host.split(".", 1)[1] == name[2:]
    return host == name


def check_peer(target: Any, ssl_object: Any) -> str | None:
    """Why the TLS peer is not the switch the inventory names, or None. Runs before login."""
    if not target.tls or target.tls_anonymous:
        return None
    if ssl_object is None:
        return f"{target.name}: no TLS session to check at {target.where}"
    der = ssl_object.getpeercert(binary_form=True) or b""
    got = fingerprint(der) if der else "no certificate"
    if target.tls_fingerprint:
        if not der or _norm(got) != _norm(target.tls_fingerprint):
            return (
                f"{target.name}: the API-SSL certificate at {target.where} is {got}, not the "
                f"pinned {target.tls_fingerprint}: refusing to send the password (a replaced "
                "certificate or something in the way; check `/certificate print detail` on the "
                "switch console)"
            )
        return None
    if target.ca_file:
        names = _names(ssl_object.getpeercert() or {})
        if not any(_matches(target.host, n) for n in names):
            return (
                f"{target.name}: the API-SSL certificate at {target.where} is for "
                f"{', '.join(names) or 'no name'}, not {target.host}: refusing to send the "
                "password"
            )
    return None


async def peer_fingerprint(host: str, port: int, timeout: float) -> str | None:
    """The certificate fingerprint a server presents (no login, nothing sent), to show it."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        _reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=ctx), timeout
        )
    except (OSError, ssl.SSLError, TimeoutError):
        return None
    try:
        obj = writer.get_extra_info("ssl_object")
        der = obj.getpeercert(binary_form=True) if obj is not None else None
        return fingerprint(der) if der else None
    finally:
        writer.close()


def known_cert(store: Path, where: str) -> str | None:
    """The fingerprint recorded for `host:port` on first use (with --accept-new-host-keys)."""
    try:
        lines = store.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split()
        if len(parts) == 2 and parts[0] == where:
            return parts[1]
    return None


def record_cert(store: Path, where: str, fp: str) -> None:
    store.parent.mkdir(parents=True, exist_ok=True)
    with store.open("a", encoding="utf-8") as fh:
        fh.write(f"{where} {fp}\n")


def trust_warnings(targets: Any) -> list[str]:
    """What the operator is told once when the session opens: passwords over plaintext, and
    the anonymous api-ssl opt-in."""
    out = []
    for t in targets:
        if not t.tls and t.password:
            out.append(
                f"{t.name}: the RouterOS API password goes to {t.where} in plaintext (api, "
                "8728); set up API-SSL on the switch and `tls:` in the inventory (README, "
                "Inventory)"
            )
        elif t.tls and t.tls_anonymous:
            out.append(
                f"{t.name}: API-SSL without a certificate (anonymous DH, opted in with "
                "`tls: {anonymous: true}`): encrypted, but the switch is not authenticated"
            )
    return out
