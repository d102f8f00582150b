"""Differences between the native libraries of two builds, paired library by library.

Pairing (recorded for every pair in the result's ``pairs``):

1. two single libraries given explicitly are compared with each other, whatever their names
   (``explicit``);
2. inside wheels and folders: the same path (``path``; ``auditwheel-hash`` when the name
   differs only by auditwheel's / delocate's content hash, ``libz-1a2b3c4d.so.1``);
3. then the same ``DT_SONAME`` (``soname``), then the same name stem in the same folder
   (``stem``: ``libarrow.so.2400`` and ``libarrow.so.2500``), each only when unambiguous.

Whether a symbol reference still binds is decided by :mod:`xcompat.abi.binding`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from xcompat.abi import noise
from xcompat.abi.binary import SIZED_TYPES, LibraryInterface
from xcompat.abi.binding import changed_names, compare_bindings, definitions_of, is_versioned
from xcompat.abi.noise import unhashed_name

if TYPE_CHECKING:
    from xcompat.abi.findings import Collector


class LibraryPair(NamedTuple):  # not a dataclass: see xcompat.abi.binary.SlotRecord
    old_key: str
    new_key: str
    old: LibraryInterface
    new: LibraryInterface
    how: str  # "explicit" | "path" | "auditwheel-hash" | "soname" | "stem"

    def to_dict(self) -> dict[str, str]:
        return {"old": self.old_key, "new": self.new_key, "how": self.how}


class LibraryContext(NamedTuple):
    """What a library diff needs to know about the builds around the libraries."""

    # prefix ("GLIBC_", "GLIBCXX_", "CXXABI_") -> highest version the new wheel's platform tag
    # already promises; empty when there is no tag (single libraries) or it promises nothing
    promised: dict[str, str]
    promised_by: str | None = None
    # policy extension_exports: symbols of extension modules that are interface besides
    # PyInit_*; None: the default convention, noise.default_extension_exports
    extension_exports: tuple[str, ...] | None = None
    # the build is numpy itself: its modules' NumPy C-API target is not a dependency floor
    is_numpy: bool = False


_SO_STEM = re.compile(r"^(?P<stem>.+?)(?:\.so(?:\.[0-9A-Za-z_.]+)?|(?:\.[0-9.]+)?\.dylib)$")


def _stem(key: str) -> tuple[str, str]:
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

    def match(label: str, key_of) -> None:
        groups_old: dict[object, list[str]] = {}
        groups_new: dict[object, list[str]] = {}
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
    match("stem", lambda k, v: _stem(k))
    # wheels cannot hold symlinks: libfoo.so, libfoo.so.24 and libfoo.so.24.0.0 are copies;
    # pair them by the shape of their version suffix
    match("stem", lambda k, v: (*_stem(k), _version_parts(k)))
    return sorted(pairs, key=lambda p: p.old_key), only_old, only_new


def diff_libraries(
    old_libs: dict[str, LibraryInterface], new_libs: dict[str, LibraryInterface], c: Collector, ctx: LibraryContext,
    *, explicit: bool, single_library: bool
) -> list[LibraryPair]:
    pairs, only_old, only_new = pair_libraries(old_libs, new_libs, explicit=explicit)
    where = "in this build" if single_library else "in the wheel"
    for key, lib in sorted(only_old.items()):
        if noise.is_grafted(key):
            c.filtered["grafted-library"] += 1
            continue
        c.add("library_removed", key, None, f"{key} is no longer {where} ({len(lib.exports)} exported symbols)")
    for key, lib in sorted(only_new.items()):
        if noise.is_grafted(key):
            c.filtered["grafted-library"] += 1
            continue
        c.add("library_added", key, None, f"{key} is new ({len(lib.exports)} exported symbols)")
    shipped = {unhashed_name(k.rpartition("/")[2]) for k in new_libs} | {unhashed_name(k.rpartition("/")[2]) for k in old_libs}
    first_of: dict[tuple, LibraryPair] = {}
    provider = loaded_provider(new_libs) if len(new_libs) > 1 else None  # one index of the build for every pair
    for p in pairs:
        # a copy of a library already compared (the same interface on both sides) adds nothing
        sig = (p.old_key.rpartition("/")[0], p.old.soname, p.new.soname, len(p.old.exports), len(p.new.exports))
        seen = first_of.get(sig)
        if seen is not None and seen.old.exports == p.old.exports and seen.new.exports == p.new.exports:
            c.filtered["library-copy"] += 1
            continue
        first_of.setdefault(sig, p)
        _diff_library(p, c, ctx, shipped, provider)
    return pairs


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


def _needed_changes(a: LibraryInterface, b: LibraryInterface, shipped: set[str]):
    """NEEDED entries added and removed, with a bundled library whose version changed
    (``libsodium.so.23`` -> ``libsodium.so.26``, both shipped in the wheel) paired by stem."""
    na = {unhashed_name(n) for n in a.needed}
    nb = {unhashed_name(n) for n in b.needed}
    added, removed = sorted(nb - na), sorted(na - nb)
    stems_removed = {_stem(n)[1]: n for n in removed}
    out_added, out_removed, renamed = [], set(removed), []
    for n in added:
        old_n = stems_removed.get(_stem(n)[1])
        if old_n is not None and n in shipped:
            out_removed.discard(old_n)
            renamed.append((old_n, n))
        else:
            out_added.append(n)
    return out_added, sorted(out_removed), renamed


def _diff_library(
    p: LibraryPair, c: Collector, ctx: LibraryContext, shipped: set[str],
    provider: Provider | None,
) -> None:
    key, a, b = p.new_key, p.old, p.new
    grafted = noise.is_grafted(key)
    if a.soname != b.soname and unhashed_name(a.soname or "") != unhashed_name(b.soname or "") and grafted:
        c.filtered["grafted-library-soname"] += 1  # private to the wheel: only its own modules load it
    elif a.soname != b.soname and unhashed_name(a.soname or "") != unhashed_name(b.soname or ""):
        c.add("soname_changed", key, None,
              f"SONAME {a.soname} -> {b.soname}: programs linked against {a.soname} do not find the new library",
              old=a.soname, new=b.soname)
    added, removed, renamed = _needed_changes(a, b, shipped)
    if renamed:
        c.filtered["needed-bundled-version"] += len(renamed)
    for n in added:
        c.add("needed_added", key, None, f"now needs {n} at load time", new=n)
    for n in removed:
        c.add("needed_removed", key, None, f"no longer needs {n}", old=n)
    if (a.rpath, a.runpath) != (b.rpath, b.runpath):
        c.add(
            "rpath_changed",
            key,
            None,
            f"RPATH {':'.join(a.rpath) or '-'} -> {':'.join(b.rpath) or '-'}; "
            f"RUNPATH {':'.join(a.runpath) or '-'} -> {':'.join(b.runpath) or '-'}",
        )
    old_abs = {q for q in a.rpath + a.runpath if q.startswith("/")}
    for entry in sorted({q for q in b.rpath + b.runpath if q.startswith("/")} - old_abs):
        c.add("rpath_absolute_added", key, None,
              f"search path {entry} is absolute: a path of the build machine leaked into the wheel "
              "(use $ORIGIN-relative paths)", new=entry)
    _diff_floors(key, a, b, c, ctx)
    _diff_abi3(key, a, b, c)
    _diff_cuda(key, a, b, c)
    if grafted:
        changed = len(a.exports.keys() ^ b.exports.keys())
        if changed:
            c.filtered["grafted-library-symbols"] += changed
        return
    declared = ctx.extension_exports
    if declared is None:
        declared = noise.default_extension_exports(key)
    diff_symbols(key, a, b, c, extension_exports=declared,
                 moved=(lambda sym, size: provider(b, sym, size)) if provider is not None and b.needed else None)


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
    key: str, a: LibraryInterface, b: LibraryInterface, c: Collector, defs: tuple[dict, dict], extension: bool,
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
    key: str, b: LibraryInterface, c: Collector, defs: tuple[dict, dict], extension: bool,
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


_FLOOR_KINDS = (
    ("GLIBC_", "glibc_floor_raised", "glibc"),
    ("GLIBCXX_", "libstdcxx_floor_raised", "libstdc++"),
    ("CXXABI_", "cxxabi_floor_raised", "CXXABI"),
)


def _vtuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text))


def max_needed(lib: LibraryInterface, prefix: str) -> str | None:
    best: str | None = None
    for versions in lib.version_needs.values():
        for v in versions:
            numbered = v.startswith(prefix) and v[len(prefix) : len(prefix) + 1].isdigit()
            if numbered and (best is None or _vtuple(v) > _vtuple(best)):
                best = v
    return best


def _diff_floors(key: str, a: LibraryInterface, b: LibraryInterface, c: Collector, ctx: LibraryContext) -> None:
    for prefix, kind, label in _FLOOR_KINDS:
        va, vb = max_needed(a, prefix), max_needed(b, prefix)
        if vb is None or (va is not None and _vtuple(vb) <= _vtuple(va)):
            continue
        floor = _vtuple(va) if va else ()
        newer = [(name, weak) for name, (weak, ver, _lib) in b.imports.items()
                 if ver and ver.startswith(prefix) and _vtuple(ver) > floor]
        # weak imports (e.g. __cxa_finalize) do not need the version at run time: name them last
        culprits = sorted(n for n, w in newer if not w) or sorted(n for n, _w in newer)
        from xcompat.abi.demangle import demangle_many

        culprits = demangle_many(culprits)
        shown = ", ".join(culprits[:5]) + (f" and {len(culprits) - 5} more" if len(culprits) > 5 else "")
        promised = ctx.promised.get(prefix)
        if promised is not None and _vtuple(vb) <= _vtuple(promised):
            c.add("floor_raised_within_tag", key, None,
                  f"{label} floor {va or 'none'} -> {vb}: within {promised}, which the wheel's tag "
                  f"{ctx.promised_by} already requires" + (f" (from {shown})" if shown else ""),
                  old=va, new=vb)
            continue
        extra = ""
        if prefix == "GLIBC_":
            t = _vtuple(vb)
            extra = f"; wheels need manylinux_{t[0]}_{t[1] if len(t) > 1 else 0} or newer"
        if promised is not None:
            extra += f"; the wheel's tag {ctx.promised_by} promises only {promised}"
        c.add(
            kind,
            key,
            None,
            f"{label} floor {va or 'none'} -> {vb}{extra}" + (f" (from {shown})" if shown else ""),
            old=va,
            new=vb,
        )
    if a.macos_target and b.macos_target and _vtuple(b.macos_target) > _vtuple(a.macos_target):
        c.add("macos_target_raised", key, None, f"macOS deployment target {a.macos_target} -> {b.macos_target}",
              old=a.macos_target, new=b.macos_target)
    if a.numpy_target and b.numpy_target and _vtuple(b.numpy_target) > _vtuple(a.numpy_target):
        if ctx.is_numpy:
            c.filtered["numpy-own-capi-target"] += 1
            return
        c.add("numpy_capi_target_changed", key, None,
              f"compiled against the NumPy {a.numpy_target} C-API before, {b.numpy_target} now: "
              f"users need numpy>={b.numpy_target}", old=a.numpy_target, new=b.numpy_target)


def _diff_abi3(key: str, a: LibraryInterface, b: LibraryInterface, c: Collector) -> None:
    from xcompat.abi.abi3 import abi3_floor, is_abi3_module

    if not is_abi3_module(key):
        return
    fa, fb = abi3_floor(a), abi3_floor(b)
    if fa is None or fb is None:
        c.unchecked.append(f"{key}: abi3 floor not computed (install abi3info: pip install 'xcompat[abi]')")
        return
    if fb[0] > fa[0]:
        old, new = ".".join(map(str, fa[0])), ".".join(map(str, fb[0]))
        shown = ", ".join(fb[1][:5])
        c.add("abi3_floor_raised", key, None,
              f"Limited API floor {old} -> {new} (needs {shown}): Python {old}..{fb[0][0]}.{fb[0][1] - 1} can no longer import it",
              old=old, new=new)


def _diff_cuda(key: str, a: LibraryInterface, b: LibraryInterface, c: Collector) -> None:
    if a.cuda_archs is None and b.cuda_archs is None:
        return
    sa, sb = set(a.cuda_archs or ()), set(b.cuda_archs or ())
    ptx_b = sorted(int(x.split("_")[1]) for x in sb if x.startswith("compute_"))
    for arch in sorted(sa - sb, key=lambda x: int(x.split("_")[1])):
        num = int(arch.split("_")[1])
        fallback = [p for p in ptx_b if p <= num]
        note = (
            f"; PTX for compute_{fallback[-1]} can still be JIT-compiled for it (slow first start)"
            if fallback and arch.startswith("sm_")
            else ""
        )
        c.add("cuda_arch_dropped", key, arch, f"device code for {arch} is no longer in the fat binary{note}", old=arch)
    for arch in sorted(sb - sa, key=lambda x: int(x.split("_")[1])):
        c.add("cuda_arch_added", key, arch, f"device code for {arch} is new", new=arch)


