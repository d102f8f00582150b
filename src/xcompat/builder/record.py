"""``build.json``: the versioned record of one ``xcompat build`` run (schema ``build``).

One entry per wheel: file, sha256, size, tags, cell id, the platform policy the wheel
satisfies and the symbols that set it, external and excluded libraries, the abi3 audit
of Limited-API modules, absolute RPATH/RUNPATH entries leaked from the build machine (per
ELF member; added to version 1 as an optional field, so older records still read), and the
time spent building, repairing and auditing.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from xcompat.builder.audit import (
    abi3_audit,
    absolute_search_paths,
    auditwheel_show,
    own_cxx_runtime,
    policy_symbols,
    sha256_of,
    wheel_gpu_code,
    wheel_tags,
)
from xcompat.builder.native import BuiltWheel

BUILD_RECORD_VERSION = 1
BUILD_JSON = "build.json"


def excluded_libs(external: Sequence[str], patterns: Sequence[str]) -> list[str]:
    """The external libraries that were left out of the wheel by an exclude pattern."""
    from fnmatch import fnmatchcase

    return [lib for lib in external if any(fnmatchcase(lib, p) for p in patterns)]


def audit_built_wheel(
    built: BuiltWheel,
    *,
    env: Mapping[str, str],
    out_dir: Path,
    backend: str,
    auditwheel_json: bool | None = None,
    platform: str = sys.platform,
) -> dict[str, Any]:
    """The ``wheels[]`` entry of one built wheel."""
    start = time.monotonic()
    path = built.path
    info = wheel_tags(path)
    linux = platform.startswith("linux") and not info["pure"]
    # The audits are independent processes and scans: run them side by side.
    with ThreadPoolExecutor(max_workers=3) as pool:
        shown_f = pool.submit(auditwheel_show, path, env=env, json_output=auditwheel_json) if linux else None
        abi3_f = pool.submit(abi3_audit, path, env=env)
        gpu_f = pool.submit(wheel_gpu_code, path) if not info["pure"] else None
        policy: dict[str, Any] | None = None
        external: list[str] = []
        if shown_f is not None:
            shown = shown_f.result()
            platforms = sorted({t.rsplit("-", 1)[-1] for t in info["tags"]})
            policy = {
                "tags": platforms,
                "symbol_tag": shown["sym_tag"],
                "overall_tag": shown["overall_tag"],
                "source": shown["source"],
                "versioned_symbols": shown["versioned_symbols"],
                "set_by": policy_symbols(path, shown["sym_tag"]),
            }
            external = shown["external_libs"]
        abi3 = abi3_f.result()
        gpu_code = gpu_f.result() if gpu_f is not None else {}
    audit_seconds = time.monotonic() - start
    try:
        log = str(Path(built.log).resolve().relative_to(Path(out_dir).resolve()))
    except ValueError:
        log = str(built.log)
    return {
        "file": path.name,
        "sha256": sha256_of(path),
        "size": path.stat().st_size,
        "name": info["name"],
        "version": info["version"],
        "tags": info["tags"],
        "pure": info["pure"],
        "cell_id": built.cell_id,
        "backend": backend,
        "repair": built.repair_tool,
        "platform_policy": policy,
        "external_libs": external,
        "excluded_libs": excluded_libs(external, built.excluded),
        "abi3": abi3.to_dict() if abi3 is not None else None,
        "gpu_code": gpu_code,
        "absolute_search_paths": absolute_search_paths(path) if not info["pure"] else {},
        "own_cxx_runtime": own_cxx_runtime(path) if not info["pure"] else {},
        "build_seconds": round(built.build_seconds, 3),
        "repair_seconds": round(built.repair_seconds, 3),
        "audit_seconds": round(audit_seconds, 3),
        "log": log,
    }


def build_document(
    *,
    project: Path,
    backend: str,
    wheels: Sequence[dict[str, Any]],
    cells: Sequence[dict[str, Any]],
    errors: Sequence[dict[str, Any]] = (),
    seconds: float,
    tools: Mapping[str, Any] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole record, in the common per-stage envelope (kind ``build``).

    A cell whose wheel holds a torch extension carrying its own C++ runtime fails: that wheel
    would crash its users' processes on torch's first formatted error message.
    """
    broken = {w["file"]: sorted(w["own_cxx_runtime"]) for w in wheels if w.get("own_cxx_runtime")}
    cells = [_fail_own_runtime(c, broken) for c in cells]
    failed = [c for c in cells if c["status"] == "failed"]
    passed = [c for c in cells if c["status"] == "passed"]
    skipped = [c for c in cells if c["status"] == "skipped"]
    abi3_failed = [w["file"] for w in wheels if w.get("abi3") and w["abi3"]["status"] == "failed"]
    if failed or errors:
        status = "failed"
    elif not passed:
        status = "skipped"
    else:
        status = "passed"
    summary = f"{len(wheels)} wheel(s) built for {len(passed)}/{len(cells)} cell(s)"
    if failed:
        summary += f"; failed: {', '.join(c['id'] or 'native' for c in failed)}"
    if skipped:
        summary += f"; {len(skipped)} skipped"
    if abi3_failed:
        summary += f"; abi3 audit findings in {', '.join(abi3_failed)}"
    if broken:
        summary += f"; own C++ runtime beside torch's in {', '.join(sorted(broken))}"
    cell_id = cells[0]["id"] if len(cells) == 1 else None
    return {
        "version": BUILD_RECORD_VERSION,
        "kind": "build",
        "cell_id": cell_id,
        "status": status,
        "summary": summary,
        "backend": backend,
        "project": str(project),
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "seconds": round(seconds, 3),
        "tools": dict(tools or {}),
        "settings": dict(settings or {}),
        "cells": list(cells),
        "wheels": list(wheels),
        "errors": list(errors),
    }


def _fail_own_runtime(cell: dict[str, Any], broken: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """``cell`` failed, with the reason, when one of its wheels carries its own C++ runtime."""
    mine = [(w, members) for w, members in broken.items() if w in {n.rsplit("/", 1)[-1] for n in cell.get("wheels", ())}]
    if not mine or cell["status"] == "failed":
        return cell
    what = "; ".join(f"{w}: {', '.join(members)}" for w, members in mine)
    return {**cell, "status": "failed",
            "reason": f"torch extension linked with its own C++ runtime (libstdc++ linked statically; {what}): "
                      "it crashes on torch's first error message that formats a number; rebuild without "
                      "-static-libstdc++"}
