"""Compare two manifests and classify every difference as a finding with a required bump."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from xcompat.abi import noise
from xcompat.abi.binary import LibraryInterface
from xcompat.abi.manifest import Manifest
from xcompat.abi.noise import unhashed_name
from xcompat.abi.rules import BUMP_RANK, Bump, Policy, make_policy, worst

RESULT_VERSION = 1
WHEEL = "(wheel)"


@dataclass(frozen=True, kw_only=True)
class Finding:
    kind: str
    library: str | None
    symbol: str | None
    demangled: str | None
    required_bump: Bump
    detail: str
    old: Any = None
    new: Any = None

    def to_dict(self) -> dict[str, Any]:
        d = {
            "kind": self.kind,
            "library": self.library,
            "symbol": self.symbol,
            "demangled": self.demangled,
            "required_bump": self.required_bump,
            "detail": self.detail,
        }
        if self.old is not None:
            d["old"] = self.old
        if self.new is not None:
            d["new"] = self.new
        return d


@dataclass(frozen=True, kw_only=True)
class AbiDiff:
    old: Manifest
    new: Manifest
    findings: tuple[Finding, ...]
    unchecked: tuple[str, ...]
    filtered: dict[str, int]
    required_bump: Bump
    actual_bump: Bump | None
    fail_on: Bump = "major"
    cell_id: str | None = None
    gate_kinds: frozenset[str] | None = None

    @property
    def gating(self) -> tuple[Finding, ...]:
        """Findings that make the check fail: those needing more than the actual bump, or
        (without versions) those at or above ``fail_on``; with a policy ``gate`` list, only
        findings of those kinds (then, without versions, regardless of ``fail_on``)."""
        pool = self.findings
        if self.gate_kinds is not None:
            pool = tuple(f for f in pool if f.kind in self.gate_kinds)
        if self.actual_bump is not None:
            limit = BUMP_RANK[self.actual_bump]
            return tuple(f for f in pool if BUMP_RANK[f.required_bump] > limit)
        if self.gate_kinds is not None:
            return tuple(f for f in pool if f.required_bump != "none")
        if self.fail_on == "none":
            return ()
        limit = BUMP_RANK[self.fail_on]
        return tuple(f for f in pool if BUMP_RANK[f.required_bump] >= limit)

    @property
    def status(self) -> str:
        return "failed" if self.gating else "passed"

    def counts(self) -> dict[str, int]:
        return dict(Counter(f.kind for f in self.findings).most_common())

    def summary_line(self) -> str:
        n = len(self.findings)
        gating = len(self.gating)
        head = f"required bump {self.required_bump}"
        if self.actual_bump is not None:
            head += f", actual {self.actual_bump} ({self.old.version} -> {self.new.version})"
        if not n:
            return f"no ABI changes; {head}"
        return f"{n} finding(s), {gating} gating; {head}"

    def to_dict(self) -> dict[str, Any]:
        order = sorted(self.findings, key=lambda f: (-BUMP_RANK[f.required_bump], f.kind, f.library or "", f.symbol or ""))
        return {
            "version": RESULT_VERSION,
            "kind": "abi",
            "cell_id": self.cell_id,
            "status": self.status,
            "summary": self.summary_line(),
            "required_bump": self.required_bump,
            "actual_bump": self.actual_bump,
            "fail_on": self.fail_on,
            "old": self.old.summary(),
            "new": self.new.summary(),
            "counts": self.counts(),
            "gating": len(self.gating),
            "filtered": dict(self.filtered),
            "findings": [f.to_dict() for f in order],
            "unchecked": list(self.unchecked),
        }


class _Collector:
    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.findings: list[Finding] = []
        self.filtered: Counter[str] = Counter()
        self.pending_demangle: list[tuple[int, str]] = []
        self.unchecked: list[str] = []

    def add(self, kind: str, library: str | None, symbol: str | None, detail: str, *, old=None, new=None) -> None:
        if self.policy.ignored(library, symbol):
            self.filtered["policy"] += 1
            return
        if symbol is not None and symbol.partition("@")[0].startswith(("_Z", "__Z")):
            self.pending_demangle.append((len(self.findings), symbol))
        self.findings.append(
            Finding(
                kind=kind,
                library=library,
                symbol=symbol,
                demangled=symbol,
                required_bump=self.policy.bump(kind),
                detail=detail,
                old=old,
                new=new,
            )
        )

    def finish(self) -> list[Finding]:
        if self.pending_demangle:
            from dataclasses import replace

            from xcompat.abi.demangle import demangle_many

            names = demangle_many([s for _i, s in self.pending_demangle])
            for (i, _s), d in zip(self.pending_demangle, names):
                self.findings[i] = replace(self.findings[i], demangled=d)
        return self.findings


def diff_manifests(
    old: Manifest,
    new: Manifest,
    *,
    policy: Policy | dict | None = None,
    actual_bump: Bump | None = None,
    fail_on: Bump = "major",
    cell_id: str | None = None,
) -> AbiDiff:
    if not isinstance(policy, Policy):
        policy = make_policy(policy)
    c = _Collector(policy)
    _diff_libraries(old, new, c)
    _diff_floors_in_tags(old, new, c)
    _diff_requires(old, new, c)
    unchecked = list(old.unchecked) + list(new.unchecked) + c.unchecked
    from xcompat.abi.pyapi import diff_python_api
    from xcompat.abi.torchops import diff_torch_ops

    if old.python_api is not None and new.python_api is not None:
        diff_python_api(old.python_api, new.python_api, c.add)
    elif old.python_api is not None or new.python_api is not None:
        unchecked.append("Python API: extracted on one side only; not compared")
    if old.torch_ops is not None and new.torch_ops is not None:
        diff_torch_ops(old.torch_ops, new.torch_ops, c.add)
    elif old.torch_ops is not None or new.torch_ops is not None:
        unchecked.append("torch operator schemas: extracted on one side only; not compared")
    single = len(old.libraries) == 1 and len(new.libraries) == 1
    if not (old.kind == "library" and new.kind == "library" and single) and old.libraries and new.libraries:
        unchecked.append(
            "type-level changes (struct layout, parameter/return types, enumerators, vtable slot order) were "
            "not checked: this tier reads symbol tables; compare two single libraries built with -g to add abidiff"
        )
    if old.kind == "library" and new.kind == "library" and single:
        from pathlib import Path

        from xcompat.abi.abigail import run_abidiff

        (la,), (lb,) = old.libraries.values(), new.libraries.values()
        if la.format == "elf" and lb.format == "elf":
            run_abidiff(Path(old.source), Path(new.source), c.add, unchecked,
                        old_debug=bool(la.debug_info), new_debug=bool(lb.debug_info))
    findings = tuple(c.finish())
    return AbiDiff(
        old=old,
        new=new,
        findings=findings,
        unchecked=tuple(dict.fromkeys(unchecked)),
        filtered=dict(c.filtered),
        required_bump=worst(f.required_bump for f in findings),
        actual_bump=actual_bump,
        fail_on=fail_on,
        cell_id=cell_id,
        gate_kinds=policy.gate,
    )


# -- libraries -------------------------------------------------------------------------------
def _pair(old: dict[str, LibraryInterface], new: dict[str, LibraryInterface]):
    """Pair libraries by path; then unpaired ones by unique basename (a moved library)."""
    pairs = [(k, old[k], new[k]) for k in old.keys() & new.keys()]
    only_old = {k: v for k, v in old.items() if k not in new}
    only_new = {k: v for k, v in new.items() if k not in old}
    by_base_new: dict[str, list[str]] = {}
    for k in only_new:
        by_base_new.setdefault(k.rpartition("/")[2], []).append(k)
    for k in list(only_old):
        cands = by_base_new.get(k.rpartition("/")[2], [])
        if len(cands) == 1 and cands[0] in only_new:
            pairs.append((k, only_old.pop(k), only_new.pop(cands[0])))
    return sorted(pairs, key=lambda p: p[0]), only_old, only_new


def _diff_libraries(old: Manifest, new: Manifest, c: _Collector) -> None:
    pairs, only_old, only_new = _pair(old.libraries, new.libraries)
    for key, lib in sorted(only_old.items()):
        if noise.is_grafted(key):
            c.filtered["grafted-library"] += 1
            continue
        c.add("library_removed", key, None, f"{key} is no longer in the wheel ({len(lib.exports)} exported symbols)")
    for key, lib in sorted(only_new.items()):
        if noise.is_grafted(key):
            c.filtered["grafted-library"] += 1
            continue
        c.add("library_added", key, None, f"{key} is new ({len(lib.exports)} exported symbols)")
    for key, a, b in pairs:
        _diff_library(key, a, b, c)


def _diff_library(key: str, a: LibraryInterface, b: LibraryInterface, c: _Collector) -> None:
    grafted = noise.is_grafted(key)
    if a.soname != b.soname and unhashed_name(a.soname or "") != unhashed_name(b.soname or ""):
        c.add("soname_changed", key, None, f"SONAME {a.soname} -> {b.soname}", old=a.soname, new=b.soname)
    na = {unhashed_name(n) for n in a.needed}
    nb = {unhashed_name(n) for n in b.needed}
    for n in sorted(nb - na):
        c.add("needed_added", key, None, f"now needs {n} at load time", new=n)
    for n in sorted(na - nb):
        c.add("needed_removed", key, None, f"no longer needs {n}", old=n)
    if (a.rpath, a.runpath) != (b.rpath, b.runpath):
        c.add(
            "rpath_changed",
            key,
            None,
            f"RPATH {':'.join(a.rpath) or '-'} -> {':'.join(b.rpath) or '-'}; "
            f"RUNPATH {':'.join(a.runpath) or '-'} -> {':'.join(b.runpath) or '-'}",
        )
    old_abs = {p for p in a.rpath + a.runpath if p.startswith("/")}
    for entry in sorted({p for p in b.rpath + b.runpath if p.startswith("/")} - old_abs):
        c.add("rpath_absolute_added", key, None,
              f"search path {entry} is absolute: a path of the build machine leaked into the wheel "
              "(use $ORIGIN-relative paths)", new=entry)
    _diff_floors(key, a, b, c)
    _diff_abi3(key, a, b, c)
    _diff_cuda(key, a, b, c)
    if grafted:
        changed = len(a.exports.keys() ^ b.exports.keys())
        if changed:
            c.filtered["grafted-library-symbols"] += changed
        return
    _diff_symbols(key, a, b, c)


def _diff_symbols(key: str, a: LibraryInterface, b: LibraryInterface, c: _Collector) -> None:
    extension = a.is_python_extension or b.is_python_extension
    ea, eb = a.exports, b.exports
    removed = ea.keys() - eb.keys()
    added = eb.keys() - ea.keys()
    names_b = {k.partition("@")[0]: k for k in added} if removed else {}
    names_a = {k.partition("@")[0]: k for k in removed} if added else {}
    for sym in sorted(removed):
        why = noise.classify(sym, a, extension=extension, weak=ea[sym][0].isupper())
        if why:
            c.filtered[why] += 1
            continue
        base, _, ver = sym.partition("@")
        if ver and base in names_b:
            c.add("symbol_version_removed", key, sym, f"{base} is no longer exported at version {ver}", old=ver)
        else:
            c.add("symbol_removed", key, sym, f"{sym} is no longer exported")
    for sym in sorted(added):
        why = noise.classify(sym, b, extension=extension, weak=eb[sym][0].isupper())
        if why:
            c.filtered[why] += 1
            continue
        base, _, ver = sym.partition("@")
        if ver and base in names_a:
            c.add("symbol_version_added", key, sym, f"{base} is now exported at version {ver}", new=ver)
        else:
            c.add("symbol_added", key, sym, f"{sym} is newly exported")
    # st_size of data objects: a layout signal available without debug info. The set
    # difference of the item views runs in C and leaves only symbols whose (type, size) differ.
    oa, ob = a.object_sizes, b.object_sizes
    for sym, sa in oa.items() - ob.items():
        sb = ob.get(sym)
        if sb is None or sa == sb or not sa or not sb:
            continue
        ta, tb = ea[sym][0], eb[sym][0]
        if noise.classify(sym, a, extension=extension, weak=ta.isupper() and tb.isupper()):
            c.filtered["size-noise"] += 1
            continue
        kind = "vtable_size_changed" if sym.startswith("_ZTV") else "object_size_changed"
        c.add(kind, key, sym, f"size {sa} -> {sb} bytes", old=sa, new=sb)
    da, db = set(a.version_defs), set(b.version_defs)
    for v in sorted(da - db):
        c.add("symbol_version_removed", key, None, f"version node {v} is no longer defined", old=v)


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


def _diff_floors(key: str, a: LibraryInterface, b: LibraryInterface, c: _Collector) -> None:
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
        extra = ""
        if prefix == "GLIBC_":
            t = _vtuple(vb)
            extra = f"; wheels need manylinux_{t[0]}_{t[1] if len(t) > 1 else 0} or newer"
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
        c.add("numpy_capi_target_changed", key, None,
              f"compiled against the NumPy {a.numpy_target} C-API before, {b.numpy_target} now: "
              f"users need numpy>={b.numpy_target}", old=a.numpy_target, new=b.numpy_target)


def _diff_abi3(key: str, a: LibraryInterface, b: LibraryInterface, c: _Collector) -> None:
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


def _diff_cuda(key: str, a: LibraryInterface, b: LibraryInterface, c: _Collector) -> None:
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


# -- wheel tags and metadata ---------------------------------------------------------------
_PLAT = re.compile(
    r"^(?:(?P<ml>manylinux)_(?P<a>\d+)_(?P<b>\d+)_(?P<arch>.+)|"
    r"(?P<legacy>manylinux(?:1|2010|2014))_(?P<larch>.+)|"
    r"(?P<musl>musllinux)_(?P<ma>\d+)_(?P<mb>\d+)_(?P<march>.+)|"
    r"macosx_(?P<mac>\d+)_(?P<mmin>\d+)_(?P<macarch>.+))$"
)
_LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def _plat(tag: str) -> tuple[str, str, tuple[int, int]] | None:
    m = _PLAT.match(tag)
    if not m:
        return None
    if m.group("ml"):
        return ("manylinux", m.group("arch"), (int(m.group("a")), int(m.group("b"))))
    if m.group("legacy"):
        return ("manylinux", m.group("larch"), _LEGACY[m.group("legacy")])
    if m.group("musl"):
        return ("musllinux", m.group("march"), (int(m.group("ma")), int(m.group("mb"))))
    return ("macosx", m.group("macarch"), (int(m.group("mac")), int(m.group("mmin"))))


def _semantic_tags(tags):
    """(interpreter, abi, family, arch) -> lowest floor; tags without a floor keep their platform."""
    out: dict[tuple[str, str, str, str], tuple[int, int] | None] = {}
    for tag in tags:
        interp, abi, plat = tag.split("-", 2)
        p = _plat(plat)
        if p is None:
            out[(interp, abi, plat, "")] = None
            continue
        k = (interp, abi, p[0], p[1])
        if k not in out or (out[k] is not None and p[2] < out[k]):
            out[k] = p[2]
    return out


def _diff_floors_in_tags(old: Manifest, new: Manifest, c: _Collector) -> None:
    if not old.tags or not new.tags:
        return
    a, b = _semantic_tags(old.tags), _semantic_tags(new.tags)
    abi3_a = {k: int(k[0][3:] or 0) for k in a if k[1] == "abi3" and k[0][3:].isdigit()}
    abi3_b = {(k[2], k[3]): int(k[0][3:]) for k in b if k[1] == "abi3" and k[0][3:].isdigit()}
    for k in sorted(a.keys() - b.keys()):
        interp, abi, fam, arch = k
        if k in abi3_a and (fam, arch) in abi3_b and abi3_b[(fam, arch)] > abi3_a[k]:
            new_floor = abi3_b[(fam, arch)]
            c.add("abi3_floor_raised", WHEEL, None,
                  f"abi3 floor {_py(abi3_a[k])} -> {_py(new_floor)} ({fam} {arch}): Python {_py(abi3_a[k])}"
                  f"..{_py(new_floor - 1)} lose their wheel", old=f"{interp}-abi3", new=f"cp{new_floor}-abi3")
            continue
        text = f"{interp}-{abi}-{fam}" + (f"_{arch}" if arch else "")
        c.add("wheel_tag_dropped", WHEEL, None, f"no wheel for {text} any more", old=text)
    for k in sorted(a.keys() & b.keys()):
        fa, fb = a[k], b[k]
        if fa is None or fb is None or fb <= fa:
            continue
        interp, abi, fam, arch = k
        kind = {"manylinux": "glibc_floor_raised", "musllinux": "glibc_floor_raised", "macosx": "macos_target_raised"}[fam]
        c.add(kind, WHEEL, None, f"{interp}-{abi}: {fam}_{fa[0]}_{fa[1]}_{arch} -> {fam}_{fb[0]}_{fb[1]}_{arch}",
              old=f"{fa[0]}.{fa[1]}", new=f"{fb[0]}.{fb[1]}")
    for k in sorted(b.keys() - a.keys()):
        interp, abi, fam, arch = k
        if k[1] == "abi3" and (fam, arch) in {(x[2], x[3]) for x in abi3_a}:
            continue
        text = f"{interp}-{abi}-{fam}" + (f"_{arch}" if arch else "")
        c.add("wheel_tag_added", WHEEL, None, f"new wheel for {text}", new=text)


def _py(n: int) -> str:
    s = str(n)
    return f"{s[0]}.{s[1:]}"


_PY_CANDIDATES = [f"{major}.{minor}{patch}" for major in (2, 3) for minor in range(21) for patch in ("", ".0", ".99")]


def _diff_requires(old: Manifest, new: Manifest, c: _Collector) -> None:
    if not (old.requires_python or new.requires_python or old.requires_dist or new.requires_dist):
        return
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.utils import canonicalize_name

    if old.requires_python != new.requires_python and old.kind != "library" and new.kind != "library":
        try:
            sa = SpecifierSet(old.requires_python or "")
            sb = SpecifierSet(new.requires_python or "")
        except InvalidSpecifier as exc:
            c.add("requires_python_narrowed", WHEEL, None, f"Requires-Python cannot be parsed: {exc}")
        else:
            lost = [v for v in _PY_CANDIDATES if v in sa and v not in sb and not v.endswith((".0", ".99"))]
            if lost or [v for v in _PY_CANDIDATES if v in sa and v not in sb]:
                shown = ", ".join(lost) or "some patch releases"
                c.add("requires_python_narrowed", WHEEL, None,
                      f"Requires-Python {old.requires_python or '(any)'} -> {new.requires_python}: drops {shown}",
                      old=old.requires_python, new=new.requires_python)
            else:
                c.add("requires_python_widened", WHEEL, None,
                      f"Requires-Python {old.requires_python} -> {new.requires_python or '(any)'}",
                      old=old.requires_python, new=new.requires_python)

    def reqs(items):
        out = {}
        for text in items:
            try:
                r = Requirement(text)
            except InvalidRequirement:
                continue
            if r.marker is not None and "extra" in str(r.marker):
                continue
            out[canonicalize_name(r.name)] = r
        return out

    ra, rb = reqs(old.requires_dist), reqs(new.requires_dist)
    for name in sorted(rb.keys() - ra.keys()):
        c.add("requires_dist_added", WHEEL, None, f"new dependency {rb[name]}", new=str(rb[name]))
    for name in sorted(ra.keys() & rb.keys()):
        a, b = ra[name].specifier, rb[name].specifier
        if str(a) == str(b):
            continue
        lost = [v for v in _version_candidates(a, b) if a.contains(v, prereleases=False) and not b.contains(v, prereleases=False)]
        if lost:
            c.add("requires_dist_narrowed", WHEEL, name,
                  f"{name}: {a or '(any)'} -> {b}: no longer allows {', '.join(lost[:4])}",
                  old=str(a) or None, new=str(b))


def _version_candidates(*specs) -> list[str]:
    from packaging.version import InvalidVersion, Version

    points: set[Version] = set()
    for spec in specs:
        for s in spec:
            try:
                v = Version(s.version.replace(".*", ""))
            except InvalidVersion:
                continue
            rel = list(v.release) + [0, 0]
            major, minor, micro = rel[0], rel[1], rel[2]
            for cand in (
                (major, minor, micro),
                (major, minor, micro + 1),
                (major, minor + 1, 0),
                (major + 1, 0, 0),
                (major, max(minor - 1, 0), 0),
                (max(major - 1, 0), 0, 0),
                (major, minor, max(micro - 1, 0)),
            ):
                points.add(Version(".".join(map(str, cand))))
    return [str(v) for v in sorted(points)]
