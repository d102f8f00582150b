"""Resolve an extension's undefined symbols against one or more torch installations.

For each torch given (a site-packages folder, a ``torch`` package folder or a torch wheel)
the libraries searched are ``torch/lib/*.so*`` plus the folders their RPATH/RUNPATH name
(``$ORIGIN/../../nvidia/*/lib`` for CUDA builds, ``rocm`` folders for ROCm builds) when
those exist. An import is skipped, not reported, when it is

* weak (the loader leaves it null),
* versioned by a library outside torch (``GLIBC_*``, ``GLIBCXX_*``, ``CXXABI_*``,
  ``GCC_*``, ``libcudart.so.12``...): the system or an nvidia wheel provides it,
* a CPython C-API symbol (``Py*``, ``_Py*``): the interpreter provides it.

What is left must be exported by a torch library, the target's own libraries, or a system
library it needs; otherwise importing the extension fails with ``undefined symbol``.

A library that needs torch's libraries but carries its own C++ runtime (libstdc++ linked
statically, found by the runtime's own symbols in its exports: ``std::locale::classic()``,
``__cxa_throw``) fails the check too, whatever torch it is resolved against
(``own_cxx_runtime``; xcompat.cxxruntime).
"""

from __future__ import annotations

import re
import time
import zipfile
from pathlib import Path
from typing import Any

from xcompat.abi.binary import LibraryInterface
from xcompat.abi.elf import ELF_MAGIC, ElfError, read_elf
from xcompat.abi.elf.lookup import ElfSymbolIndex
from xcompat.abi.runtimes import TORCH_LIBRARY
from xcompat.abi.torch_install import LinkInputError, TorchInstall, locate_torch

__all__ = ["LinkInputError", "check_links"]

SYSTEM_DIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
               "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
TORCH_NAMESPACES = re.compile(r"^_Z(?:T[VIS]|GV)?N?K?(?:3c10|2at|5torch|6caffe2)")
_CPYTHON = re.compile(r"^_?Py|^_Py")


def _target_libraries(target: Path) -> dict[str, LibraryInterface]:
    if not target.exists():
        raise LinkInputError(f"{target}: no such file or folder")
    if target.suffix == ".whl":
        from xcompat.abi.wheel import WheelError, iter_native_members

        try:
            return {member: lib for member, lib in iter_native_members(target, want_fatbin=False) if lib.format == "elf"}
        except WheelError as exc:
            raise LinkInputError(str(exc)) from None
    files = [target] if target.is_file() else sorted(p for p in target.rglob("*.so*") if p.is_file())
    out = {}
    for f in files:
        with open(f, "rb") as fh:
            if fh.read(4) != ELF_MAGIC:
                if target.is_file():
                    raise LinkInputError(f"{f}: not an ELF shared object (links checks Linux extensions)")
                continue
        try:
            out[str(f.relative_to(target)) if target.is_dir() else f.name] = read_elf(f, want_fatbin=False)
        except ElfError as exc:
            raise LinkInputError(str(exc)) from None
    if not out:
        raise LinkInputError(f"{target}: no ELF extension modules or libraries found")
    return out


class _SystemLibs:
    def __init__(self) -> None:
        self._cache: dict[str, ElfSymbolIndex | None] = {}

    def index(self, soname: str) -> ElfSymbolIndex | None:
        if soname not in self._cache:
            found = None
            for d in SYSTEM_DIRS:
                p = Path(d) / soname
                if p.is_file():
                    try:
                        found = ElfSymbolIndex(p)
                    except (ElfError, OSError):
                        found = None
                    break
            self._cache[soname] = found
        return self._cache[soname]

    def close(self) -> None:
        for idx in self._cache.values():
            if idx is not None:
                idx.close()


