"""Where DWARF says each function of a library is defined: in a header or in a source file.

Used, when a library carries debug info, to decide whether a WEAK C++ function is vague
linkage. A function defined in a header (an inline function, an in-class member, a template
defined in the header) is emitted by every consumer that uses it; one defined in the compile
unit's own source file (an ``__attribute__((weak))`` hook, a template explicitly instantiated
in the ``.cc``) is only in the library, and consumers bind to it. DWARF has no "declared
inline" mark for out-of-line copies at ``-O0``, so the definition's file is the evidence.

The one place xcompat reads DWARF, and the one place it uses pyelftools (a dependency),
imported only when a file with debug info is read: the rest of the ELF reader does not need
it. Bounded: a ``.debug_info`` larger than ``MAX_DEBUG_INFO`` is not read (the shape
heuristic applies instead).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pyelftools is imported only when a file with debug info is read
    from elftools.dwarf.compileunit import CompileUnit
    from elftools.dwarf.die import DIE
    from elftools.dwarf.dwarfinfo import DWARFInfo

MAX_DEBUG_INFO = 64 << 20


@dataclass(frozen=True)
class DefinitionOrigins:
    header: frozenset[str]  # linkage names of functions defined in a header
    source: frozenset[str]  # ... defined in their compile unit's own source file

    def origin(self, linkage_name: str) -> str | None:
        if linkage_name in self.source:
            return "source"
        if linkage_name in self.header:
            return "header"
        return None


def definition_origins(path: str | Path) -> DefinitionOrigins | None:
    """Origins of the functions defined in the ELF file at ``path``; None without (readable,
    bounded) DWARF."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        with open(path, "rb") as fh:
            elf = ELFFile(fh)
            sec = elf.get_section_by_name(".debug_info")
            if sec is None or sec.data_size > MAX_DEBUG_INFO or not elf.has_dwarf_info():
                return None
            return _walk(elf.get_dwarf_info())
    except (OSError, ELFError):
        return None
    except Exception:  # noqa: BLE001 - malformed DWARF in any form is "no evidence": the shape decides
        return None


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _walk(dwarf: DWARFInfo) -> DefinitionOrigins:
    header: set[str] = set()
    source: set[str] = set()
    for cu in dwarf.iter_CUs():
        top = cu.get_top_DIE()
        cu_file = os.path.basename(_text(top.attributes["DW_AT_name"].value)) if "DW_AT_name" in top.attributes else ""
        files = _file_names(dwarf, cu)
        for die in cu.iter_DIEs():
            if die.tag != "DW_TAG_subprogram":
                continue
            attrs = die.attributes
            if "DW_AT_low_pc" not in attrs and "DW_AT_ranges" not in attrs:
                continue  # a declaration, not a definition
            name, decl_file = _linkage_and_file(die)
            if not name or decl_file is None:
                continue
            defined_in = os.path.basename(files.get(decl_file, ""))
            if not defined_in:
                continue
            (source if defined_in == cu_file else header).add(name)
    return DefinitionOrigins(header=frozenset(header - source), source=frozenset(source))


def _linkage_and_file(die: DIE) -> tuple[str | None, int | None]:
    """The linkage name and decl_file of a definition, following DW_AT_specification /
    DW_AT_abstract_origin to the declaration for what the definition itself lacks."""
    name = decl_file = None
    for _ in range(4):  # bounded: specification chains are short
        attrs = die.attributes
        for key in ("DW_AT_linkage_name", "DW_AT_MIPS_linkage_name"):
            if name is None and key in attrs:
                name = _text(attrs[key].value)
        if decl_file is None and "DW_AT_decl_file" in attrs:
            decl_file = int(attrs["DW_AT_decl_file"].value)
        if name is not None and decl_file is not None:
            break
        ref = "DW_AT_specification" if "DW_AT_specification" in attrs else (
            "DW_AT_abstract_origin" if "DW_AT_abstract_origin" in attrs else None)
        if ref is None:
            break
        die = die.get_DIE_from_attribute(ref)
    return name, decl_file


def _file_names(dwarf: DWARFInfo, cu: CompileUnit) -> dict[int, str]:
    """decl_file index -> file name, for DWARF 2-4 (1-based) and 5 (0-based)."""
    lp = dwarf.line_program_for_CU(cu)
    if lp is None:
        return {}
    entries = lp.header.get("file_entry") or []
    base = 0 if lp.header.get("version", 4) >= 5 else 1
    return {i + base: _text(e.name) for i, e in enumerate(entries)}
