"""LibTorch stable-ABI audit: which of an extension's torch imports are stable.

An extension built on the LibTorch Stable ABI (``torch/csrc/stable``, the C shim of
``torch/csrc/inductor/aoti_torch/c/shim.h`` and ``torch/headeronly``) keeps working across
torch releases; one that imports C++ symbols of ``c10::`` / ``at::`` / ``torch::`` must be
rebuilt for every torch version. Imports are classified as

``stable_c_shim``  ``aoti_torch_*`` and ``torch_*`` C functions (the stable shim);
``header_only``    C++ symbols of ``torch::headeronly`` / ``torch::stable`` (normally inlined;
                   an import means an out-of-line copy, stable by contract);
``unstable_cxx``   every other C++ symbol of ``c10::``, ``at::``, ``torch::``, ``caffe2::``;
``cpython``, ``system``, ``other``: not torch.

An extension *claims* the stable ABI when it imports the C shim (or ``--require-stable``
says so); the audit fails when such an extension also imports unstable C++ symbols.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from xcompat.abi.links import LinkInputError, _target_libraries

_HEADER_ONLY = re.compile(r"^_Z(?:T[VIS])?N?K?5torch(?:10headeronly|6stable)")
_UNSTABLE = re.compile(r"^_Z(?:T[VIS]|GV)?N?K?(?:3c10|2at|5torch|6caffe2)")
_SHIM = re.compile(r"^(?:aoti_torch_|torch_)")
_CPYTHON = re.compile(r"^_?Py")

CLASSES = ("stable_c_shim", "header_only", "unstable_cxx", "cpython", "system", "other")


def classify_import(name: str, version: str | None) -> str:
    if _SHIM.match(name):
        return "stable_c_shim"
    if _HEADER_ONLY.match(name):
        return "header_only"
    if _UNSTABLE.match(name):
        return "unstable_cxx"
    if _CPYTHON.match(name):
        return "cpython"
    if version is not None:
        return "system"
    return "other"


def audit_stable(target: str | Path, *, require_stable: bool = False, limit: int = 50) -> dict[str, Any]:
    from xcompat.abi.demangle import demangle_many

    target = Path(target)
    libs = _target_libraries(target)
    reports = []
    any_failed = False
    for member, lib in sorted(libs.items()):
        counts: Counter[str] = Counter()
        unstable: list[str] = []
        for sym, (weak, ver, _verlib) in lib.imports.items():
            cls = classify_import(sym, ver)
            counts[cls] += 1
            if cls == "unstable_cxx" and not weak:
                unstable.append(sym)
        uses_torch = counts["stable_c_shim"] + counts["header_only"] + counts["unstable_cxx"] > 0
        if not uses_torch:
            continue
        claims = require_stable or counts["stable_c_shim"] > 0
        if not unstable:
            verdict = "stable"
        elif claims:
            verdict = "leaks-unstable"
        else:
            verdict = "unstable"
        failed = claims and bool(unstable)
        any_failed |= failed
        unstable.sort()
        shown = unstable[:limit]
        reports.append(
            {
                "library": member,
                "verdict": verdict,
                "claims_stable": claims,
                "status": "failed" if failed else "passed",
                "counts": {c: counts.get(c, 0) for c in CLASSES},
                "unstable_imports": [
                    {"symbol": s, "demangled": d} for s, d in zip(shown, demangle_many(shown), strict=True)
                ],
                "unstable_total": len(unstable),
            }
        )
    if not reports:
        summary = "no library imports torch symbols"
    else:
        parts = Counter(r["verdict"] for r in reports)
        summary = ", ".join(f"{n} {v}" for v, n in sorted(parts.items()))
    return {
        "version": 1,
        "kind": "abi-stable",
        "cell_id": None,
        "status": "failed" if any_failed else "passed",
        "summary": summary,
        "target": str(target),
        "libraries": reports,
    }


__all__ = ["LinkInputError", "audit_stable", "classify_import"]
