"""The public Python API of a wheel, read with griffe in an isolated subprocess, and its diff.

The wheel's importable tree is unpacked into a temporary folder and griffe runs in a fresh
interpreter with only that folder added to its search path, so the packages under test
(and the extension modules griffe has to import to inspect) never load into xcompat's
own process and two versions of one package never meet in one interpreter.

The extracted API is a flat mapping ``dotted.path -> {"kind", "params"?}``; ``params`` is a
list of ``[name, kind, has_default]`` with kind one of ``positional-only``,
``positional or keyword``, ``var positional``, ``keyword-only``, ``var keyword``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from xcompat.abi.isolated import run_isolated_script

TIMEOUT_S = 180

_SCRIPT = r"""
import json, sys
out, sys.stdout = sys.stdout, sys.stderr  # modules griffe inspects may print on import
import griffe

root, names = sys.argv[1], sys.argv[2:]
sys.path.insert(0, root)
api, errors = {}, []

def params(fn):
    return [[p.name, str(p.kind.value), p.default is not None] for p in fn.parameters]

def is_public(member, parent):
    flag = getattr(member, "is_public", None)  # griffe's own rules: __all__, underscores, re-exports
    if flag is not None:
        return bool(flag)
    exports = getattr(parent, "exports", None)
    if exports is not None and parent.is_module:
        return member.name in exports
    return not member.name.startswith("_")

def walk(obj, depth=0):
    if depth > 12:
        return
    for name, member in list(obj.members.items()):
        if member.is_alias:
            try:
                if not is_public(member, obj):
                    continue
            except Exception:
                continue
            # a public re-export: record what it points to, without walking into it
            try:
                target = member.final_target
                entry = {"kind": target.kind.value}
                if target.is_function:
                    entry["params"] = params(target)
            except Exception:  # unresolvable or cyclic alias (compiled modules): name only
                entry = {"kind": "alias"}
            api[member.path] = entry
            continue
        try:
            if name != "__init__" and not is_public(member, obj):
                continue
            if member.is_module and (name in ("tests", "test", "conftest") or name.startswith("test_")):
                continue  # a shipped test suite is not API
            entry = {"kind": member.kind.value}
            if member.is_function:
                entry["params"] = params(member)
            api[member.path] = entry
            if member.is_class or member.is_module:
                walk(member, depth + 1)
        except Exception as exc:  # one bad member must not hide the rest
            errors.append(f"{obj.path}.{name}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")

for name in names:
    try:
        mod = griffe.load(name, search_paths=[root], allow_inspection=True, resolve_aliases=False,
                          try_relative_path=False)
    except Exception as exc:
        errors.append(f"{name}: {type(exc).__name__}: {exc}")
        continue
    api[mod.path] = {"kind": "module"}
    walk(mod)
