"""Exceptions of the engine, one base with data on them (STYLE.md, Python habits).

Errors are data: a probe or transport failure becomes an `unknown`/`error` verdict carrying the raw
text. These exceptions exist for the places where the engine must stop and tell the operator
something (a broken inventory, a session log from the future), never as a bare traceback.
"""

from __future__ import annotations


class FabwizError(Exception):
    """Base of every error fabwiz raises on purpose. `hint` says what to do about it."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class InventoryError(FabwizError):
    """The inventory file is missing, unreadable or invalid. `path` and `field` say where."""

    def __init__(
        self,
        message: str,
        *,
        path: str,
        field: str | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        where = path if line is None else f"{path}:{line}"
        # a key of the file is printed as written, or quoted when it holds a control character
        # or an escape sequence (a terminal would act on it: a title, a colour, a cursor move)
        shown = field if field is None or field.isprintable() else repr(field)
        loc = f"{where}: {shown}: " if field else f"{where}: "
        super().__init__(loc + message, hint=hint)
        self.path = path
        self.field = field
        self.line = line


class ScenarioError(InventoryError):
    """A lab scenario file is invalid (same shape as an inventory error)."""


class ParseError(FabwizError):
    """A parser met output it does not recognise. `raw` is the text it was given."""

    def __init__(self, message: str, *, tool: str, raw: str = "") -> None:
        super().__init__(f"{tool}: {message}")
        self.tool = tool
        self.raw = raw


class TransportError(FabwizError):
    """A target could not be reached or answered badly. `target` names the node or switch."""

    def __init__(self, message: str, *, target: str, hint: str | None = None) -> None:
        super().__init__(f"{target}: {message}", hint=hint)
        self.target = target


class SessionLogError(FabwizError):
    """A session log cannot be loaded (unknown future version, not a fabwiz log)."""


class FixRefused(FabwizError):
    """A fix was refused or stopped (no export, it would cut the management path, a step of it
    failed). `changed` says whether anything had reached the target before it stopped."""

    def __init__(self, message: str, *, hint: str | None = None, changed: bool = False) -> None:
        super().__init__(message, hint=hint)
        self.changed = changed


class LifecycleError(FabwizError):
    """The engine asked its step life cycle for a move it does not declare: a bug in fabwiz."""

    def __init__(self, step: str, phase: str, trigger: str) -> None:
        super().__init__(
            f"internal error: step {step!r} cannot go {trigger!r} from phase {phase!r}",
            hint="this is a bug in fabwiz: attach the session folder to a bug report; "
            "`fabwiz resume` continues from the last recorded step",
        )
        self.step, self.phase, self.trigger = step, phase, trigger
