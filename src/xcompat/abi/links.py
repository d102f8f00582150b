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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xcompat.abi.binary import LibraryInterface
from xcompat.abi.elf import ELF_MAGIC, ElfError, read_elf
from xcompat.abi.elf.lookup import ElfSymbolIndex
from xcompat.abi.runtimes import TORCH_LIBRARY

SYSTEM_DIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
               "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
TORCH_NAMESPACES = re.compile(r"^_Z(?:T[VIS]|GV)?N?K?(?:3c10|2at|5torch|6caffe2)")
_CPYTHON = re.compile(r"^_?Py|^_Py")


class LinkInputError(ValueError):
    pass


@dataclass
class TorchInstall:
    label: str
    version: str | None
    variant: str
    libs: dict[str, Path]  # file name -> path, torch/lib first, then RPATH folders
    unchecked: list[str] = field(default_factory=list)


def _cache_root() -> Path:
    import os

    base = os.environ.get("XCOMPAT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "xcompat"
    )
    return Path(base)


def _torch_member(name: str) -> bool:
    return name.startswith("torch/lib/") or name == "torch/version.py"


def _extract_torch_wheel(wheel: Path) -> Path:
    """``torch/lib`` and ``torch/version.py`` of a torch wheel, unpacked once per wheel content.

    The wheel goes through the member checks of :mod:`xcompat.archives` (a member named
    ``torch/lib/../../x`` is refused, nothing is written), and the cache folder is named by
    the sha256 of its bytes: a crafted wheel with the same name and size as a real one is
    never served in its place.
    """
    from xcompat.archives import extract_zip_cached

    dest = extract_zip_cached(wheel, _cache_root() / "torch-libs", what="wheel", select=_torch_member)
    if not (dest / "torch" / "lib").is_dir():
        raise LinkInputError(f"{wheel}: has no torch/lib folder; is it a torch wheel?")
    return dest / "torch"


def locate_torch(spec: str | Path) -> TorchInstall:
    path = Path(spec)
    if not path.exists():
        raise LinkInputError(f"{path}: no such torch installation (give site-packages, a torch folder or a torch wheel)")
    label = str(path)
    if path.is_file() and path.suffix == ".whl":
        torch_dir = _extract_torch_wheel(path)
    elif (path / "torch" / "lib").is_dir():
        torch_dir = path / "torch"
    elif (path / "lib").is_dir() and (path / "__init__.py").exists():
        torch_dir = path
    else:
        raise LinkInputError(f"{path}: no torch/lib folder found; give site-packages, a torch folder or a torch wheel")
    version = None
    vfile = torch_dir / "version.py"
    if vfile.exists():
        m = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", vfile.read_text(encoding="utf-8", errors="replace"), re.MULTILINE)
        version = m.group(1) if m else None
    libs: dict[str, Path] = {}
    lib_dir = torch_dir / "lib"
    for f in sorted(lib_dir.iterdir()):
        if ".so" in f.name and f.is_file():
            libs[f.name] = f
    names = set(libs)
    variant = "cuda" if any(n.startswith(("libc10_cuda", "libtorch_cuda")) for n in names) else (
        "rocm" if any(n.startswith(("libc10_hip", "libtorch_hip")) for n in names) else "cpu")
    inst = TorchInstall(label=label, version=version, variant=variant, libs=libs)
    # Follow RPATH/RUNPATH of torch's own libraries to the nvidia / rocm wheels.
    extra_dirs: list[Path] = []
    missing_dirs: set[str] = set()
    for f in list(libs.values()):
        try:
            info = read_elf(f, symbols=False, want_fatbin=False)
        except ElfError:
            continue
        for entry in info.rpath + info.runpath:
            if "$ORIGIN" not in entry and "${ORIGIN}" not in entry:
                continue
            d = Path(entry.replace("${ORIGIN}", str(lib_dir)).replace("$ORIGIN", str(lib_dir)))
            d = Path(*d.parts).resolve() if d.exists() else d
            if d.is_dir():
                if d not in extra_dirs and d != lib_dir.resolve():
                    extra_dirs.append(d)
            elif entry not in ("$ORIGIN",):
                missing_dirs.add(entry)
    for d in extra_dirs:
        for f in sorted(d.iterdir()):
            if ".so" in f.name and f.is_file():
                libs.setdefault(f.name, f)
    if missing_dirs:
        inst.unchecked.append(
            f"{len(missing_dirs)} RPATH folder(s) of torch's libraries are absent here "
            f"({', '.join(sorted(missing_dirs)[:3])}{'...' if len(missing_dirs) > 3 else ''}); "
            "symbols versioned by those libraries were skipped"
        )
    return inst


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
    sibling_names = set()
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
    for m, d in zip(missing_syms, names):
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


