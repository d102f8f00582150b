"""Differences between the native libraries of two builds, paired library by library
(:mod:`xcompat.abi.pairing`): libraries removed and added, and for each pair its SONAME,
NEEDED entries and search paths here, its platform floors (:mod:`xcompat.abi.floors_diff`)
and its symbols (:mod:`xcompat.abi.symbol_diff`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from xcompat.abi import noise
from xcompat.abi.binary import LibraryInterface
from xcompat.abi.floors_diff import diff_abi3, diff_cuda, diff_floors
from xcompat.abi.noise import unhashed_name
from xcompat.abi.pairing import LibraryPair, library_stem, pair_libraries
from xcompat.abi.symbol_diff import Provider, diff_symbols, loaded_provider

if TYPE_CHECKING:
    from xcompat.abi.findings import Collector


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
    first_of: dict[tuple[str, str | None, str | None, int, int], LibraryPair] = {}
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


def _needed_changes(
    a: LibraryInterface, b: LibraryInterface, shipped: set[str]
) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """NEEDED entries added and removed, with a bundled library whose version changed
    (``libsodium.so.23`` -> ``libsodium.so.26``, both shipped in the wheel) paired by stem."""
    na = {unhashed_name(n) for n in a.needed}
    nb = {unhashed_name(n) for n in b.needed}
    added, removed = sorted(nb - na), sorted(na - nb)
    stems_removed = {library_stem(n)[1]: n for n in removed}
    out_added: list[str] = []
    out_removed = set(removed)
    renamed: list[tuple[str, str]] = []
    for n in added:
        old_n = stems_removed.get(library_stem(n)[1])
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
    diff_floors(key, a, b, c, promised=ctx.promised, promised_by=ctx.promised_by, is_numpy=ctx.is_numpy)
    diff_abi3(key, a, b, c)
    diff_cuda(key, a, b, c)
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
