"""Symbol findings for one pair of libraries, decided by what the dynamic loader would bind
(:mod:`xcompat.abi.binding`), with the build-time noise filtered out (:mod:`xcompat.abi.noise`).
A symbol that left a library for another one of the same build that it loads still binds:
:func:`loaded_provider` finds that library."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from xcompat.abi import noise
from xcompat.abi.binary import SIZED_TYPES, LibraryInterface
from xcompat.abi.binding import Definition, changed_names, compare_bindings, definitions_of, is_versioned
from xcompat.abi.noise import unhashed_name

if TYPE_CHECKING:
    from xcompat.abi.findings import Collector

Definitions = dict[str, list[Definition]]  # name -> its definitions, as binding.definitions_of gives them
Provider = Callable[[LibraryInterface, str, int | None], str | None]


def loaded_provider(new_libs: dict[str, LibraryInterface]) -> Provider:
    """``provider(lib, key, size)``: the library of the same build that now exports the symbol
    ``key`` (``name`` or ``name@VERSION``) which ``lib`` no longer does, and that ``lib``
    loads, following its NEEDED entries through the build's libraries (by SONAME, file name,
    or auditwheel's hashed name); None when there is none. The loader looks a reference up in
    the whole dependency tree of the object that needs it, so a program linked against the old
    ``lib`` still binds the symbol there. For a data object, ``size`` is its old size: one that
    moved and changed size breaks copy relocations, so it does not count as moved."""
    by_name: dict[str, str] = {}
    for k, lib in sorted(new_libs.items()):
        base = k.rpartition("/")[2]
        for n in (lib.soname, base, unhashed_name(lib.soname or ""), unhashed_name(base)):
            if n:
                by_name.setdefault(n, k)
    bases: dict[str, dict[str, tuple[str, int]]] = {}

    def export_of(k: str, key: str) -> tuple[str, int] | None:
        lib = new_libs[k]
        if key in lib.exports:
            return lib.exports[key]
        if "@" in key:
            return None
        # an unversioned reference binds to the default (not hidden) version of the name
        if k not in bases:
            bases[k] = {e.partition("@")[0]: v for e, v in lib.exports.items()
                        if "@" in e and e not in lib.hidden_versions}
        return bases[k].get(key)

    def provider(lib: LibraryInterface, key: str, size: int | None) -> str | None:
        seen: set[str] = set()
        queue = list(lib.needed)
        while queue:
            n = queue.pop(0)
            k = by_name.get(n) or by_name.get(unhashed_name(n))
            if k is None or k in seen:
                continue
            seen.add(k)
            found = export_of(k, key) if new_libs[k] is not lib else None
            if found is not None and (size is None or found[1] == size):
                return k
            queue.extend(new_libs[k].needed)
        return None

    return provider


def diff_symbols(
    key: str, a: LibraryInterface, b: LibraryInterface, c: Collector, *, extension_exports: tuple[str, ...] = (),
    moved: Callable[[str, int | None], str | None] | None = None,
) -> None:
    """Symbol findings for one library pair, decided by what the loader would bind.
    ``moved(key, size)`` names the library of the build that now exports a symbol ``b`` lost and
    that ``b`` loads (see :func:`loaded_provider`)."""
    extension = a.is_python_extension or b.is_python_extension
    names = changed_names(a, b)
    versioned_a, versioned_b = is_versioned(a), is_versioned(b)
    if names:
        defs = definitions_of(a, names), definitions_of(b, names)
        classes = noise.class_lookup(a.exports, b.exports)  # judges WEAK C++ functions
        _binding_findings(key, a, b, c, defs, extension, extension_exports, classes, _origins(a), moved)
        _added_findings(key, b, c, defs, extension, extension_exports, classes, _origins(b),
                        versioning_added=versioned_b and not versioned_a)
    da, db = set(a.version_defs), set(b.version_defs)
    if versioned_a and not versioned_b:
        c.add("symbol_versioning_removed", key, None,
              f"symbol versions are gone ({', '.join(sorted(da)) or 'hidden versions'}): programs linked against "
              "the old library still bind, but the loader warns 'no version information available'")
        return
    if versioned_b and not versioned_a:
        c.add("symbol_versioning_added", key, None,
              f"a version script was added ({', '.join(sorted(db))}): unversioned references bind to the "
              "default versions, nothing was removed")
        return
    for v in sorted(da - db):
        c.add("symbol_version_removed", key, None,
              f"version node {v} is no longer defined: programs that need it fail to load ('version {v} not found')",
              old=v)
    for v in sorted(db - da):
        c.add("symbol_version_added", key, None, f"version node {v} is newly defined", new=v)


def _origins(lib: LibraryInterface) -> Callable[[str], str | None] | None:
    """Where DWARF says a function is defined (header / source), for a library file with
    debug info; None otherwise (wheel members, release builds)."""
    if not lib.debug_info or lib.format != "elf" or "!" in lib.path:
        return None
    from pathlib import Path

    from xcompat.abi.elf.dwarf import definition_origins

    path = Path(lib.path)
    found = definition_origins(path) if path.is_file() else None
    return found.origin if found is not None else None


def _binding_findings(
    key: str, a: LibraryInterface, b: LibraryInterface, c: Collector, defs: tuple[Definitions, Definitions], extension: bool,
    declared: tuple[str, ...], classes: Callable[[list[str]], bool], origin: Callable[[str], str | None] | None,
    moved: Callable[[str, int | None], str | None] | None = None,
) -> None:
    for ch in compare_bindings(a, b, defs=defs):
        old = ch.old
        weak = old.type_char.isupper() or old.type_char == "u"
        sym = ch.ref.key
        if ch.kind == "size_changed":
            new = ch.new
            assert new is not None
            # GNU-unique objects are unified across all users by the loader: their size
            # matters even though they are vague linkage
            unique = "u" in (old.type_char, new.type_char)
            why = noise.classify(old.key, a, extension=extension, weak=weak and new.type_char.isupper() and not unique,
                                 declared=declared, is_class=classes, origin=origin)
            if why:
                c.filtered["size-noise"] += 1
                continue
            base = ch.ref.name
            what = "thread-local " if "t" in (old.type_char.lower(), new.type_char.lower()) else ""
            kind = "vtable_size_changed" if base.startswith("_ZTV") else "object_size_changed"
            c.add(kind, key, sym, f"{what}size {old.size} -> {new.size} bytes", old=old.size, new=new.size)
            continue
        why = noise.classify(old.key, a, extension=extension, weak=weak, declared=declared, is_class=classes,
                             origin=origin)
        if why:
            c.filtered[why] += 1
            continue
        if ch.kind == "version_gone":
            c.add("symbol_version_removed", key, sym,
                  f"{ch.ref.name} is no longer exported at version {ch.ref.version}", old=ch.ref.version)
        elif ch.ref.version is None and ch.ref.name in defs[1]:
            c.add("symbol_removed", key, sym,
                  f"{sym} is only exported at hidden versions now: unversioned references and dlsym() no longer find it")
        else:
            size = old.size if old.type_char in SIZED_TYPES else None
            where = moved(sym, size) if moved is not None else None
            resized = moved(sym, None) if moved is not None and where is None and size is not None else None
            if resized is not None:
                c.add("symbol_removed", key, sym,
                      f"{sym} is no longer exported here; {resized} exports it at another size than {size} bytes, "
                      "which breaks programs that copy-relocated it")
            elif where is not None:
                lib = key.rpartition("/")[2]
                c.add("symbol_moved", key, sym,
                      f"{sym} is now exported by {where}, which {lib} loads: programs linked against the old "
                      f"{lib} still bind it (linking anew needs {where.rpartition('/')[2]} too)", new=where)
            else:
                c.add("symbol_removed", key, sym, f"{sym} is no longer exported")


def _added_findings(
    key: str, b: LibraryInterface, c: Collector, defs: tuple[Definitions, Definitions], extension: bool,
    declared: tuple[str, ...], classes: Callable[[list[str]], bool], origin: Callable[[str], str | None] | None,
    *, versioning_added: bool,
) -> None:
    da, db = defs
    for name in sorted(db):
        old_keys = {d.key for d in da.get(name, ())}
        for d in db[name]:
            if d.key in old_keys:
                continue
            weak = d.type_char.isupper() or d.type_char == "u"
            why = noise.classify(d.key, b, extension=extension, weak=weak, declared=declared, is_class=classes,
                                 origin=origin)
            if why:
                c.filtered[why] += 1
                continue
            if name not in da:
                c.add("symbol_added", key, d.key, f"{d.key} is newly exported")
            elif versioning_added and all(x.version is None for x in da[name]):
                continue  # reported once as symbol_versioning_added
            elif d.version is not None:
                c.add("symbol_version_added", key, d.key, f"{name} is now also exported at version {d.version}",
                      new=d.version)
