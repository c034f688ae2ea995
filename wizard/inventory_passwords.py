"""A switch's password from its inventory source: in clear, an environment variable, a file,
the keyring, or a prompt. Every failure is an InventoryError saying what is missing."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from wizard.errors import InventoryError
from wizard.inventory_models import SwitchSpec

__all__ = ["resolve_password"]


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
        return _from_keyring(pw.keyring, spec.user, where, keyring_get)
    if prompt is None:
        raise InventoryError(
            "the password must be typed, but there is no terminal to ask it on",
            path=where,
            field="password.prompt",
        )
    return prompt(f"Password for {spec.user}@{spec.name} ({spec.host}): ")


def _from_keyring(
    service: str, user: str, where: str, keyring_get: Callable[[str, str], str | None] | None
) -> str:
    getter = keyring_get
    if getter is None:
        import keyring

        def getter(service: str, user: str) -> str | None:
            value = keyring.get_password(service, user)
            return None if value is None else str(value)

    try:
        value = getter(service, user)
    except Exception as exc:  # keyring.errors.KeyringError: no backend, locked, refused
        raise InventoryError(
            f"the keyring could not be read for service {service!r} ({exc})",
            path=where,
            field="password.keyring",
            hint="this machine has no usable keyring backend: install and unlock one "
            "(e.g. gnome-keyring, or `pip install keyrings.alt`), or give the password as "
            "{env: VAR} or {file: PATH}",
        ) from None
    if value is None:
        raise InventoryError(
            f"no password in the keyring for service {service!r}, user {user!r}",
            path=where,
            field="password.keyring",
            hint=f"keyring set {service} {user}",
        )
    return value
