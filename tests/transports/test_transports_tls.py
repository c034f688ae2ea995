"""API-SSL trust: the password goes only to the switch the inventory names. An impostor with its
own certificate, a wrong pin, a certificate for another name: refused before the login is
written. RouterOS' certificate-less api-ssl only by opt-in, with a clear error otherwise."""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from wizard.inventory import SwitchSpec
from wizard.lab.routeros.server import RouterOsServer, api_ssl_context
from wizard.lab.routeros.switch import SwitchState
from wizard.schema import parse
from wizard.transports.routeros import RouterOsTarget, RouterOsTransport
from wizard.transports.routeros_tls import fingerprint, trust_warnings


def _cert(tmp: Path, cn: str, san_ip: str | None = None) -> tuple[str, str, bytes]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    )
    if san_ip:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(san_ip))]),
            critical=False,
        )
    cert = builder.sign(key, hashes.SHA256())
    c, k = tmp / f"{cn}-c.pem", tmp / f"{cn}-k.pem"
    c.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    k.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(c), str(k), cert.public_bytes(serialization.Encoding.DER)


class Switch:
    def __init__(self, server: RouterOsServer, sw: SwitchState, port: int) -> None:
        self.server, self.sw, self.port = server, sw, port

    def logins(self) -> list[str]:
        return [
            e["message"]
            for e in self.sw.tables["log"]
            if "login" in e["message"] or "logged in" in e["message"]
        ]


async def _serve(context: ssl.SSLContext) -> Switch:
    sw = SwitchState.new("crs804", "CRS804-4DDQ")
    server = RouterOsServer(sw, users={"fabwiz": "s3cret-pw"}, ssl=context)
    port = await server.start()
    return Switch(server, sw, port)


@pytest.fixture
async def impostor(tmp_path: Path) -> AsyncIterator[tuple[Switch, bytes, str]]:
    cert, key, der = _cert(tmp_path, "crs804")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    s = await _serve(ctx)
    yield s, der, cert
    await s.server.stop()


def _target(port: int, **kw: Any) -> RouterOsTarget:
    base: dict[str, Any] = {
        "name": "crs804", "host": "127.0.0.1", "user": "fabwiz", "password": "s3cret-pw",
        "port": port, "tls": True, "timeout_s": 3.0,
    }  # fmt: skip
    return RouterOsTarget(**{**base, **kw})


async def test_a_certificate_nobody_vouches_for_never_gets_the_password(
    impostor: tuple[Switch, bytes, str],
) -> None:
    s, der, _cert_file = impostor
    async with RouterOsTransport(_target(s.port)) as t:
        err = await t.connect()
    assert err is not None and "not trusted" in err and "password was not sent" in err
    assert fingerprint(der) in err and "tls: {fingerprint:" in err  # how to pin it, if genuine
    assert s.logins() == []  # no login, failed or not, reached the server


async def test_a_pinned_certificate_is_accepted_and_a_wrong_pin_refused(
    impostor: tuple[Switch, bytes, str],
) -> None:
    s, der, _cert_file = impostor
    async with RouterOsTransport(_target(s.port, tls_fingerprint=fingerprint(der))) as t:
        ident = await t.print("/system/identity")
    assert ident.rows == ({"name": "crs804"},)
    wrong = "sha256:" + ":".join(["AB"] * 32)
    before = len(s.logins())
    async with RouterOsTransport(_target(s.port, tls_fingerprint=wrong)) as t:
        err = await t.connect()
    assert err is not None and wrong in err and fingerprint(der) in err
    assert "refusing to send the password" in err
    assert len(s.logins()) == before


async def test_a_ca_file_with_only_a_cn_works_and_a_wrong_name_is_refused(tmp_path: Path) -> None:
    cert, key, _der = _cert(tmp_path, "127.0.0.1")  # RouterOS-made: CN only, no SAN
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    s = await _serve(ctx)
    try:
        async with RouterOsTransport(_target(s.port, ca_file=cert)) as t:
            assert (await t.print("/system/identity")).rows == ({"name": "crs804"},)
    finally:
        await s.server.stop()
    other, other_key, _ = _cert(tmp_path, "crs812.example")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(other, other_key)
    s = await _serve(ctx)
    try:
        async with RouterOsTransport(_target(s.port, ca_file=other)) as t:
            err = await t.connect()
        assert err is not None and "crs812.example" in err and "not 127.0.0.1" in err
        assert s.logins() == []
    finally:
        await s.server.stop()


async def test_routeros_default_api_ssl_needs_the_opt_in() -> None:
    s = await _serve(api_ssl_context())
    try:
        async with RouterOsTransport(_target(s.port)) as t:
            err = await t.connect()
        assert err is not None and "anonymous" in err and "tls: {anonymous: true}" in err
        assert s.logins() == []
        async with RouterOsTransport(_target(s.port, tls_anonymous=True)) as t:
            assert (await t.print("/system/identity")).rows == ({"name": "crs804"},)
    finally:
        await s.server.stop()


def test_inventory_tls_forms_and_warnings() -> None:
    pin = "sha256:" + ":".join(["0F"] * 32)
    spec = parse(
        SwitchSpec,
        {"name": "crs804", "host": "10.0.0.1", "tls": {"fingerprint": pin}, "password": "x"},
    )
    target = RouterOsTarget.from_spec(spec, "x")
    assert target.tls and target.tls_fingerprint == pin and target.api_port == 8729
    anon = RouterOsTarget.from_spec(
        parse(SwitchSpec, {"name": "s", "host": "h", "tls": {"anonymous": True}}), "pw"
    )
    plain = RouterOsTarget.from_spec(parse(SwitchSpec, {"name": "p", "host": "h"}), "pw")
    warnings = trust_warnings([target, anon, plain])
    assert len(warnings) == 2
    assert "anonymous DH" in warnings[0] and "plaintext" in warnings[1]
    with pytest.raises(ValueError, match="fingerprint"):
        parse(SwitchSpec, {"name": "s", "host": "h", "tls": {"fingerprint": "md5:00"}})


async def test_a_certificate_is_pinned_on_first_use_only_when_asked(
    impostor: tuple[Switch, bytes, str], tmp_path: Path
) -> None:
    s, der, _cert_file = impostor
    store = tmp_path / "known_switch_certs"
    refused = RouterOsTransport(_target(s.port))
    refused.known_certs = store  # not asked: nothing recorded, no login
    assert await refused.connect() is not None
    await refused.close()
    assert not store.exists() and s.logins() == []
    seen: list[tuple[str, str, str]] = []
    first = RouterOsTransport(_target(s.port))
    first.known_certs, first.accept_new_certs = store, True
    first.on_new_cert = lambda *a: seen.append(a)
    assert (await first.print("/system/identity")).rows == ({"name": "crs804"},)
    await first.close()
    assert seen == [("crs804", f"127.0.0.1:{s.port}", fingerprint(der))]
    assert store.read_text() == f"127.0.0.1:{s.port} {fingerprint(der)}\n"
    # from then on the recorded pin is checked, without the flag
    again = RouterOsTransport(_target(s.port))
    again.known_certs = store
    assert (await again.print("/system/identity")).rows == ({"name": "crs804"},)
    await again.close()
    store.write_text(f"127.0.0.1:{s.port} sha256:" + ":".join(["AB"] * 32) + "\n")
    changed = RouterOsTransport(_target(s.port))
    changed.known_certs, changed.accept_new_certs = store, True
    err = await changed.connect()
    await changed.close()
    assert err is not None and "refusing to send the password" in err  # never re-recorded
