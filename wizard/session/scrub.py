"""Secrets never reach the disk: every string of every record goes through a `SecretScrubber`."""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Iterable
from typing import Any

SCRUBBED = "«secret»"
"""What a registered secret is replaced with in the log."""

_PASSWORD_CONTEXT = r"""((?:password|passwd|secret|passphrase|token)["']?\s*[:=]\s*["']?)"""  # noqa: S105 - a pattern
_PASSWORD_KEY = re.compile(r"password|passwd|secret|passphrase|token", re.I)


class SecretScrubber:
    """Replaces every registered secret string with `«secret»` in text and in JSON data.

    The process registers the switch passwords it knows (and any other secret) as soon as it
    reads them; the session log scrubs every string (values and keys) of every record with it.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: set[str] = set()
        self._weak: set[str] = set()  # common-word secrets: scrubbed in password contexts only
        self._needles: tuple[str, ...] = ()  # every form, as it reads inside a JSON line
        for s in secrets:
            self.add(s)

    @staticmethod
    def weak(secret: str) -> bool:
        """A secret that is also an ordinary word of the evidence (`admin`, `bridge`, `true`):
        replacing it everywhere would corrupt exports and probe output, so it is scrubbed
        where a password is written (`password=...`, a "password" key), never elsewhere."""
        return len(secret) < 8 or bool(re.fullmatch(r"[A-Za-z]+|[0-9]+", secret))

    def add(self, secret: str) -> None:
        """Register a secret, with the forms it takes inside recorded text: stripped (read from a
        file), JSON-escaped (inside `ip -j` or API output kept as text), RouterOS-escaped (inside
        an export) and percent-encoded (inside a URL)."""
        for base in {secret, secret.strip()}:
            if not base:
                continue
            for variant in (
                base,
                json.dumps(base, ensure_ascii=False)[1:-1],
                re.sub(r'([\\"$?])', r"\\\1", base),
                urllib.parse.quote(base, safe=""),
            ):
                if variant:
                    (self._weak if self.weak(base) else self._secrets).add(variant)
        # JSON escapes character by character, so a form inside a string is, inside the encoded
        # line, that form JSON-escaped: these are what `occurs_in` looks for
        forms = self._secrets | self._weak
        self._needles = tuple(
            sorted(forms | {json.dumps(f, ensure_ascii=False)[1:-1] for f in forms})
        )

    def occurs_in(self, line: str) -> bool:
        """Whether any registered secret, in any of its forms, occurs in `line` (a record as
        JSON text): when none does, scrubbing the record would change nothing."""
        return any(n in line for n in self._needles)

    def __len__(self) -> int:
        return len(self._secrets) + len(self._weak)

    def scrub(self, text: str) -> str:
        if not self._secrets and not self._weak:
            return text
        # Longest first, so a secret containing another is replaced whole.
        for s in sorted(self._secrets, key=len, reverse=True):
            if s in text:
                text = text.replace(s, SCRUBBED)
        for s in sorted(self._weak, key=len, reverse=True):
            if s in text:
                text = re.sub(
                    _PASSWORD_CONTEXT + re.escape(s) + r"(?![\w])", rf"\g<1>{SCRUBBED}", text
                )
        return text

    def scrub_json(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, dict):
            return {
                (self.scrub(k) if isinstance(k, str) else k): (
                    SCRUBBED
                    if isinstance(k, str) and _PASSWORD_KEY.search(k) and v in self._weak
                    else self.scrub_json(v)
                )
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.scrub_json(v) for v in value]
        return value
