"""The member rules every archive is held to (``xcompat.archives``): a member's name, kind and
size, and the one error a refusal raises."""

from __future__ import annotations

import lzma
import re
import tarfile
import zipfile
import zlib
from pathlib import Path

from xcompat import limits as _limits
from xcompat.errors import InputError

COPY_BLOCK = 1 << 20
# Inflation ratios are only judged past this size: small members compress unevenly.
RATIO_FLOOR = 1 << 20
_SHOWN_NAME_CHARS = 200
DRIVE = re.compile(r"^[A-Za-z]:")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
DAMAGED = "build or download it again"
UNREADABLE = (zipfile.BadZipFile, tarfile.TarError, zlib.error, lzma.LZMAError, EOFError, OSError,
               NotImplementedError, RuntimeError, ValueError)


class ArchiveError(InputError):
    """An archive is unreadable or holds a member xcompat refuses to read or unpack."""


def show(name: str) -> str:
    """A member name for a one-line message: quoted (control characters escaped) and capped."""
    if len(name) > _SHOWN_NAME_CHARS:
        return repr(name[:_SHOWN_NAME_CHARS]) + "..."
    return repr(name)


def refuse(archive: str | Path, name: str, why: str, *, what: str) -> ArchiveError:
    return ArchiveError(f"refusing member {show(name)}: it {why}", file=archive,
                        hint=f"this {what} cannot be trusted: {DAMAGED} from its source")


def member_parts(archive: str | Path, name: str, *, what: str = "archive") -> tuple[str, ...]:
    """The path parts of member ``name``, or ``ArchiveError`` when the name is not a plain
    relative path inside the archive."""
    if not name or CONTROL.search(name):
        raise refuse(archive, name, "has an invalid name (empty, or a NUL or control character in it)", what=what)
    if name.startswith("/") or DRIVE.match(name):
        raise refuse(archive, name, f"points outside the {what}; a member is a relative path", what=what)
    if "\\" in name:
        raise refuse(archive, name, "has a backslash in its name; member paths are separated by /", what=what)
    raw = name.split("/")
    if ".." in raw:
        raise refuse(archive, name, f"points outside the {what}; a member is a relative path", what=what)
    parts = tuple(p for p in raw if p not in ("", "."))
    if not parts:
        raise refuse(archive, name, "has an invalid name (no path in it)", what=what)
    return parts


def check_size(archive: str | Path, name: str, declared: int, packed: int | None, total: int, *, what: str) -> None:
    lim = _limits.LIMITS
    if declared < 0:
        raise refuse(archive, name, "declares a negative size", what=what)
    if declared > lim.wheel_member_bytes:
        raise refuse(archive, name, f"inflates to {declared} bytes, over the limit of {lim.wheel_member_bytes}",
                      what=what)
    if packed is not None and declared > RATIO_FLOOR and declared > lim.wheel_compression_ratio * max(packed, 1):
        raise refuse(archive, name, f"inflates {declared // max(packed, 1)} times (a zip bomb?); refused", what=what)
    if total > lim.wheel_total_bytes:
        raise ArchiveError(f"members inflate to more than {lim.wheel_total_bytes} bytes; refused", file=archive,
                           hint=f"this {what} cannot be trusted: {DAMAGED} from its source")


def too_many(archive: str | Path, count: int, *, what: str) -> ArchiveError:
    return ArchiveError(f"more than {_limits.LIMITS.wheel_members} members ({count} seen), over the limit",
                        file=archive, hint=f"this {what} cannot be trusted: {DAMAGED} from its source")


