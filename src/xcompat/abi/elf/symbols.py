"""The dynamic symbol table (``.dynsym``, with ``.gnu.version``): the exports and imports of
a shared object.

Exported: defined, GLOBAL / WEAK / GNU_UNIQUE binding, default or protected visibility.
Imported: undefined, with the version and library a versioned reference needs. The read of
``libtorch_cpu.so`` (about 75,000 exported symbols) is the hot path of ``xcompat abi diff``:
``benchmarks/abi_elf_reader.py`` measures it against pyelftools on the same files.
"""

from __future__ import annotations

import array

from xcompat.abi.binary import SIZED_TYPES, Exports, LibraryInterface
from xcompat.abi.elf.headers import (
    SHT_DYNSYM,
    SHT_GNU_VERSYM,
    STB_GLOBAL,
    STB_GNU_UNIQUE,
    STB_WEAK,
    ElfError,
    ElfSections,
    Layout,
)
from xcompat.abi.elf.versions import VersionNames

# st_info type -> one-letter kind used in manifests: lower case for GLOBAL binding, upper case
# for WEAK (vague linkage: inline functions and template instantiations); GNU_UNIQUE data
# objects (static members of inline functions and templates, unified by the loader) are "u",
# as in nm; other GNU_UNIQUE symbols are upper case.
_TYPE_CHAR = {0: "n", 1: "o", 2: "f", 3: "s", 4: "l", 5: "c", 6: "t", 10: "i"}


def _info_char(info: int) -> str:
    bind, typ = info >> 4, info & 0xF
    if bind == STB_GNU_UNIQUE and typ == 1:
        return "u"
    char = _TYPE_CHAR.get(typ, "?")
    return char.upper() if bind in (STB_WEAK, STB_GNU_UNIQUE) else char


# st_info -> the export's type char, or None for a binding that is not exported (LOCAL)
_EXPORT_CHAR = tuple(
    _info_char(i) if (i >> 4) in (STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE) else None for i in range(256)
)


def read_dynamic_symbols(elf: ElfSections, info: LibraryInterface, ver_names: VersionNames) -> None:
    """Fill ``info``'s exports, imports, hidden versions and extension flag from ``.dynsym``;
    without one, say so in ``info.unchecked``."""
    si = elf.by_type.get(SHT_DYNSYM)
    if si is None:
        info.unchecked.append(f"{elf.name}: no .dynsym section; no exported symbols to compare")
        return
    lay = elf.layout
    symdata = elf.body(si, ".dynsym")
    strtab = elf.strings(elf.sections[si][6], ".dynsym's string table")
    symdata = symdata[: len(symdata) - len(symdata) % lay.sym.size]
    versym = _symbol_versions(elf, len(symdata) // lay.sym.size)
    _fill_symbols(info, lay, symdata, strtab, versym, ver_names, elf.name)


def _symbol_versions(elf: ElfSections, nsyms: int) -> list[int] | None:
    """``.gnu.version``: one 16-bit version index per symbol; None without the section."""
    vi = elf.by_type.get(SHT_GNU_VERSYM)
    if vi is None:
        return None
    raw = elf.body(vi, ".gnu.version")[: 2 * nsyms]
    arr = array.array("H")
    arr.frombytes(raw[: len(raw) - len(raw) % 2])  # an odd byte at the end is no entry
    if elf.layout.swap:
        arr.byteswap()
    versym = arr.tolist()
    if len(versym) < nsyms:
        raise ElfError(f"{elf.name}: .gnu.version has {len(versym)} entries for {nsyms} symbols")
    return versym


def _check_name_offsets(lay: Layout, symdata: bytes | memoryview, tlen: int, name: str) -> None:
    """Every symbol's name offset must lie inside its string table. The st_name column is
    read at once (``st_name`` is the first 32-bit word of every entry in both ELF classes) and
    its maximum taken in C: a compare per symbol in the hot loop cost 2-5% of the read."""
    col = array.array("I")  # 4 bytes wherever CPython runs
    col.frombytes(symdata)
    if lay.swap:
        col.byteswap()
    offsets = col[:: lay.sym.size // 4]
    if offsets and max(offsets) >= tlen:
        idx = next(i for i, off in enumerate(offsets) if off >= tlen)
        raise ElfError(f"{name}: symbol {idx} names offset {offsets[idx]}, past .dynstr ({tlen} bytes)")


def _fill_symbols(info: LibraryInterface, lay: Layout, symdata: memoryview, strtab: str, versym: list[int] | None,
                  ver_names: VersionNames, name: str) -> None:
    # Hot loop: kept flat on purpose. One 5-tuple per symbol from iter_unpack (st_value is
    # skipped by the format: one int object less per symbol), unpacked in the for statement,
    # one table look-up for binding and type, no attribute look-ups. A column-wise reader
    # (memoryview column slices, bytes.translate, itertools.compress, names from one split of
    # .dynstr and an offset table, dict(zip(...))) was no faster on libtorch_cpu.so and used
    # 11 MB more: creating the strings and dicts dominates either way.
    exports: dict[str, str] = {}  # key -> type char; sizes of data objects only (binary.Exports)
    objects: dict[str, int] = {}
    imports: dict[str, tuple[bool, str | None, str | None]] = {}
    hidden: set[str] = set()
    # The string table comes decoded as latin-1 (byte offsets are character offsets): names are
    # str slices of it; names that are not ASCII (rare: UTF-8 identifiers) are re-decoded as
    # UTF-8 below.
    text = strtab
    ascii_only = text.isascii()
    find = text.find
    export_char = _EXPORT_CHAR
    objects_chars = SIZED_TYPES
    # No (kind, size) tuple per export: the type char is a cached one-character string, and
    # only data objects keep a size (binary.Exports says why).
    _check_name_offsets(lay, symdata, len(strtab), name)  # once for all symbols, not in the loop
    rows = lay.sym_read.iter_unpack(symdata)
    if lay.sym_reorder:
        rows = ((n, i, o, sh, sz) for n, sz, i, o, sh in rows)
    idx = -1
    for noff, st_info, st_other, shndx, size in rows:
        idx += 1
        tc = export_char[st_info]
        if tc is None or noff == 0:
            continue
        end = find("\0", noff)
        sym = text[noff:end] if end >= 0 else text[noff:]
        if not ascii_only and not sym.isascii():
            sym = sym.encode("latin-1").decode("utf-8", "replace")
        if shndx == 0:
            ver = lib = None
            if versym is not None:
                v = versym[idx] & 0x7FFF
                if v > 1:
                    ver, lib = ver_names.get(v, (None, None))
            imports[sym] = (st_info >> 4 == STB_WEAK, ver, lib)
            continue
        vis = st_other & 3
        if vis != 0 and vis != 3:  # neither STV_DEFAULT nor STV_PROTECTED
            continue
        if versym is not None:
            v = versym[idx]
            if v & 0x7FFF > 1:
                vn = ver_names.get(v & 0x7FFF)
                if vn is not None:
                    sym = f"{sym}@{vn[0]}"
                    if v & 0x8000:
                        hidden.add(sym)
        exports[sym] = tc
        if tc in objects_chars:
            objects[sym] = size
    info.exports = Exports(exports, objects)
    info._objects = objects
    info.imports = imports
    info.hidden_versions = frozenset(hidden)
    # A CPython extension module exports PyInit_<name>; a bytes search is cheaper than a key scan.
    info.python_extension = "PyInit_" in text and any(k.startswith("PyInit_") for k in exports)
