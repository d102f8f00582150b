"""The ``.dynamic`` section: what the loader reads first (``DT_SONAME``, ``DT_NEEDED``,
``DT_RPATH``, ``DT_RUNPATH``)."""

from __future__ import annotations

from typing import NamedTuple

from xcompat.abi.elf.headers import (
    DT_NEEDED,
    DT_NULL,
    DT_RPATH,
    DT_RUNPATH,
    DT_SONAME,
    SHT_DYNAMIC,
    ElfSections,
)


class DynamicEntries(NamedTuple):
    soname: str | None
    needed: tuple[str, ...]
    rpath: tuple[str, ...]
    runpath: tuple[str, ...]


def dynamic_entries(elf: ElfSections) -> DynamicEntries | None:
    """The entries of the first ``SHT_DYNAMIC`` section, up to ``DT_NULL``; None without one.
    Of repeated ``DT_SONAME`` / ``DT_RPATH`` / ``DT_RUNPATH`` entries the last counts."""
    di = elf.by_type.get(SHT_DYNAMIC)
    if di is None:
        return None
    dyn = elf.body(di, ".dynamic")
    link = elf.sections[di][6]
    elf.body(link, ".dynamic's string table")
    entry = elf.layout.dyn
    soname = None
    needed: list[str] = []
    rpath: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    for tag, val in entry.iter_unpack(dyn[: len(dyn) - len(dyn) % entry.size]):
        if tag == DT_NULL:
            break
        if tag in (DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH):
            text = elf.cstr(link, val, ".dynamic")
            if tag == DT_NEEDED:
                needed.append(text)
            elif tag == DT_SONAME:
                soname = text
            elif tag == DT_RPATH:
                rpath = tuple(p for p in text.split(":") if p)
            else:
                runpath = tuple(p for p in text.split(":") if p)
    return DynamicEntries(soname, tuple(needed), rpath, runpath)
