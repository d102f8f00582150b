"""Check each gating Python-API finding against the imported module before it gates.

griffe reads source and stubs and inspects compiled modules; it can be wrong about what a
package exposes at run time (re-exports through ``__getattr__``, names a compiled module
defines, ``__all__`` built at import time). Every ``python_api_removed`` and
``python_signature_changed`` finding is therefore looked up in the *imported* new (and,
when available, old) package, in the same isolated interpreter the extraction uses:

* the object is still there (and of the same kind, with a compatible signature): the finding
  is dropped (counted in ``filtered`` as ``python-api-runtime``);
* the runtime confirms it: the finding stays as it is;
* it cannot be checked here (the wheel is for another platform, a dependency is missing,
  a stub-only distribution, a builtin without a signature): the finding becomes
  ``python_api_unverified``, which does not gate unless a policy gives it a bump.

Importing runs the package's code: this happens only in ``abi diff`` (an unprivileged job
that already runs the project's code), never in ``report`` or ``gate``.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xcompat.abi.isolated import run_isolated_script

if TYPE_CHECKING:
    from xcompat.abi.findings import Finding
    from xcompat.abi.manifest import Manifest
    from xcompat.abi.rules import Policy

VERIFIED_KINDS = ("python_api_removed", "python_signature_changed")
TIMEOUT_S = 120

_SCRIPT = r"""
import importlib, inspect, json, sys
out, sys.stdout = sys.stdout, sys.stderr  # the package may print on import
root, paths = sys.argv[1], sys.argv[2:]
sys.path.insert(0, root)

def kind(obj):
    if inspect.ismodule(obj):
        return "module"
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        return "function"
    return "attribute"

res, broken = {}, {}
for path in paths:
    parts = path.split(".")
    top = parts[0]
    if top in broken:
        res[path] = {"status": "unverifiable", "why": broken[top]}
        continue
    try:
        obj = importlib.import_module(top)
    except BaseException as exc:
        broken[top] = f"import {top} failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        res[path] = {"status": "unverifiable", "why": broken[top]}
        continue
    status, name = "present", top
    for part in parts[1:]:
        name = f"{name}.{part}"
        nxt = getattr(obj, part, None)
        if nxt is None and inspect.ismodule(obj):
            try:
                nxt = importlib.import_module(name)
            except ImportError:
                nxt = None
            except BaseException as exc:
                status = "unverifiable"
                res[path] = {"status": status, "why": f"import {name} failed: {type(exc).__name__}"}
                break
        if nxt is None and not hasattr(obj, part):
            status = "absent"
            res[path] = {"status": status}
            break
        obj = nxt
    if status != "present":
        continue
    entry = {"status": "present", "kind": kind(obj)}
    try:
        sig = inspect.signature(obj)
        entry["params"] = [[p.name, p.kind.description, p.default is not p.empty]
                           for p in sig.parameters.values() if not (entry["kind"] == "class" and p.name == "self")]
    except (TypeError, ValueError):
        pass
    res[path] = entry
