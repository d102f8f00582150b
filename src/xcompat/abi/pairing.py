"""Which library of the new build is the old build's library, and how it was recognised.

Pairing (recorded for every pair in the result's ``pairs``):

1. two single libraries given explicitly are compared with each other, whatever their names
   (``explicit``);
2. inside wheels and folders: the same path (``path``; ``auditwheel-hash`` when the name
   differs only by auditwheel's / delocate's content hash, ``libz-1a2b3c4d.so.1``);
3. then the same ``DT_SONAME`` (``soname``), then the same name stem in the same folder
   (``stem``: ``libarrow.so.2400`` and ``libarrow.so.2500``), each only when unambiguous.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from typing import NamedTuple

from xcompat.abi.binary import LibraryInterface
from xcompat.abi.noise import unhashed_name


class LibraryPair(NamedTuple):  # not a dataclass: see xcompat.abi.binary.SlotRecord
    old_key: str
    new_key: str
    old: LibraryInterface
    new: LibraryInterface
    how: str  # "explicit" | "path" | "auditwheel-hash" | "soname" | "stem"

    def to_dict(self) -> dict[str, str]:
        return {"old": self.old_key, "new": self.new_key, "how": self.how}


_SO_STEM = re.compile(r"^(?P<stem>.+?)(?:\.so(?:\.[0-9A-Za-z_.]+)?|(?:\.[0-9.]+)?\.dylib)$")


def library_stem(key: str) -> tuple[str, str]:
    """(folder, name stem) of a library key: ``pkg/libarrow.so.2400`` -> (``pkg``, ``libarrow``)."""
    head, _, base = key.rpartition("/")
    base = unhashed_name(base)
    m = _SO_STEM.match(base)
    return head, (m.group("stem") if m else base)


def _version_parts(key: str) -> int:
    """How many version components follow ``.so`` in a library's name (``.so.24.0.0`` -> 3)."""
    base = unhashed_name(key.rpartition("/")[2])
    _, sep, tail = base.partition(".so.")
    return len(tail.split(".")) if sep else 0


def _member_name(lib: LibraryInterface) -> str:
    return lib.path.rpartition("!")[2].rpartition("/")[2]


def pair_libraries(
    old: dict[str, LibraryInterface], new: dict[str, LibraryInterface], *, explicit: bool = False
) -> tuple[list[LibraryPair], dict[str, LibraryInterface], dict[str, LibraryInterface]]:
    """Pair old and new libraries; return the pairs and the unpaired ones of each side."""
    if explicit and len(old) == 1 and len(new) == 1:
        (ka, a), (kb, b) = next(iter(old.items())), next(iter(new.items()))
        return [LibraryPair(ka, kb, a, b, "explicit")], {}, {}
    pairs: list[LibraryPair] = []
    for k in sorted(old.keys() & new.keys()):
        a, b = old[k], new[k]
        hashed = _member_name(a) != _member_name(b) and unhashed_name(_member_name(a)) == unhashed_name(_member_name(b))
        pairs.append(LibraryPair(k, k, a, b, "auditwheel-hash" if hashed else "path"))
    only_old = {k: v for k, v in old.items() if k not in new}
    only_new = {k: v for k, v in new.items() if k not in old}

    def match(label: str, key_of: Callable[[str, LibraryInterface], Hashable | None]) -> None:
        groups_old: dict[Hashable, list[str]] = {}
        groups_new: dict[Hashable, list[str]] = {}
        for k, v in only_old.items():
            g = key_of(k, v)
            if g is not None:
                groups_old.setdefault(g, []).append(k)
        for k, v in only_new.items():
            g = key_of(k, v)
            if g is not None:
                groups_new.setdefault(g, []).append(k)
        for g, ks in groups_old.items():
            kn = groups_new.get(g, [])
            if len(ks) == 1 and len(kn) == 1:
                pairs.append(LibraryPair(ks[0], kn[0], only_old.pop(ks[0]), only_new.pop(kn[0]), label))

    match("path", lambda k, v: k.rpartition("/")[2])  # a library that moved to another folder
    match("soname", lambda k, v: unhashed_name(v.soname) if v.soname else None)
    match("stem", lambda k, v: library_stem(k))
    # wheels cannot hold symlinks: libfoo.so, libfoo.so.24 and libfoo.so.24.0.0 are copies;
    # pair them by the shape of their version suffix
    match("stem", lambda k, v: (*library_stem(k), _version_parts(k)))
    return sorted(pairs, key=lambda p: p.old_key), only_old, only_new
