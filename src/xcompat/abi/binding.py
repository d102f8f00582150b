"""Would a program linked against the old library still bind against the new one?

One place for the rules of the GNU dynamic loader (glibc ``elf/dl-lookup.c``,
``check_match``; ``elf/dl-version.c``, ``match_symbol``) that decide whether a symbol
reference made at link time still resolves at run time. Symbols are compared by *base name*;
the version is an attribute of each definition:

* An **unversioned reference** (the consumer was linked against a library without a version
  script, or the symbol had no version) binds to an unversioned definition or to the
  *default* version (``name@@VER``) of the name. It does not bind to a hidden version
  (``name@VER``, a compat alias). So adding a version script does not remove anything.
* A **versioned reference** ``name@VER`` binds to the definition of ``name`` at ``VER``,
  hidden or default. If the new library defines no versions at all, the loader accepts the
  unversioned definition (and warns "no version information available").
* A version node a consumer needs that the new library no longer defines stops the whole
  library from loading ("version `VER' not found"): every reference to it breaks.

A reference the old library could satisfy is "old library's export": each exported
``(name, version)`` of the old library is a reference some consumer may hold. Sizes of data
objects (and TLS, and vtables) are compared between the definition each reference binds to
in the old and in the new library: a consumer that copied or indexed the object assumed the
old size.
"""

from __future__ import annotations

from itertools import compress
from operator import ne
from typing import NamedTuple

from xcompat.abi.binary import SIZED_TYPES, LibraryInterface


class Definition(NamedTuple):  # not a dataclass: see xcompat.abi.binary.SlotRecord
    """One exported definition of a base name."""

    key: str  # the manifest key: "name" or "name@VER"
    version: str | None
    hidden: bool
    type_char: str
    size: int


class Reference(NamedTuple):
    """A symbol reference a consumer linked against the old library may hold."""

    name: str
    version: str | None  # None: unversioned reference

    @property
    def key(self) -> str:
        return f"{self.name}@{self.version}" if self.version else self.name


def definitions(lib: LibraryInterface) -> dict[str, list[Definition]]:
    """Base name -> its exported definitions."""
    hidden = lib.hidden_versions
    out: dict[str, list[Definition]] = {}
    for key, (tc, size) in lib.exports.items():
        name, sep, ver = key.partition("@")
        out.setdefault(name, []).append(
            Definition(key=key, version=ver if sep else None, hidden=key in hidden, type_char=tc, size=size)
        )
    return out


def is_versioned(lib: LibraryInterface) -> bool:
    """The library defines symbol versions (has a version script)."""
    return bool(lib.version_defs) or any("@" in k for k in lib.hidden_versions)


def references(defs: list[Definition]) -> list[Reference]:
    """The references consumers of the old library may hold to one base name: an unversioned
    one when there is an unversioned or default definition, and one per versioned definition."""
    refs: list[Reference] = []
    name = defs[0].key.partition("@")[0]
    if any(d.version is None or not d.hidden for d in defs):
        refs.append(Reference(name, None))
    refs.extend(Reference(name, d.version) for d in defs if d.version is not None)
    return refs


def bind(ref: Reference, defs: list[Definition] | None, *, versioned: bool) -> Definition | None:
    """The definition in the new library ``ref`` binds to, or None when the loader fails
    (``versioned``: the new library defines versions)."""
    if not defs:
        return None
    if ref.version is None:
        for d in defs:
            if d.version is None:
                return d
        for d in defs:
            if not d.hidden:
                return d
        return None
    for d in defs:
        if d.version == ref.version:
            return d
    if not versioned:
        for d in defs:
            if d.version is None:
                return d
    return None


def old_target(ref: Reference, defs: list[Definition]) -> Definition | None:
    """The definition ``ref`` bound to in the old library."""
    return bind(ref, defs, versioned=True) or bind(ref, defs, versioned=False)


class BindingChange(NamedTuple):
    """One way the new library treats an old reference differently."""

    kind: str  # "unbound" | "version_gone" | "size_changed"
    ref: Reference
    old: Definition
    new: Definition | None = None


def compare_bindings(
    a: LibraryInterface,
    b: LibraryInterface,
    names: set[str] | None = None,
    *,
    defs: tuple[dict[str, list[Definition]], dict[str, list[Definition]]] | None = None,
) -> list[BindingChange]:
    """What happens, name by name, to the references consumers of ``a`` hold, against ``b``.

    ``names``: only these base names (the ones whose key set or size changed); None for all.
    ``defs``: the definitions of those names in ``a`` and ``b``, when already looked up.
    """
    da, db = defs if defs is not None else (definitions_of(a, names), definitions_of(b, names))
    versioned_b = is_versioned(b)
    out: list[BindingChange] = []
    for name, defs_a in da.items():
        defs_b = db.get(name)
        if not defs_b:  # gone altogether: one change per old definition, not per reference
            out.extend(BindingChange("unbound", Reference(name, d.version), d) for d in defs_a)
            continue
        for ref in references(defs_a):
            old = old_target(ref, defs_a)
            if old is None:
                continue
            new = bind(ref, defs_b, versioned=versioned_b)
            if new is None:
                kind = "version_gone" if ref.version else "unbound"
                out.append(BindingChange(kind, ref, old))
            elif old.size and new.size and old.size != new.size and old.type_char in SIZED_TYPES:
                out.append(BindingChange("size_changed", ref, old, new))
    return out


def definitions_of(lib: LibraryInterface, names: set[str] | None) -> dict[str, list[Definition]]:
    """:func:`definitions` restricted to ``names``; a library without symbol versions is
    looked up key by key instead of scanned."""
    if names is None:
        return definitions(lib)
    exports, hidden = lib.exports, lib.hidden_versions
    out: dict[str, list[Definition]] = {}
    if not is_versioned(lib):
        for name in names:
            row = exports.get(name)
            if row is not None:
                out[name] = [Definition(key=name, version=None, hidden=False, type_char=row[0], size=row[1])]
        return out
    for key in exports:
        name, sep, ver = key.partition("@")
        if name in names:
            tc, size = exports[key]
            out.setdefault(name, []).append(
                Definition(key=key, version=ver if sep else None, hidden=key in hidden, type_char=tc, size=size)
            )
    return out


def changed_names(a: LibraryInterface, b: LibraryInterface) -> set[str]:
    """Base names whose definitions differ between ``a`` and ``b`` (by key or object size):
    the only ones :func:`compare_bindings` needs to look at. Set operations on the key views
    run in C, so an unchanged library of 75,000 symbols costs a few milliseconds."""
    ea, eb = a.exports, b.exports
    keys = ea.keys() ^ eb.keys()
    oa, ob = a.object_sizes, b.object_sizes
    # objects of ``a`` missing from ``b`` or of another size there (map/compress run in C;
    # a set of (name, size) items costs twice as much on libtorch's 20,000 objects)
    sized = set(compress(oa, map(ne, oa.values(), map(ob.get, oa))))
    hid = a.hidden_versions ^ b.hidden_versions
    changed = keys | sized | hid
    return {k.partition("@")[0] for k in changed}
