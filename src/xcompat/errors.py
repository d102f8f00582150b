"""The exception tree. Every error a user can cause or meet is one of these.

Each class owns its exit code and the one-line message shown to the user; ``cli.main``
is the only place that catches them and the only place that picks an exit code.
Library code raises, it never prints or exits.

Exit codes (documented in README.md, "Exit codes"):

====  ==============================================================
0     success
1     check failed: gating ABI findings, failed tests, gate refused
2     usage or input error (bad flag, malformed file, schema error)
3     signature or trust verification failed (incl. rollback)
4     an external tool failed (build backend, auditwheel, compiler)
5     a required backend, device or tool is not available
130   interrupted (Ctrl-C); nothing half-written is left behind
====  ==============================================================
"""

from __future__ import annotations

from pathlib import Path


class XcompatError(Exception):
    """Base class. ``str(err)`` is the full one-line user-facing message."""

    exit_code: int = 2
    label: str = "error"

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        column: int | None = None,
        hint: str | None = None,
        details: list[str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        self.column = column
        self.hint = hint
        # Extra lines shown after the message (e.g. the tail of a build log).
        self.details = details or []

    def __reduce__(self) -> tuple[object, ...]:
        # Pickled whole (message, hint, place), for a session process that hands its error
        # to the parent (xcompat.isolate.supervised); subclasses' own __init__ is bypassed.
        return (_rebuild, (type(self), self.message, dict(self.__dict__)))

    def location(self) -> str:
        if self.file is None:
            return ""
        loc = self.file
        if self.line is not None:
            loc += f":{self.line}"
            if self.column is not None:
                loc += f":{self.column}"
        return loc

    def __str__(self) -> str:
        loc = self.location()
        text = f"{loc}: {self.message}" if loc else self.message
        if self.hint:
            text += f" ({self.hint})"
        return text


def _rebuild(cls: type[XcompatError], message: str, state: dict[str, object]) -> XcompatError:
    err = cls.__new__(cls)
    Exception.__init__(err, message)
    err.__dict__.update(state)
    return err


class UsageError(XcompatError):
    """Bad command-line usage."""

    exit_code = 2
    label = "usage error"


class InputError(XcompatError):
    """A file given to xcompat is malformed: YAML/JSON syntax, schema, truncated data."""

    exit_code = 2
    label = "input error"


class CheckFailed(XcompatError):
    """The command ran fine and its verdict is negative (gating findings, failed tests)."""

    exit_code = 1
    label = "check failed"


class VerificationError(XcompatError):
    """A signature, trust list or rollback check refused the input."""

    exit_code = 3
    label = "verification failed"


class ToolError(XcompatError):
    """An external tool (build backend, auditwheel, compiler, ssh-keygen) failed."""

    exit_code = 4
    label = "tool failed"


class UnavailableError(XcompatError):
    """A required backend, device or tool is not present on this machine."""

    exit_code = 5
    label = "unavailable"


class Interrupted(XcompatError):
    exit_code = 130
    label = "interrupted"