def check_links(target: str | Path, torches: list[str | Path]) -> dict[str, Any]:
    """Resolve ``target``'s imports against each torch; the ``abi-links`` result document."""
    from xcompat.abi.demangle import demangle_many

    target = Path(target)
    libs = _target_libraries(target)
    sibling_exports: set[str] = set()
    sibling_names: set[str] = set()
    for member, lib in libs.items():
        sibling_names.add(member.rsplit("/", 1)[-1])
        if lib.soname:
            sibling_names.add(lib.soname)
        sibling_exports.update(k.partition("@")[0] for k in lib.exports)
    system = _SystemLibs()
    results = []
    try:
        for spec in torches:
            results.append(_check_one(libs, sibling_exports, sibling_names, locate_torch(spec), system))
    finally:
        system.close()
    own_runtime = _own_cxx_runtime(libs)
    declared = _declared_torch(target)
    for r in results:
        r["allowed_by_requirement"] = _allows(declared, r["torch_version"])
    missing_syms = [m for r in results for m in r["missing"]]
    names = demangle_many([m["symbol"] for m in missing_syms])
    for m, d in zip(missing_syms, names, strict=True):
        m["demangled"] = d
    failed = [r for r in results if r["status"] == "failed"]
    if failed:
        summary = "; ".join(
            f"torch {r['torch_version'] or r['torch']}: {len(r['missing'])} missing symbol(s)"
            + (f", {len(r['missing_libraries'])} missing librar(y/ies)" if r["missing_libraries"] else "")
            + (f" although the wheel's requirement {declared} allows it" if r["allowed_by_requirement"] else "")
            + (" (a GPU build checked against a CPU torch)" if _variant_mismatch(r) else "")
            for r in failed
        )
    else:
        summary = f"all imports resolve against {len(results)} torch installation(s)"
    if own_runtime:
        summary += (f"; {len(own_runtime)} librar{'y carries' if len(own_runtime) == 1 else 'ies carry'} "
                    "its own C++ runtime beside torch's (libstdc++ linked statically)")
    return {
        "version": 1,
        "kind": "abi-links",
        "cell_id": None,
        "status": "failed" if failed or own_runtime else "passed",
        "summary": summary,
        "target": str(target),
        "declared_requirement": declared,
        "torches": results,
        "own_cxx_runtime": own_runtime,
    }


def _own_cxx_runtime(libs: dict[str, LibraryInterface]) -> list[dict[str, str]]:
    """Libraries that link against torch yet carry a C++ runtime of their own
    (xcompat.abi.runtimes): torch's objects then cross between two runtimes."""
    from xcompat.abi.runtimes import beside_torch

    found = []
    for member, lib in sorted(libs.items()):
        finding = beside_torch(member, lib.needed, lib.exports)
        if finding is not None:
            found.append({"library": member, "finding": finding})
    return found


def _variant_mismatch(result: dict[str, Any]) -> bool:
    libs = [m["needed"] for m in result["missing_libraries"]]
    return result["variant"] == "cpu" and bool(libs) and all(("cuda" in n or "hip" in n) for n in libs)


def _declared_torch(target: Path) -> str | None:
    """The wheel's ``Requires-Dist: torch...`` line (None for a bare library or no torch pin)."""
    if target.suffix != ".whl":
        return None
    from xcompat.abi.wheel import WheelError, open_wheel, read_metadata

    try:
        with open_wheel(target) as zf:
            md = read_metadata(zf, target.name)
    except (WheelError, zipfile.BadZipFile, OSError):
        return None
    from packaging.requirements import InvalidRequirement, Requirement

    for req in md.requires_dist:
        try:
            parsed = Requirement(req)
        except InvalidRequirement:
            continue
        if parsed.name.lower() == "torch":
            return f"torch{parsed.specifier}"
    return None


def _allows(declared: str | None, version: str | None) -> bool | None:
    """Whether the declared requirement admits ``version`` (local labels like +cpu ignored)."""
    if declared is None or version is None:
        return None
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import InvalidVersion, Version

    try:
        spec = Requirement(declared).specifier
        return spec.contains(Version(version).public, prereleases=True)
    except (InvalidRequirement, InvalidVersion):
        return None


