"""Look up single symbols in an ELF library the way the dynamic loader does: by hash.

Checking whether ~100 imports of an extension resolve against torch does not need the
75,000 exported symbols of ``libtorch_cpu.so`` read into a table: the ``.gnu.hash``
section (``DT_GNU_HASH``) answers each lookup by touching one bucket and a short chain.
This is what makes a link check cost milliseconds per torch version. The section table and
the version definitions come from the same reader as :func:`~xcompat.abi.elf.read_elf`;
libraries without ``.gnu.hash`` (or not 64-bit little-endian) fall back to the full read.
"""

from __future__ import annotations

import mmap
import struct
from pathlib import Path

from xcompat.abi.elf.headers import SHT_DYNSYM, SHT_GNU_HASH, SHT_GNU_VERSYM, ElfError, ElfSections
from xcompat.abi.elf.reader import read_elf
from xcompat.abi.elf.versions import version_definitions


def gnu_hash(name: bytes) -> int:
    h = 5381
    for c in name:
        h = (h * 33 + c) & 0xFFFFFFFF
    return h


class ElfSymbolIndex:
    """Answer "does this library export NAME (at VERSION)?" for one ELF file."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._fh = open(path, "rb")  # noqa: SIM115 - kept open for the index's lifetime; closed by close()
        try:
            self._mm = mmap.mmap(self._fh.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:
            self._fh.close()
            raise ElfError(f"{path}: empty file, not an ELF object") from None
        self._fallback: dict[str, set[str | None]] | None = None
        try:
            self._setup()
        except (ElfError, struct.error, IndexError):
            self._use_fallback()

    def close(self) -> None:
        self._mm.close()
        self._fh.close()

    def __enter__(self) -> ElfSymbolIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _use_fallback(self) -> None:
        info = read_elf(self.path, want_fatbin=False)
        table: dict[str, set[str | None]] = {}
        for key in info.exports:
            name, _, ver = key.partition("@")
            table.setdefault(name, set()).add(ver or None)
        self._fallback = table

    def _setup(self) -> None:
        elf = ElfSections(self._mm, self.path)
        try:
            self._setup_hash(elf)
        finally:
            elf.release()  # the lookups read the mapping directly; no view may keep it busy

    def _setup_hash(self, elf: ElfSections) -> None:
        if elf.layout.elf_class != 2 or elf.layout.order != "<":
            raise ElfError(f"{self.path}: only 64-bit little-endian ELF has a hash fast path")
        if SHT_GNU_HASH not in elf.by_type or SHT_DYNSYM not in elf.by_type:
            raise ElfError("no .gnu.hash")
        secs = elf.sections
        gh = secs[elf.by_type[SHT_GNU_HASH]]
        dynsym = secs[elf.by_type[SHT_DYNSYM]]
        strtab = secs[dynsym[6]]
        self._symoff_file = dynsym[4]
        self._str_off, self._str_size = strtab[4], strtab[5]
        base = gh[4]
        nbuckets, symoffset, bloom_size, _shift = struct.unpack_from("<IIII", self._mm, base)
        self._nbuckets = nbuckets
        self._symoffset = symoffset
        self._buckets_off = base + 16 + 8 * bloom_size
        self._chain_off = self._buckets_off + 4 * nbuckets
        self._versym_off = secs[elf.by_type[SHT_GNU_VERSYM]][4] if SHT_GNU_VERSYM in elf.by_type else None
        # version index -> name, for the versions this library defines
        self._versions = {ndx: vname for ndx, (vname, _lib) in version_definitions(elf)[0].items()}

    def exports(self, name: str, version: str | None = None) -> bool:
        """True when ``name`` is defined and exported (at ``version`` when one is required)."""
        if self._fallback is not None:
            vers = self._fallback.get(name)
            if not vers:
                return False
            return version is None or version in vers
        if not self._nbuckets:
            return False
        mm = self._mm
        raw = name.encode()
        h = gnu_hash(raw)
        (idx,) = struct.unpack_from("<I", mm, self._buckets_off + 4 * (h % self._nbuckets))
        if idx < self._symoffset:
            return False
        unpack = struct.unpack_from
        while True:
            (h2,) = unpack("<I", mm, self._chain_off + 4 * (idx - self._symoffset))
            if (h | 1) == (h2 | 1):
                st_name, st_info, st_other, st_shndx = unpack("<IBBH", mm, self._symoff_file + 24 * idx)
                off = self._str_off + st_name
                if mm[off : off + len(raw) + 1] == raw + b"\0" and st_shndx != 0 and (st_info >> 4) in (1, 2, 10) and (st_other & 3) in (0, 3):
                    if version is None:
                        return True
                    if self._versym_off is not None:
                        (v,) = unpack("<H", mm, self._versym_off + 2 * idx)
                        if self._versions.get(v & 0x7FFF) == version:
                            return True
            if h2 & 1:
                return False
            idx += 1
