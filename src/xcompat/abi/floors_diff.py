"""What a new library asks of the system it runs on, compared with the old one: the glibc,
libstdc++ and CXXABI symbol versions it needs, its macOS deployment target, the NumPy C-API it
was compiled against, the Limited API floor of an abi3 module and the CUDA architectures of its
fat binary. A raised floor leaves users of older systems behind."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from xcompat.abi.binary import LibraryInterface

if TYPE_CHECKING:
    from xcompat.abi.findings import Collector


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


def diff_floors(
    key: str, a: LibraryInterface, b: LibraryInterface, c: Collector, *,
    promised: dict[str, str], promised_by: str | None, is_numpy: bool,
) -> None:
    """``promised``: prefix -> highest version the new wheel's platform tag (``promised_by``)
    already requires; ``is_numpy``: the build is numpy itself."""
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
        tagged = promised.get(prefix)
        if tagged is not None and _vtuple(vb) <= _vtuple(tagged):
            c.add("floor_raised_within_tag", key, None,
                  f"{label} floor {va or 'none'} -> {vb}: within {tagged}, which the wheel's tag "
                  f"{promised_by} already requires" + (f" (from {shown})" if shown else ""),
                  old=va, new=vb)
            continue
        extra = ""
        if prefix == "GLIBC_":
            t = _vtuple(vb)
            extra = f"; wheels need manylinux_{t[0]}_{t[1] if len(t) > 1 else 0} or newer"
        if tagged is not None:
            extra += f"; the wheel's tag {promised_by} promises only {tagged}"
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
        if is_numpy:
            c.filtered["numpy-own-capi-target"] += 1
            return
        c.add("numpy_capi_target_changed", key, None,
              f"compiled against the NumPy {a.numpy_target} C-API before, {b.numpy_target} now: "
              f"users need numpy>={b.numpy_target}", old=a.numpy_target, new=b.numpy_target)


def diff_abi3(key: str, a: LibraryInterface, b: LibraryInterface, c: Collector) -> None:
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


def diff_cuda(key: str, a: LibraryInterface, b: LibraryInterface, c: Collector) -> None:
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