def _check_one(libs: dict[str, LibraryInterface], sibling_exports: set[str], sibling_names: set[str],
               torch: TorchInstall, system: _SystemLibs) -> dict[str, Any]:
    start = time.perf_counter()
    check = _TorchLinks(torch, system, sibling_exports, sibling_names)
    try:
        for member, lib in sorted(libs.items()):
            check.check_library(member, lib)
    finally:
        check.close()
    failed = bool(check.missing or check.missing_libs)
    return {
        "torch": torch.label,
        "torch_version": torch.version,
        "variant": torch.variant,
        "status": "failed" if failed else "passed",
        "libraries_searched": len(torch.libs),
        "counts": check.counts,
        "missing": check.missing,
        "missing_libraries": check.missing_libs,
        "unchecked": check.unchecked,
        "seconds": round(time.perf_counter() - start, 4),
    }


class _TorchLinks:
    """The imports of the target's libraries, resolved against one torch installation."""

    def __init__(self, torch: TorchInstall, system: _SystemLibs, sibling_exports: set[str],
                 sibling_names: set[str]) -> None:
        self.torch = torch
        self.system = system
        self.sibling_exports = sibling_exports
        self.sibling_names = sibling_names
        self.indexes: dict[str, ElfSymbolIndex | None] = {}
        self.counts = {"checked": 0, "resolved_torch": 0, "resolved_self": 0, "resolved_system": 0,
                       "skipped_weak": 0, "skipped_system_versioned": 0, "skipped_cpython": 0}
        self.missing: list[dict[str, Any]] = []
        self.missing_libs: list[dict[str, str]] = []
        self.unchecked = list(torch.unchecked)
        # torch's main libraries first: most imports resolve in libc10 / libtorch_cpu
        self.order = sorted(torch.libs, key=lambda n: (not n.startswith(("libc10", "libtorch")), n))

    def torch_index(self, name: str) -> ElfSymbolIndex | None:
        if name not in self.indexes:
            try:
                self.indexes[name] = ElfSymbolIndex(self.torch.libs[name])
            except (ElfError, OSError):
                self.indexes[name] = None
        return self.indexes[name]

    def close(self) -> None:
        for idx in self.indexes.values():
            if idx is not None:
                idx.close()

    def check_library(self, member: str, lib: LibraryInterface) -> None:
        torch_needed = [n for n in lib.needed if TORCH_LIBRARY.match(n)]
        other_needed = [n for n in lib.needed if not TORCH_LIBRARY.match(n) and n not in self.sibling_names]
        for n in torch_needed:
            if n not in self.torch.libs and n not in self.sibling_names:
                self.missing_libs.append({"library": member, "needed": n})
        unresolvable_system = [n for n in other_needed if self.system.index(n) is None and n not in self.torch.libs]
        for sym, (weak, ver, verlib) in sorted(lib.imports.items()):
            skipped = self._skipped(sym, weak, ver, verlib)
            if skipped is not None:
                self.counts[skipped] += 1
                continue
            self.counts["checked"] += 1
            resolved = self._resolved(sym, ver, other_needed)
            if resolved is not None:
                self.counts[resolved] += 1
            elif TORCH_NAMESPACES.match(sym) or sym.startswith(("aoti_torch_", "torch_")) or not unresolvable_system:
                self.missing.append({"library": member, "symbol": sym, "demangled": sym, "version": ver})
            else:
                self.unchecked.append(
                    f"{member}: {sym} not found; it may come from {', '.join(unresolvable_system)}, "
                    "which is not installed here"
                )

    def _skipped(self, sym: str, weak: bool, ver: str | None, verlib: str | None) -> str | None:
        """The count an import is skipped under, or None when it must resolve."""
        if weak:
            return "skipped_weak"
        if ver is not None and verlib is not None and not TORCH_LIBRARY.match(verlib) and verlib not in self.sibling_names:
            return "skipped_system_versioned"
        if _CPYTHON.match(sym):
            return "skipped_cpython"
        return None

    def _resolved(self, sym: str, ver: str | None, other_needed: list[str]) -> str | None:
        """The count of where an import resolves, or None when nothing here exports it."""
        if sym in self.sibling_exports:
            return "resolved_self"
        if any((idx := self.torch_index(n)) is not None and idx.exports(sym, ver) for n in self.order):
            return "resolved_torch"
        if any((idx := self.system.index(n)) is not None and idx.exports(sym, ver) for n in other_needed):
            return "resolved_system"
        return None
