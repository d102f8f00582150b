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
129   interrupted by SIGHUP (the terminal or SSH connection went away)
130   interrupted by SIGINT (Ctrl-C)
143   interrupted by SIGTERM (``timeout``, a CI job cancelled, a runner
      shutting down)
====  ==============================================================

An interrupted command leaves nothing half-written and no process it started running
(``xcompat.interrupts``). 129, 130 and 143 are what a shell reports for a process those
signals end (128 + the signal's number), so a caller sees the same code either way.
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
    """Stopped by SIGINT (Ctrl-C), or by a ``KeyboardInterrupt`` no signal raised. Each
    signal xcompat stops on has its class here, for its exit code; build one with
    :func:`interrupted`."""

    exit_code = 130
    label = "interrupted"
    signal_name = "SIGINT"


class Terminated(Interrupted):
    """Stopped by SIGTERM: ``timeout``, a CI job's cancellation, a runner shutting down."""

    exit_code = 143
    signal_name = "SIGTERM"


class HungUp(Interrupted):
    """Stopped by SIGHUP: the terminal or the SSH connection went away."""

    exit_code = 129
    signal_name = "SIGHUP"


def interrupted(signal_name: str | None, what: str, *, where: str = "") -> Interrupted:
    """The error of a command stopped by ``signal_name`` (None: a ``KeyboardInterrupt`` that
    no signal raised, which ends the command as Ctrl-C does), ``where`` it was ("during the
    build stage"), saying ``what`` became of its results."""
    cls = next((c for c in (Terminated, HungUp) if c.signal_name == signal_name), Interrupted)
    by = f" by {signal_name}" if signal_name else ""
    return cls(f"interrupted{by}{' ' + where if where else ''}; {what}")
