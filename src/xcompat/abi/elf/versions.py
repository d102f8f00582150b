"""GNU symbol versions: the nodes an object defines (``.gnu.version_d``) and the ones it
needs from each library (``.gnu.version_r``), by the index ``.gnu.version`` gives each symbol.

Both chains are walked with a bound (one step per entry that fits in the section), so a
``vd_next`` / ``vn_next`` loop in a hostile file ends.
"""

from __future__ import annotations

from xcompat.abi.elf.headers import SHT_GNU_VERDEF, SHT_GNU_VERNEED, ElfError, ElfSections

VER_FLG_BASE = 1  # the definition names the file itself, not a version node

# version index -> (version name, library that defines it; None for the object's own)
VersionNames = dict[int, tuple[str, str | None]]


def version_definitions(elf: ElfSections) -> tuple[VersionNames, list[str]]:
    """The version indexes the object defines, and its version nodes in file order (the
    base entry, which names the file, left out)."""
    names: VersionNames = {}
    defs: list[str] = []
    vi = elf.by_type.get(SHT_GNU_VERDEF)
    if vi is None:
        return names, defs
    lay = elf.layout
    data = elf.body(vi, ".gnu.version_d")
    link = elf.sections[vi][6]
    elf.body(link, ".gnu.version_d's string table")
    off = 0
    for _ in range(len(data) // lay.verdef.size + 1):
        if off + lay.verdef.size > len(data):
            raise ElfError(f"{elf.name}: .gnu.version_d entry at offset {off} is truncated")
        _v, flags, ndx, cnt, _h, aux, nxt = lay.verdef.unpack_from(data, off)
        if cnt and off + aux + lay.verdaux.size <= len(data):
            vname = elf.cstr(link, lay.verdaux.unpack_from(data, off + aux)[0], ".gnu.version_d")
            names[ndx & 0x7FFF] = (vname, None)
            if not flags & VER_FLG_BASE:
                defs.append(vname)
        if not nxt:
            break
        off += nxt
    return names, defs


def version_needs(elf: ElfSections) -> tuple[VersionNames, dict[str, list[str]]]:
    """The version indexes the object needs, and per library the versions it needs from it."""
    names: VersionNames = {}
    needs: dict[str, list[str]] = {}
    vi = elf.by_type.get(SHT_GNU_VERNEED)
    if vi is None:
        return names, needs
    lay = elf.layout
    data = elf.body(vi, ".gnu.version_r")
    link = elf.sections[vi][6]
    elf.body(link, ".gnu.version_r's string table")
    off = 0
    for _ in range(len(data) // lay.verneed.size + 1):
        if off + lay.verneed.size > len(data):
            raise ElfError(f"{elf.name}: .gnu.version_r entry at offset {off} is truncated")
        _v, cnt, file_off, aux, nxt = lay.verneed.unpack_from(data, off)
        lib = elf.cstr(link, file_off, ".gnu.version_r")
        a = off + aux
        for _j in range(cnt):
            if a + lay.vernaux.size > len(data):
                raise ElfError(f"{elf.name}: .gnu.version_r auxiliary entry at offset {a} is truncated")
            _hash, _fl, other, vname_off, anext = lay.vernaux.unpack_from(data, a)
            vname = elf.cstr(link, vname_off, ".gnu.version_r")
            names[other & 0x7FFF] = (vname, lib)
            needs.setdefault(lib, []).append(vname)
            if not anext:
                break
            a += anext
        if not nxt:
            break
        off += nxt
    return names, needs
