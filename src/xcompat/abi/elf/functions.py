"""The functions of an ELF object and the bytes of their code: what an instruction scan reads.

Functions come from ``.symtab`` when the object keeps it (local functions included: a wide
code path is usually a static helper) and from ``.dynsym`` otherwise. Each function is
(name, address, size); its bytes are read from the executable section that holds it. The
undefined symbols of ``.dynsym`` say what the object calls outside itself (``getauxval``,
``__cpu_indicator_init``: ways of asking the CPU what it has).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from xcompat.abi.elf.headers import SHT_DYNSYM, ElfError, ElfSections

SHT_SYMTAB = 2
SHF_EXECINSTR = 0x4
STT_FUNC = 2
STT_GNU_IFUNC = 10
# a function larger than this is not one (a corrupt size) and is not read
MAX_FUNCTION_BYTES = 16 << 20
# objects are read whole: a project's extension modules, not a framework's libraries
MAX_OBJECT_BYTES = 1 << 30


@dataclass(frozen=True)
class Function:
    name: str
    address: int
    code: bytes


@dataclass(frozen=True)
class CodeListing:
    arch: str  # "x86_64", "aarch64", ... as ELF_MACHINES names it
    functions: tuple[Function, ...]
    imports: frozenset[str]


def _symbols(elf: ElfSections, index: int) -> Iterator[tuple[str, int, int, int, int]]:
    """(name, info, shndx, value, size) of each symbol of table ``index``."""
    lay = elf.layout
    data = elf.body(index, "symbol table")
    data = data[: len(data) - len(data) % lay.sym.size]
    link = elf.sections[index][6]
    for row in lay.sym.iter_unpack(data):
        if lay.sym_reorder:  # 32-bit: name, value, size, info, other, shndx
            noff, value, size, info, _other, shndx = row
        else:
            noff, info, _other, shndx, value, size = row
        name = elf.cstr(link, noff, "symbol table") if noff else ""
        yield name, info, shndx, value, size


def _code(elf: ElfSections, shndx: int, value: int, size: int) -> bytes | None:
    if not 0 < shndx < len(elf.sections) or size <= 0 or size > MAX_FUNCTION_BYTES:
        return None
    sh = elf.sections[shndx]
    if not sh[2] & SHF_EXECINSTR:
        return None
    start = value - sh[3]
    if start < 0 or start + size > sh[5]:
        return None
    return bytes(elf.body(shndx, "a code section")[start : start + size])


def read_functions(path: str | Path) -> CodeListing:
    """The functions of the ELF object at ``path``, with their code; ElfError when unreadable."""
    name = str(path)
    with open(path, "rb") as handle:
        buf = handle.read(MAX_OBJECT_BYTES + 1)
    if len(buf) > MAX_OBJECT_BYTES:
        raise ElfError(f"{name}: larger than {MAX_OBJECT_BYTES >> 20} MiB; not scanned")
    elf = ElfSections(buf, name)
    try:
        table = elf.by_type.get(SHT_SYMTAB, elf.by_type.get(SHT_DYNSYM))
        functions: dict[int, Function] = {}
        if table is not None:
            for sym, info, shndx, value, size in _symbols(elf, table):
                if info & 0xF not in (STT_FUNC, STT_GNU_IFUNC) or value in functions:
                    continue
                code = _code(elf, shndx, value, size)
                if code is not None and sym:
                    functions[value] = Function(sym, value, code)
        imports: set[str] = set()
        dynsym = elf.by_type.get(SHT_DYNSYM)
        if dynsym is not None:
            imports = {sym for sym, _i, shndx, _v, _s in _symbols(elf, dynsym) if shndx == 0 and sym}
        return CodeListing(arch=elf.arch, functions=tuple(sorted(functions.values(), key=lambda f: f.address)),
                           imports=frozenset(imports))
    finally:
        elf.release()
