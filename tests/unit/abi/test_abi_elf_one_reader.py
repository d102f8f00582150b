"""xcompat reads ELF files in one place, the ``xcompat.abi.elf`` package, and DWARF (with
pyelftools) only in its ``dwarf`` module: a second parser elsewhere would drift from the
reader's checks and its answers."""

from __future__ import annotations

import ast
from pathlib import Path

import xcompat

SRC = Path(xcompat.__file__).resolve().parent
ELF_PACKAGE = SRC / "abi" / "elf"

# struct formats of the ELF header, the section header and the version definition entry
ELF_STRUCTS = ("HHIQQQIHHHHHH", "HHIIIIIHHHHHH", "IIQQQQIIQQ", "IIIIIIIIII", "HHHHIII")


def _modules() -> dict[Path, ast.Module]:
    return {p: ast.parse(p.read_text(encoding="utf-8"), str(p)) for p in sorted(SRC.rglob("*.py"))}


def _rel(path: Path) -> str:
    return str(path.relative_to(SRC))


def test_pyelftools_is_imported_only_where_dwarf_is_read():
    users = set()
    for path, tree in _modules().items():
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "elftools" or n.startswith("elftools.") for n in names):
                users.add(_rel(path))
    assert users == {"abi/elf/dwarf.py"}


def test_elf_headers_are_parsed_only_by_the_reader():
    outside = set()
    for path, tree in _modules().items():
        if ELF_PACKAGE in path.parents:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant):
                continue
            if isinstance(node.value, bytes) and node.value.startswith(b"\x7fELF"):
                outside.add(f"{_rel(path)}:{node.lineno}: ELF magic")
            elif isinstance(node.value, str) and any(f in node.value for f in ELF_STRUCTS):
                outside.add(f"{_rel(path)}:{node.lineno}: ELF struct {node.value!r}")
    assert not outside, "ELF read outside xcompat.abi.elf (use its reader): " + "; ".join(sorted(outside))
