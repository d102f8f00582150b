"""The shared objects each test process maps when it ends (Linux's ``/proc/self/maps``).

A library that only a test loads (``ctypes.CDLL``, a lazy import, a plugin) is mapped by the
test's process alone: the runtime-libraries check (``xcompat.contracts``) reads these beside
its import-time snapshot. Kept small: a test process forked from the warm parent already holds
every library the parent had mapped before the first fork (``INHERITED``), so it sends only
the shared objects it added, once, with its last test's messages; the parent keeps each
distinct set of additions once.

Linux only: elsewhere nothing is read and the test result has no ``mapped_libraries``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

MAPS_LIMIT = 32 * 1024 * 1024  # bytes of one process's maps read; 100,000 mappings write about 10 MB
# Distinct sets of additions kept per run; past this, later ones join the last (the paths stay,
# only which process mapped which together is lost).
MAX_SETS = 200
MAX_PATHS = 20_000  # shared objects taken from one process's message
# ``start-end perms offset dev inode   path``: no field before the path holds a ``/``, so a
# line's path runs from its first ``/`` to its end (found in one C-level pass).
_PATH = re.compile(rb"/[^\n]*")
_CHUNK = 1 << 16
_SHARED_OBJECT = re.compile(r"\.so(?:\.[0-9A-Za-z_]+)*$")
_DELETED = " (deleted)"

# The shared objects this process held when its test processes were first forked.
INHERITED: frozenset[str] = frozenset()


def is_shared_object(path: str) -> bool:
    """Named like a shared object: ``libx.so``, ``libx.so.6``, ``_core.cpython-311-x86_64-linux-gnu.so``."""
    return bool(_SHARED_OBJECT.search(os.path.basename(path)))


def mapped_objects(pid: int | str = "self", *, limit: int = MAPS_LIMIT) -> frozenset[str] | None:
    """The shared objects process ``pid`` maps (a removed file by its former path); None where
    there is no ``/proc`` or its maps are unreadable or over ``limit`` bytes."""
    data = _read_bounded(f"/proc/{pid}/maps", limit)
    if data is None:
        return None
    found = set()
    for raw in set(_PATH.findall(data)):
        if b".so" not in raw:  # the interpreter, locale archives, data files: not decoded
            continue
        path = raw.decode("utf-8", "surrogateescape").removesuffix(_DELETED)
        if is_shared_object(path):
            found.add(path)
    return frozenset(found)


def _read_bounded(path: str, limit: int) -> bytes | None:
    """At most ``limit`` bytes of a procfs file (its size reads 0), None when over or unreadable.
    Read in small chunks: one read of ``limit`` bytes would allocate all of them, every time."""
    chunks: list[bytes] = []
    size = 0
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        while size <= limit:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return None


def remember_inherited() -> frozenset[str] | None:
    """In the warm parent, before the first fork: what every test process will inherit."""
    global INHERITED
    found = mapped_objects()
    INHERITED = found or frozenset()
    return found


def end_message() -> dict[str, Any] | None:
    """In a test process after its last test: the wire message of what it added to ``INHERITED``."""
    try:
        found = mapped_objects()
    except Exception:  # noqa: BLE001 - a test left os or re patched: its process's verdict stands, unread
        return None
    if found is None:
        return None if not os.path.isdir("/proc/self") else {"event": "libraries", "nodeid": "", "unread": True}
    return {"event": "libraries", "nodeid": "", "paths": sorted(found - INHERITED)}


@dataclass
class MappedUnion:
    """What the test processes of one run mapped at their end: ``common`` to all of them (the
    warm parent's, inherited), and each distinct set of shared objects some of them added."""

    common: frozenset[str]
    processes: int = 0  # test processes whose maps came back
    unread: int = 0  # test processes whose maps could not be read (over the limit)
    added: dict[frozenset[str], int] = field(default_factory=dict)

    def add(self, message: dict[str, Any]) -> None:
        """Take in one test process's ``libraries`` message (see :func:`end_message`)."""
        if message.get("unread"):
            self.unread += 1
            return
        paths = message.get("paths")
        if not isinstance(paths, list):
            return
        self.processes += 1
        extra = frozenset(p for p in paths[:MAX_PATHS] if isinstance(p, str) and p.startswith("/"))
        if not extra:
            return
        if extra not in self.added and len(self.added) >= MAX_SETS:
            last = next(reversed(self.added))
            extra = last | extra
            self.added.pop(last)
        self.added[extra] = self.added.get(extra, 0) + 1

    def to_dict(self) -> dict[str, Any]:
        # with no process read, what the parent held is no test process's
        return {"processes": self.processes, "unread": self.unread,
                "common": sorted(self.common) if self.processes else [],
                "added": [sorted(s) for s in self.added]}
