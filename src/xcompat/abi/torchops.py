"""The custom operators a wheel registers with PyTorch's dispatcher, and their diff.

Operators registered from C++ (``TORCH_LIBRARY``, ``STABLE_TORCH_LIBRARY``) exist only in
the dispatcher at run time, and ELF tools cannot see them. They are read by importing the
wheel's modules in a fresh interpreter and listing the operator names that appeared in
``torch._C._dispatch_get_all_op_names()`` with their schemas. Operators defined with
``torch.library`` in Python are found the same way.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from xcompat.abi.isolated import run_isolated_script

if TYPE_CHECKING:
    from xcompat.abi.binary import LibraryInterface

TIMEOUT_S = 180

_SCRIPT = r"""
import importlib, json, os, sys
root, names = sys.argv[1], sys.argv[2:]
sys.path.insert(0, root)
import torch
before = set(torch._C._dispatch_get_all_op_names())
errors = []
for name in names:
    try:
        importlib.import_module(name)
    except Exception as exc:
        errors.append(f"import {name}: {type(exc).__name__}: {exc}")
# extension modules not imported by their package's __init__
for dirpath, dirnames, files in os.walk(root):
    dirnames[:] = [d for d in dirnames if not d.endswith((".dist-info", ".libs", ".data"))]
    for f in files:
        if f.endswith(".so") and "." in f[:-3]:
            rel = os.path.relpath(os.path.join(dirpath, f), root)
            mod = rel.split(".", 1)[0].replace(os.sep, ".")
            if mod.split(".")[-1].startswith("lib"):
                continue
            try:
                importlib.import_module(mod)
            except ImportError as exc:
                if "module export function" not in str(exc):
                    errors.append(f"import {mod}: {type(exc).__name__}: {exc}")
                    continue
                # not a Python module: a plain library of operators, loaded the torch way
                try:
                    torch.ops.load_library(os.path.join(dirpath, f))
                except Exception as exc2:
                    errors.append(f"load {rel}: {type(exc2).__name__}: {exc2}")
            except Exception as exc:
                errors.append(f"import {mod}: {type(exc).__name__}: {exc}")
ops = {}
for op in sorted(set(torch._C._dispatch_get_all_op_names()) - before):
    name, _, overload = op.partition(".")
    try:
        ops[op] = str(torch._C._get_schema(name, overload))
    except Exception as exc:
        errors.append(f"schema of {op}: {exc}")
json.dump({"ops": ops, "errors": errors}, sys.stdout)
"""


def uses_torch(requires_dist: Iterable[str], libraries: Mapping[str, LibraryInterface]) -> bool:
    if any(r.split(";")[0].strip().lower().startswith("torch") for r in requires_dist):
        return True
    return any(n.startswith(("libc10", "libtorch")) for lib in libraries.values() for n in lib.needed)


def extract_torch_ops(root: Path, top_names: list[str], *, python: str | None = None) -> tuple[dict[str, str] | None, list[str]]:
    proc = run_isolated_script(_SCRIPT, root, top_names, python=python, timeout=TIMEOUT_S)
    if proc is None:
        return None, [f"torch operators: importing the wheel took more than {TIMEOUT_S} s; not compared"]
    if proc.returncode != 0:
        if "No module named 'torch'" in proc.stderr:
            return None, ["torch operators: torch is not installed in this environment; not compared"]
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return None, [f"torch operators: importing the wheel failed ({last}); not compared"]
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return None, ["torch operators: no readable result; not compared"]
    return out["ops"], [f"torch operators: {e}" for e in out["errors"][:20]]


def diff_torch_ops(old: dict[str, str], new: dict[str, str], add: Callable[..., None]) -> None:
    for op in sorted(old.keys() - new.keys()):
        add("torch_op_removed", op.split("::")[0], op, f"operator {old[op]} is no longer registered", old=old[op])
    for op in sorted(new.keys() - old.keys()):
        add("torch_op_added", op.split("::")[0], op, f"new operator {new[op]}", new=new[op])
    for op in sorted(old.keys() & new.keys()):
        if old[op] != new[op]:
            add("torch_op_schema_changed", op.split("::")[0], op, f"schema {old[op]} -> {new[op]}", old=old[op], new=new[op])
