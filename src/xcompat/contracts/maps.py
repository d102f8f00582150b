"""``/proc/<pid>/maps``: which files a Linux process maps, read within a bound.

Each line is ``start-end perms offset dev inode [path]``; the path (which may hold spaces)
is what the kernel shows, ``\\012`` for a newline in a name, `` (deleted)`` after a file that
was removed since. Only the mappings of files are kept, one entry per path. Linux only:
other systems have no ``/proc/<pid>/maps`` (macOS has ``vmmap``, which this does not read).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from xcompat.errors import InputError, UnavailableError
from xcompat.isolate import mapped

MAPS_LIMIT = mapped.MAPS_LIMIT  # one bound for every read of a process's maps, the test processes' too
_LINE = re.compile(r"^[0-9a-f]+-[0-9a-f]+ [-rwxsp]{4} [0-9a-f]+ [0-9a-f]+:[0-9a-f]+ (\d+)(?: +(.*))?$")
_DELETED = " (deleted)"


@dataclass(frozen=True)
class MappedFile:
    path: str
    inode: int
    deleted: bool


@dataclass(frozen=True)
class Maps:
    files: tuple[MappedFile, ...]
    malformed: int  # lines that are not in the kernel's format


def parse_maps(text: str) -> Maps:
    """The mapped files of ``text`` in first-mapped order; pseudo-paths (``[heap]``,
    ``[vdso]``) and anonymous mappings are left out, malformed lines counted."""
    seen: dict[str, MappedFile] = {}
    malformed = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        match = _LINE.match(line.rstrip("\n"))
        if not match:
            malformed += 1
            continue
        path = (match[2] or "").strip()
        if not path.startswith("/"):
            continue
        deleted = path.endswith(_DELETED)
        if deleted:
            path = path[: -len(_DELETED)]
        if path not in seen:
            seen[path] = MappedFile(path, int(match[1]), deleted)
    return Maps(tuple(seen.values()), malformed)


def is_shared_object(path: str) -> bool:
    """Named like a shared object: ``libx.so``, ``libx.so.6``, ``_core.cpython-311-x86_64-linux-gnu.so``."""
    return mapped.is_shared_object(path)


def read_maps(pid: int | str, *, limit: int = MAPS_LIMIT) -> Maps:
    """The maps of process ``pid`` (``"self"`` for this one), at most ``limit`` bytes read."""
    if not os.path.isdir("/proc/self"):
        raise UnavailableError("/proc is not available: reading a process's libraries needs Linux")
    path = f"/proc/{pid}/maps"
    try:
        with open(path, "rb") as fh:  # a procfs file: stat says 0 bytes, so read and count
            data = fh.read(limit + 1)
    except FileNotFoundError:
        raise InputError(f"no process {pid}", file=path) from None
    except PermissionError:
        raise InputError(f"not allowed to read the maps of process {pid}", file=path) from None
    if len(data) > limit:
        raise InputError(f"over the limit of {limit} bytes", file=path)
    return parse_maps(data.decode("utf-8", "surrogateescape"))