json.dump({"api": api, "errors": errors}, out)
"""


def cache_path(wheel: Path) -> Path:
    """Where the API extracted from ``wheel`` is cached: keyed by the wheel's sha256, this
    interpreter's version and the extraction script, under ``${XCOMPAT_CACHE:-~/.cache/xcompat}``."""
    import hashlib
    import os
    import sys

    digest = hashlib.sha256()
    with open(wheel, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    digest.update(sys.version.encode())
    digest.update(_SCRIPT.encode())
    base = os.environ.get("XCOMPAT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "xcompat")
    return Path(base) / "abi-python-api" / f"{digest.hexdigest()[:32]}.json"


def cached_python_api(
    wheel: Path, extract: Callable[[], tuple[dict[str, Any] | None, list[str]]]
) -> tuple[dict[str, Any] | None, list[str]]:
    """``extract()`` once per wheel content; a successful result is kept in :func:`cache_path`."""
    path = cache_path(wheel)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return doc["api"], list(doc["problems"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    api, problems = extract()
    if api is not None:
        from xcompat.jsonio import write_json

        with contextlib.suppress(OSError):  # a read-only cache only costs the next run the extraction
            write_json(path, {"api": api, "problems": problems})
    return api, problems


def extract_python_api(root: Path, top_names: list[str], *, python: str | None = None) -> tuple[dict[str, Any] | None, list[str]]:
    """Run griffe on ``top_names`` found under ``root``; return (api, problems). A stub-only
    distribution (``foo-stubs``) is read as the package it describes (``foo``)."""
    top_names = sorted({n.removesuffix("-stubs") for n in top_names})
    if not top_names:
        return {}, []
    proc = run_isolated_script(_SCRIPT, root, top_names, python=python, timeout=TIMEOUT_S)
    if proc is None:
        return None, [f"Python API: griffe did not finish within {TIMEOUT_S} s; not compared"]
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        if "No module named 'griffe'" in proc.stderr:
            return None, ["Python API: griffe is not installed (pip install 'xcompat[abi]'); not compared"]
        return None, [f"Python API: griffe failed ({last}); not compared"]
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return None, ["Python API: griffe printed no readable result; not compared"]
    return out["api"], [f"Python API: {e}" for e in out["errors"][:20]]


_REQUIRED_KINDS = ("positional-only", "positional or keyword", "keyword-only")


def compare_signature(old: list[list[Any]], new: list[list[Any]]) -> str | None:
    """``None`` if equal, ``"extended"`` for a compatible change (new optional parameters,
    a new ``*args``/``**kwargs``), else a description of the break."""
    if old == new:
        return None
    # positional-only parameters cannot be passed by name: compare them by position
    old = [[new[i][0], *p[1:]] if p[1] == "positional-only" and i < len(new)
           and new[i][1] in ("positional-only", "positional or keyword") else p for i, p in enumerate(old)]
    o = {p[0]: p for p in old}
    n = {p[0]: p for p in new}
    o_pos = [p[0] for p in old if p[1] in ("positional-only", "positional or keyword")]
    n_pos = [p[0] for p in new if p[1] in ("positional-only", "positional or keyword")]
    has_varkw = any(p[1] == "variadic keyword" or p[1] == "var keyword" for p in new)
    for name, p in o.items():
        if name not in n:
            if p[1] in ("variadic positional", "var positional", "variadic keyword", "var keyword"):
                return f"*{name} removed"
            if not has_varkw:
                return f"parameter {name!r} removed"
            continue
        q = n[name]
        if q[1] != p[1] and not (q[1] == "positional or keyword" and p[1] in ("positional-only", "keyword-only")):
            return f"parameter {name!r} changed kind: {p[1]} -> {q[1]}"  # widening to positional-or-keyword is fine
        if p[2] and not q[2]:
            return f"parameter {name!r} lost its default (now required)"
    if n_pos[: len(o_pos)] != o_pos[: len(n_pos)] and [x for x in n_pos if x in o] != [x for x in o_pos if x in n]:
        return f"positional parameters reordered: ({', '.join(o_pos)}) -> ({', '.join(n_pos)})"
    for name, q in n.items():
        if name not in o and q[1] in _REQUIRED_KINDS and not q[2]:
            return f"new required parameter {name!r}"
    return "extended"


def _fmt(params: list[list[Any]]) -> str:
    parts: list[str] = []
    star = False
    for i, (name, kind, has_default) in enumerate(params):
        if kind in ("variadic positional", "var positional"):
            parts.append("*" + name)
            star = True
            continue
        if kind in ("variadic keyword", "var keyword"):
            parts.append("**" + name)
            continue
        if kind == "keyword-only" and not star:
            parts.append("*")
            star = True
        parts.append(name + ("=..." if has_default else ""))
        nxt = params[i + 1][1] if i + 1 < len(params) else None
        if kind == "positional-only" and nxt != "positional-only":
            parts.append("/")
    return "(" + ", ".join(parts) + ")"


def diff_python_api(old: dict[str, Any], new: dict[str, Any], add: Callable[..., None]) -> None:
    removed = sorted(old.keys() - new.keys())
    removed_set = set(removed)
    for path in removed:
        parent = path.rpartition(".")[0]
        if parent in removed_set:
            continue  # report the outermost removed object only
        add("python_api_removed", path.split(".", 1)[0], path, f"{old[path]['kind']} {path} was removed")
    added = sorted(new.keys() - old.keys())
    added_set = set(added)
    for path in added:
        if path.rpartition(".")[0] in added_set:
            continue
        add("python_api_added", path.split(".", 1)[0], path, f"new {new[path]['kind']} {path}")
    for path in sorted(old.keys() & new.keys()):
        a, b = old[path], new[path]
        if "alias" in (a.get("kind"), b.get("kind")):
            continue  # an unresolvable re-export: only its presence is known
        if a.get("kind") != b.get("kind"):
            add("python_signature_changed", path.split(".", 1)[0], path, f"{path} changed from {a['kind']} to {b['kind']}")
            continue
        if "params" in a and "params" in b:
            verdict = compare_signature(a["params"], b["params"])
            if verdict is None:
                continue
            sig = f"{_fmt(a['params'])} -> {_fmt(b['params'])}"
            if verdict == "extended":
                add("python_signature_extended", path.split(".", 1)[0], path, f"{path}{sig}", old=_fmt(a["params"]), new=_fmt(b["params"]))
            else:
                add("python_signature_changed", path.split(".", 1)[0], path, f"{path}: {verdict}; {sig}",
                    old=_fmt(a["params"]), new=_fmt(b["params"]))
