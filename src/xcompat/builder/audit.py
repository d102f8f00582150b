"""Auditing built wheels: hashes and tags, the platform policy a Linux wheel satisfies
and the symbols that set it, external libraries, and the abi3 audit of Limited-API modules.

``auditwheel show --json`` (auditwheel >= 6.2) is the source of the policy and external
libraries; older auditwheel releases only print text, which is parsed instead (the
record says which). The symbols that set the policy, the CUDA architectures and leaked
absolute search paths are read from the ELF files themselves, with the same reader
``xcompat abi diff`` uses (:mod:`xcompat.abi.elf`, :mod:`xcompat.abi.fatbin`), each member
streamed once, because auditwheel reports only version names, not symbols.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import tempfile
import threading
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.parser import Parser
from pathlib import Path
from typing import Any

from xcompat.builder.tools import run_tool

# Version-need prefixes of the system libraries a manylinux policy constrains.
_POLICY_PREFIXES = ("GLIBC_", "GLIBCXX_", "CXXABI_", "GCC_")
# At most this many symbol names are listed per policy-setting version.
MAX_POLICY_SYMBOLS = 20


@dataclass(frozen=True, kw_only=True)
class VersionedImport:
    file: str  # path inside the wheel
    library: str  # libc.so.6
    version: str  # GLIBC_2.34
    symbol: str


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def wheel_tags(path: Path) -> dict[str, Any]:
    """Name, version and the expanded ``interpreter-abi-platform`` tags of a wheel file name."""
    from packaging.utils import parse_wheel_filename

    name, version, _build, tags = parse_wheel_filename(path.name)
    return {
        "name": str(name),
        "version": str(version),
        "tags": sorted(str(t) for t in tags),
        "abi3": any(t.abi == "abi3" for t in tags),
        "pure": all(t.platform == "any" for t in tags),
    }


def wheel_metadata(path: Path) -> dict[str, str]:
    from xcompat.archives import read_member
    from xcompat.limits import LIMITS

    with zipfile.ZipFile(path) as zf:
        meta = next((n for n in zf.namelist() if n.endswith(".dist-info/METADATA")), None)
        if meta is None:
            return {}
        data = read_member(path, zf, meta, limit=LIMITS.wheel_metadata_bytes, what="wheel")
        message = Parser().parsestr(data.decode("utf-8", "replace"))
    return {k: str(v) for k, v in message.items()}


def native_members(path: Path) -> list[str]:
    """Paths inside the wheel of its shared objects (.so, .dylib, .pyd, .dll)."""
    suffixes = (".so", ".dylib", ".pyd", ".dll")
    with zipfile.ZipFile(path) as zf:
        return sorted(
            n for n in zf.namelist() if n.endswith(suffixes) or re.search(r"\.so\.\d", n) is not None
        )


# -- auditwheel show ----------------------------------------------------------------


def auditwheel_show(wheel: Path, *, env: Mapping[str, str], json_output: bool | None = None) -> dict[str, Any]:
    """``auditwheel show`` of ``wheel`` as a dict with ``source`` saying how it was read.

    ``json_output=None`` tries ``--json`` first and falls back to the text report when this
    auditwheel does not know the option (one process in the common case, not a probe first).
    """
    if json_output is not False:
        run = run_tool(["auditwheel", "show", "--json", str(wheel)], what="auditwheel show", env=env, capture=True,
                       check=json_output is True)
        if run.returncode == 0:
            data = json.loads(run.stdout)
            return {
                "source": "auditwheel-json",
                "overall_tag": data.get("overall_tag"),
                "sym_tag": data.get("sym_tag"),
                "versioned_symbols": {k: sorted(v) for k, v in (data.get("versioned_symbols") or {}).items()},
                "external_libs": sorted((data.get("external_libs") or {}).keys()),
            }
    run = run_tool(["auditwheel", "show", str(wheel)], what="auditwheel show", env=env, capture=True)
    return parse_auditwheel_text(run.stdout)


def parse_auditwheel_text(text: str) -> dict[str, Any]:
    """Read the text report of ``auditwheel show`` (releases without ``--json``).

    The text wraps at 72 columns; lines are joined before matching.
    """
    flat = " ".join(text.split())
    overall = re.search(r'consistent with the following platform tag: "([^"]+)"', flat)
    sym = re.search(r'constrains the platform tag to "([^"]+)"', flat)
    versioned: dict[str, list[str]] = {}
    for lib, versions in re.findall(r"(\S+?\.so[.\d]*) with versions \{([^}]*)\}", flat):
        versioned[lib] = sorted(v.strip(" '\"") for v in versions.split(",") if v.strip(" '\""))
    external: list[str] = []
    ext = re.search(r"following external shared librar(?:y|ies)[^:]*:(.*?)(?:\. |$)", flat)
    if ext:
        external = sorted(set(re.findall(r"([\w.+-]+\.so[.\d]*)", ext.group(1))))
    if overall is None:
        raise ValueError("unrecognised auditwheel show output (no platform tag line)")
    return {
        "source": "auditwheel-text",
        "overall_tag": overall.group(1),
        "sym_tag": sym.group(1) if sym else overall.group(1),
        "versioned_symbols": versioned,
        "external_libs": external,
    }


# -- ELF: which symbols need which versions ----------------------------------------------


@dataclass(frozen=True, kw_only=True)
class NativeMember:
    """What the build audit needs of one ELF member of a wheel."""

    file: str
    imports: tuple[VersionedImport, ...]
    cuda_archs: tuple[str, ...]
    absolute_search_paths: tuple[str, ...]  # RPATH / RUNPATH entries that are absolute paths
    own_cxx_runtime: str | None = None  # links torch yet carries its own C++ runtime (xcompat.cxxruntime)


_SCAN_CACHE: dict[tuple[str, int, int], tuple[NativeMember, ...]] = {}
_SCAN_LOCK = threading.Lock()  # the build record asks for policy symbols and GPU code in parallel


def scan_native_members(wheel: Path) -> tuple[NativeMember, ...]:
    """Every ELF member of ``wheel`` read once (cached per file, size and mtime, so the policy
    symbols and the GPU code of one wheel cost one pass)."""
    st = wheel.stat()
    key = (str(wheel.resolve()), st.st_size, st.st_mtime_ns)
    with _SCAN_LOCK:
        if key not in _SCAN_CACHE:
            result = _scan(wheel)
            _SCAN_CACHE.clear()
            _SCAN_CACHE[key] = result
        return _SCAN_CACHE[key]


def _scan(wheel: Path) -> tuple[NativeMember, ...]:
    from xcompat.abi.wheel import WheelError, iter_native_members
    from xcompat.cxxruntime import beside_torch

    out: list[NativeMember] = []
    try:
        for member, lib in iter_native_members(wheel):
            if lib.format != "elf":
                continue
            imports = tuple(
                VersionedImport(file=member, library=libname, version=ver, symbol=name)
                for name, (_weak, ver, libname) in sorted(lib.imports.items())
                if ver and libname
            )
            paths = tuple(p for p in (*lib.rpath, *lib.runpath) if p.startswith("/"))
            out.append(NativeMember(file=member, imports=imports, cuda_archs=tuple(lib.cuda_archs or ()),
                                    absolute_search_paths=paths,
                                    own_cxx_runtime=beside_torch(member, lib.needed, lib.exports)))
    except WheelError:
        pass  # an unreadable member: auditwheel show reports the wheel itself
    return tuple(out)


def own_cxx_runtime(wheel: Path) -> dict[str, str]:
    """Per ELF member that links torch's libraries yet carries its own C++ runtime, why: the
    extension loads, and crashes the process on torch's first error message that formats a
    number (two C++ runtimes in one process; xcompat.cxxruntime)."""
    return {m.file: m.own_cxx_runtime for m in scan_native_members(wheel) if m.own_cxx_runtime}


def absolute_search_paths(wheel: Path) -> dict[str, list[str]]:
    """Per ELF member, RPATH / RUNPATH entries that are absolute: a path of the build machine
    leaked into the wheel (``$ORIGIN``-relative paths are what a wheel can rely on)."""
    return {m.file: list(m.absolute_search_paths) for m in scan_native_members(wheel) if m.absolute_search_paths}


def _version_key(version: str) -> tuple[str, tuple[int, ...]]:
    prefix, _, number = version.partition("_")
    parts = tuple(int(p) for p in re.findall(r"\d+", number))
    return prefix, parts


def policy_symbols(wheel: Path, sym_tag: str | None) -> list[dict[str, Any]]:
    """The imports that set a wheel's policy: those needing the newest glibc version, or when
    glibc does not decide the tag, the newest version of each other system library."""
    imports = [imp for member in scan_native_members(wheel) for imp in member.imports]
    relevant = [i for i in imports if i.version.startswith(_POLICY_PREFIXES)]
    if not relevant:
        return []
    glibc_needed: tuple[int, ...] | None = None
    if sym_tag:
        match = re.match(r"(?:many|musl)linux_(\d+)_(\d+)_", sym_tag)
        if match:
            glibc_needed = (int(match.group(1)), int(match.group(2)))
    newest: dict[str, str] = {}
    for imp in relevant:
        prefix = _version_key(imp.version)[0]
        if prefix not in newest or _version_key(imp.version) > _version_key(newest[prefix]):
            newest[prefix] = imp.version
    chosen: set[str]
    glibc = newest.get("GLIBC")
    if glibc is not None and glibc_needed is not None and _version_key(glibc)[1][:2] == glibc_needed:
        chosen = {glibc}
    else:
        chosen = set(newest.values())
    out: list[dict[str, Any]] = []
    for version in sorted(chosen, key=_version_key):
        hits = sorted({(i.symbol, i.file, i.library) for i in relevant if i.version == version})
        out.append({
            "version": version,
            "library": hits[0][2],
            "symbols": [{"name": s, "file": f} for s, f, _ in hits[:MAX_POLICY_SYMBOLS]],
            "more": max(0, len(hits) - MAX_POLICY_SYMBOLS),
        })
    return out


# -- abi3audit ---------------------------------------------------------------------


def lowest_python(requires_python: str | None) -> str | None:
    """The lowest CPython 3.x minor release allowed by a ``Requires-Python`` specifier."""
    if not requires_python:
        return None
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        spec = SpecifierSet(requires_python)
    except InvalidSpecifier:
        return None
    for minor in range(2, 40):
        if spec.contains(f"3.{minor}.99", prereleases=True) or spec.contains(f"3.{minor}", prereleases=True):
            return f"3.{minor}"
    return None


@dataclass(frozen=True, kw_only=True)
class Abi3Audit:
    status: str  # passed | failed | error
    baseline: str | None
    scope: str  # wheel | modules
    objects: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": "abi3audit",
            "status": self.status,
            "baseline": self.baseline,
            "scope": self.scope,
            "objects": self.objects,
            "errors": self.errors,
        }


def _abi3_objects(report: dict[str, Any]) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for spec in (report.get("specs") or {}).values():
        entries = spec.get("wheel") if spec.get("kind") == "wheel" else [spec.get("object")]
        for entry in entries or []:
            if not entry:
                continue
            result = entry.get("result") or {}
            objects.append({
                "name": entry.get("name"),
                "is_abi3": bool(result.get("is_abi3")),
                "baseline": result.get("baseline"),
                "computed": result.get("computed"),
                "compatible": bool(result.get("is_abi3_baseline_compatible")),
                "non_abi3_symbols": sorted(result.get("non_abi3_symbols") or []),
                "future_abi3_objects": dict(result.get("future_abi3_objects") or {}),
            })
    return objects


def abi3_audit(wheel: Path, *, env: Mapping[str, str]) -> Abi3Audit | None:
    """Run abi3audit on an abi3 wheel, or on the ``*.abi3.so`` modules of any other wheel.

    For a wheel not tagged abi3 the baseline is the lowest Python its ``Requires-Python``
    allows: every abi3 module in it must load there. Returns None when there is nothing
    to audit.
    """
    info = wheel_tags(wheel)
    errors: list[str] = []
    if info["abi3"]:
        run = run_tool(["abi3audit", "--report", str(wheel)], what="abi3audit", env=env, capture=True, check=False)
        scope, baseline = "wheel", None
    else:
        modules = [m for m in native_members(wheel) if ".abi3." in Path(m).name]
        if not modules:
            return None
        baseline = lowest_python(wheel_metadata(wheel).get("Requires-Python")) or "3.2"
        from xcompat.archives import extract_zip

        with tempfile.TemporaryDirectory(prefix="xcompat-abi3-") as tmp:
            wanted = set(modules)
            # Through the member checks: a module named ../../x.abi3.so is refused, not written.
            written = extract_zip(wheel, Path(tmp), what="wheel", select=wanted.__contains__)
            paths = [str(Path(tmp, member)) for member in written]
            argv = ["abi3audit", "--report", "--assume-minimum-abi3", baseline, *paths]
            run = run_tool(argv, what="abi3audit", env=env, capture=True, check=False)
        scope = "modules"
    try:
        report = json.loads(run.stdout)
    except json.JSONDecodeError:
        return Abi3Audit(status="error", baseline=baseline, scope=scope, errors=[run.stdout.strip()[:500]])
    objects = _abi3_objects(report)
    for obj in objects:
        if obj["name"] and "/" in obj["name"]:
            obj["name"] = Path(obj["name"]).name
    if scope == "wheel":
        baseline = next((o["baseline"] for o in objects if o["baseline"]), None)
    failed = any(not o["is_abi3"] or not o["compatible"] for o in objects)
    return Abi3Audit(status="failed" if failed else "passed", baseline=baseline, scope=scope, objects=objects,
                     errors=errors)


# -- CUDA fat binaries ---------------------------------------------------------------


def fatbin_archs(data: bytes) -> list[str]:
    """GPU code embedded in an ELF file's ``.nv_fatbin`` section: ``sm_80`` (cubin) and
    ``compute_90`` (PTX) entries, read by :mod:`xcompat.abi.fatbin` (as ``abi diff`` does);
    an empty list for anything that is not an ELF file with device code."""
    from xcompat.abi.elf import ElfError, read_elf_bytes

    try:
        lib = read_elf_bytes(data, display_name="<member>")
    except (ElfError, struct.error):
        return []
    return list(lib.cuda_archs or ())


def wheel_gpu_code(wheel: Path) -> dict[str, list[str]]:
    """Per shared object of the wheel, the CUDA archs it carries code for (objects without
    device code are left out)."""
    return {m.file: list(m.cuda_archs) for m in scan_native_members(wheel) if m.cuda_archs}