json.dump(res, out)
"""


def runtime_view(wheel: Path, paths: list[str]) -> tuple[dict[str, dict[str, Any]] | None, str | None]:
    """Import the package of ``wheel`` in an isolated interpreter and look ``paths`` up
    (cached per wheel content and set of paths, next to the extracted API)."""
    import hashlib

    from xcompat.abi.pyapi import cache_path

    cache = cache_path(wheel)
    cache = cache.with_name(f"{cache.stem}.runtime-{hashlib.sha256(chr(10).join(paths).encode()).hexdigest()[:16]}.json")
    try:
        return json.loads(cache.read_text(encoding="utf-8")), None
    except (OSError, ValueError):
        pass
    view, why = _runtime_view(wheel, paths)
    if view is not None:
        from xcompat.jsonio import write_json

        with contextlib.suppress(OSError):
            write_json(cache, view)
    return view, why


def _runtime_view(wheel: Path, paths: list[str]) -> tuple[dict[str, dict[str, Any]] | None, str | None]:
    from xcompat.abi.inputs import _installable_here
    from xcompat.abi.wheel import extract_python_tree, parse_wheel_filename

    _name, _version, tags = parse_wheel_filename(wheel.name)
    if not _installable_here(tags):
        return None, f"{wheel.name} cannot be imported by this interpreter"
    with tempfile.TemporaryDirectory(prefix="xcompat-abi-verify-") as tmp:
        extract_python_tree(wheel, Path(tmp))
        proc = run_isolated_script(_SCRIPT, Path(tmp), paths, timeout=TIMEOUT_S)
    if proc is None:
        return None, f"importing {wheel.name} did not finish within {TIMEOUT_S} s"
    try:
        return json.loads(proc.stdout), None
    except json.JSONDecodeError:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"importing {wheel.name} failed ({last})"


def _wheel_of(m: Manifest) -> Path | None:
    src = m.python_api_wheel or (m.source if m.kind == "wheel" else None)
    return Path(src) if src and src.endswith(".whl") and Path(src).is_file() else None


def verify_findings(
    findings: list[Finding], old: Manifest, new: Manifest, filtered: Any, unchecked: list[str], policy: Policy
) -> list[Finding]:
    """Return ``findings`` with each gating Python-API finding confirmed, dropped or marked
    unverified (see the module docstring); ``filtered`` counts the dropped ones."""
    todo = [i for i, f in enumerate(findings) if f.kind in VERIFIED_KINDS and f.symbol]
    if not todo:
        return findings
    paths = sorted({f.symbol for i in todo if (f := findings[i]).symbol is not None})
    new_wheel, old_wheel = _wheel_of(new), _wheel_of(old)
    rt_new, why_new = runtime_view(new_wheel, paths) if new_wheel else (None, "the new side is not a wheel")
    sig_paths = [p for p in paths
                 if any(findings[i].symbol == p and findings[i].kind == "python_signature_changed" for i in todo)]
    rt_old: dict[str, dict[str, Any]] | None = None
    if sig_paths and old_wheel is not None:
        rt_old, _ = runtime_view(old_wheel, sig_paths)
    from xcompat.abi.pyapi import compare_signature

    out = list(findings)
    drop: set[int] = set()
    for i in todo:
        f = findings[i]
        assert f.symbol is not None
        got = (rt_new or {}).get(f.symbol)
        if got is None or got.get("status") == "unverifiable":
            reason = (got or {}).get("why") or why_new or "not looked up"
            out[i] = _unverified(f, reason, policy)
            continue
        if f.kind == "python_api_removed":
            if got["status"] == "present":
                drop.add(i)  # griffe missed it: it is still importable
            continue
        if got["status"] == "absent":
            continue  # gone altogether at run time: the change stands
        before = (rt_old or {}).get(f.symbol) or (old.python_api or {}).get(f.symbol) or {}
        if before.get("kind") and before.get("kind") != got.get("kind"):
            continue  # confirmed: a different kind of object at run time
        if "params" not in got or "params" not in before:
            if before.get("kind") == got.get("kind") and "params" not in got and "params" not in before:
                drop.add(i)  # same kind, nothing more to compare: the kind change was griffe's
            else:
                out[i] = _unverified(f, "no signature at run time", policy)
            continue
        verdict = compare_signature(before["params"], got["params"])
        if verdict is None:
            drop.add(i)
        elif verdict == "extended":
            out[i] = f._replace(kind="python_signature_extended", required_bump=policy.bump("python_signature_extended"),
                             detail=f"{f.detail} (at run time: a compatible extension)")
    if drop:
        filtered["python-api-runtime"] += len(drop)
    if why_new and rt_new is None:
        unchecked.append(f"Python API: findings not verified at run time: {why_new}")
    return [f for i, f in enumerate(out) if i not in drop]


def _unverified(f: Finding, reason: str, policy: Policy) -> Finding:
    return f._replace(kind="python_api_unverified", required_bump=policy.bump("python_api_unverified"),
                   detail=f"unverified ({reason}): {f.detail}", old=f.kind)