def _check_one(libs, sibling_exports, sibling_names, torch: TorchInstall, system: _SystemLibs) -> dict[str, Any]:
    start = time.perf_counter()
    indexes: dict[str, ElfSymbolIndex] = {}
    counts = {"checked": 0, "resolved_torch": 0, "resolved_self": 0, "resolved_system": 0, "skipped_weak": 0,
              "skipped_system_versioned": 0, "skipped_cpython": 0}
    missing: list[dict[str, Any]] = []
    missing_libs: list[dict[str, str]] = []
    unchecked = list(torch.unchecked)

    def torch_index(name: str) -> ElfSymbolIndex | None:
        if name not in indexes:
            try:
                indexes[name] = ElfSymbolIndex(torch.libs[name])
            except (ElfError, OSError):
                indexes[name] = None  # type: ignore[assignment]
        return indexes[name]

    # torch's main libraries first: most imports resolve in libc10 / libtorch_cpu
    order = sorted(torch.libs, key=lambda n: (not n.startswith(("libc10", "libtorch")), n))
    try:
        for member, lib in sorted(libs.items()):
            torch_needed = [n for n in lib.needed if TORCH_LIBRARY.match(n)]
            other_needed = [n for n in lib.needed if not TORCH_LIBRARY.match(n) and n not in sibling_names]
            for n in torch_needed:
                if n not in torch.libs and n not in sibling_names:
                    missing_libs.append({"library": member, "needed": n})
            unresolvable_system = [n for n in other_needed if system.index(n) is None and n not in torch.libs]
            for sym, (weak, ver, verlib) in sorted(lib.imports.items()):
                if weak:
                    counts["skipped_weak"] += 1
                    continue
                if ver is not None and verlib is not None and not TORCH_LIBRARY.match(verlib) and verlib not in sibling_names:
                    counts["skipped_system_versioned"] += 1
                    continue
                if _CPYTHON.match(sym):
                    counts["skipped_cpython"] += 1
                    continue
                counts["checked"] += 1
                if sym in sibling_exports:
                    counts["resolved_self"] += 1
                    continue
                if any((idx := torch_index(n)) is not None and idx.exports(sym, ver) for n in order):
                    counts["resolved_torch"] += 1
                    continue
                if any((idx := system.index(n)) is not None and idx.exports(sym, ver) for n in other_needed):
                    counts["resolved_system"] += 1
                    continue
                if TORCH_NAMESPACES.match(sym) or sym.startswith(("aoti_torch_", "torch_")) or not unresolvable_system:
                    missing.append({"library": member, "symbol": sym, "demangled": sym, "version": ver})
                else:
                    unchecked.append(
                        f"{member}: {sym} not found; it may come from {', '.join(unresolvable_system)}, "
                        "which is not installed here"
                    )
    finally:
        for idx in indexes.values():
            if idx is not None:
                idx.close()
    failed = bool(missing or missing_libs)
    return {
        "torch": torch.label,
        "torch_version": torch.version,
        "variant": torch.variant,
        "status": "failed" if failed else "passed",
        "libraries_searched": len(torch.libs),
        "counts": counts,
        "missing": missing,
        "missing_libraries": missing_libs,
        "unchecked": unchecked,
        "seconds": round(time.perf_counter() - start, 4),
    }
