"""Which operators a built wheel registers, their schemas, and the dispatch keys each has a kernel for.

Operators are found the way ``xcompat abi diff`` finds them (``xcompat.abi.torchops``): the
wheel's modules are imported in a fresh interpreter and the operator names that appeared in
PyTorch's dispatcher are listed. The same loading script runs here, inside the process that
then checks the operators, so the project's modules are imported once.

Dispatch keys are read from ``torch._C._dispatch_dump`` (one ``KEY: registered at ...`` line
per kernel, present since torch 1.8); where it is missing or unreadable, each known key is
asked with ``torch._C._dispatch_has_kernel_for_dispatch_key``.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
from pathlib import Path
from typing import Any

# The keys a maintainer reads: backends, Meta (shapes for torch.compile), autograd, composites.
KNOWN_KEYS = (
    "CPU", "CUDA", "HIP", "MPS", "XPU", "Meta", "Autograd", "AutogradCPU", "AutogradCUDA",
    "CompositeImplicitAutograd", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional",
)
_KEY_LINE = re.compile(r"^([A-Za-z][A-Za-z0-9]*)(?:\[[^\]]*\])?: (?:registered|fallthrough)", re.MULTILINE)
_NOT_KEYS = {"name", "schema", "debug", "alias analysis kind"}


def top_level_names(site: Path) -> list[str]:
    """The importable top-level names installed in ``site`` (a ``pip --target`` folder)."""
    names: set[str] = set()
    for info in sorted(site.glob("*.dist-info")):
        listed = info / "top_level.txt"
        if listed.is_file():
            names.update(n.strip() for n in listed.read_text(encoding="utf-8").splitlines() if n.strip())
            continue
        record = info / "RECORD"
        if record.is_file():
            for line in record.read_text(encoding="utf-8").splitlines():
                first = line.split(",", 1)[0].split("/", 1)
                if len(first) == 2 and not first[0].endswith((".dist-info", ".data", ".libs")):
                    names.add(first[0])
                elif first[0].endswith(".py"):
                    names.add(first[0][:-3])
    if not names:  # a plain folder of modules
        names.update(p.name for p in site.iterdir() if (p / "__init__.py").is_file())
        names.update(p.stem for p in site.glob("*.py"))
    return sorted(n for n in names if n.isidentifier())


def load_operators(root: str, names: list[str]) -> tuple[dict[str, str], list[str]]:
    """Import the project's modules in this process; the operators they added and the errors met."""
    from xcompat.abi.torchops import _SCRIPT

    argv = sys.argv
    out = io.StringIO()
    sys.argv = ["xcompat-operators", root, *names]
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(  # noqa: S102 - xcompat's own loading script, shared with abi diff
                _SCRIPT, "<xcompat torch operators>", "exec"), {"__name__": "__xcompat_torchops__"})
    finally:
        sys.argv = argv
    text = out.getvalue()  # what the project's modules printed while loading comes first
    found: dict[str, Any] = json.loads(text[text.rfind('{"ops"'):])
    return dict(found["ops"]), [str(e) for e in found["errors"]]


def dispatch_keys(op: str) -> list[str]:
    """The dispatch keys ``op`` ("ns::name" or "ns::name.overload") has a kernel for, sorted."""
    import torch

    dump = getattr(torch._C, "_dispatch_dump", None)
    if dump is not None:
        try:
            text = str(dump(op))
        except RuntimeError:
            text = ""
        keys = {m.group(1) for m in _KEY_LINE.finditer(text)} - _NOT_KEYS
        if keys:
            return sorted(keys)
    has = getattr(torch._C, "_dispatch_has_kernel_for_dispatch_key", None)
    if has is None:
        return []
    found = []
    for key in KNOWN_KEYS:
        try:
            if has(op, key):
                found.append(key)
        except (RuntimeError, ValueError):  # a key this torch does not know
            continue
    return found
