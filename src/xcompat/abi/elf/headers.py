"""The ELF file header and section header table: where every read of an ELF file starts.

:class:`ElfSections` checks the identification bytes and the header, reads the section
header table, and hands out the bytes of single sections as views of the file's mapping
(no copy: copying ``.dynstr`` and ``.dynsym`` of ``libtorch_cpu.so``, 7 MB, into fresh memory
costs more page faults than reading them through the mapping). Anything that lies outside
the file raises :class:`ElfError` naming the file and the place that is wrong.
"""

from __future__ import annotations

import contextlib
import mmap
import re
import struct
import sys

from xcompat.abi.binary import ELF_MACHINES

ELF_MAGIC = b"\x7fELF"

SHT_STRTAB = 3
SHT_DYNAMIC = 6
SHT_NOBITS = 8
SHT_DYNSYM = 11
SHT_GNU_HASH = 0x6FFFFFF6
SHT_GNU_VERDEF = 0x6FFFFFFD
SHT_GNU_VERNEED = 0x6FFFFFFE
SHT_GNU_VERSYM = 0x6FFFFFFF

SHN_XINDEX = 0xFFFF  # e_shstrndx: the real index is in section 0's sh_link

DT_NULL = 0
DT_NEEDED = 1
DT_SONAME = 14
DT_RPATH = 15
DT_RUNPATH = 29

STB_GLOBAL = 1
STB_WEAK = 2
STB_GNU_UNIQUE = 10

_NUL = re.compile(b"\0")


class ElfError(ValueError):
    """The file is not a readable ELF shared object."""


# what an ELF file is read from: the file's mapping, its bytes, or a view of either
ElfBuffer = bytes | bytearray | memoryview | mmap.mmap


class Layout:
    """Struct formats for one ELF class and byte order."""

    def __init__(self, elf_class: int, order: str) -> None:
        o = order
        self.elf_class = elf_class
        self.order = order
        # arrays of 16- and 32-bit words read in the host's byte order need a byte swap
        self.swap = (order == ">") != (sys.byteorder == "big")
        if elf_class == 2:
            self.ehdr = struct.Struct(o + "HHIQQQIHHHHHH")
            self.shdr = struct.Struct(o + "IIQQQQIIQQ")
            self.sym = struct.Struct(o + "IBBHQQ")
            # the fields the symbol reader needs, st_value skipped: name, info, other, shndx, size
            self.sym_read = struct.Struct(o + "IBBH8xQ")
            self.sym_reorder = False
            self.dyn = struct.Struct(o + "qQ")
        else:
            self.ehdr = struct.Struct(o + "HHIIIIIHHHHHH")
            self.shdr = struct.Struct(o + "IIIIIIIIII")
            self.sym = struct.Struct(o + "IIIBBH")
            self.sym_read = struct.Struct(o + "I4xIBBH")  # name, size, info, other, shndx
            self.sym_reorder = True
            self.dyn = struct.Struct(o + "iI")
        self.verdef = struct.Struct(o + "HHHHIII")
        self.verdaux = struct.Struct(o + "II")
        self.verneed = struct.Struct(o + "HHIII")
        self.vernaux = struct.Struct(o + "IHHII")


def _layout(buf: ElfBuffer, name: str, size: int) -> Layout:
    """The layout named by the identification bytes, after the checks that the header is there."""
    if bytes(buf[:4]) != ELF_MAGIC:
        raise ElfError(f"{name}: not an ELF file (bad magic at offset 0)")
    if size < 16:
        raise ElfError(f"{name}: truncated ELF header ({size} bytes)")
    elf_class, data_enc = buf[4], buf[5]
    if elf_class not in (1, 2) or data_enc not in (1, 2):
        raise ElfError(f"{name}: unsupported ELF class/encoding {elf_class}/{data_enc} at offset 4")
    lay = Layout(elf_class, "<" if data_enc == 1 else ">")
    if size < 16 + lay.ehdr.size:
        raise ElfError(f"{name}: truncated ELF header ({size} bytes)")
    return lay


class ElfSections:
    """The section header table of the ELF file held in ``buf`` (a mapping, bytes or a view),
    and the bytes of its sections.

    ``sections`` holds the raw section headers (``sh_name, sh_type, sh_flags, sh_addr,
    sh_offset, sh_size, sh_link, sh_info, sh_addralign, sh_entsize``); ``by_type`` maps a
    section type to the first section of that type. Views handed out by :meth:`body` keep the
    mapping busy until they are dropped or :meth:`release` is called."""

    __slots__ = ("_names", "_shstrndx", "_texts", "_views", "_whole", "buf", "by_type", "layout", "machine", "name",
                 "sections", "size")

    def __init__(self, buf: ElfBuffer, name: str) -> None:
        self.buf = buf
        self.name = name
        self.size = size = len(buf)
        self.layout = lay = _layout(buf, name, size)
        eh = lay.ehdr.unpack_from(buf, 16)
        self.machine = eh[1]
        e_shoff, e_shentsize, e_shnum, self._shstrndx = eh[5], eh[10], eh[11], eh[12]
        if e_shoff == 0 or e_shnum == 0:
            raise ElfError(f"{name}: no section headers (stripped with --strip-sections?); cannot read symbols")
        if e_shentsize != lay.shdr.size or e_shoff + e_shnum * e_shentsize > size:
            raise ElfError(
                f"{name}: section header table at offset {e_shoff} ({e_shnum} x {e_shentsize} bytes) "
                f"lies outside the {size}-byte file; the file is truncated or corrupt"
            )
        self.sections = [lay.shdr.unpack_from(buf, e_shoff + i * e_shentsize) for i in range(e_shnum)]
        self.by_type: dict[int, int] = {}
        for i, sh in enumerate(self.sections):
            self.by_type.setdefault(sh[1], i)
        self._whole = memoryview(buf)
        self._views: dict[int, memoryview] = {}  # .dynstr serves .dynamic, the version sections and .dynsym
        self._texts: dict[int, str] = {}
        self._names: dict[bytes, int] | None = None

    @property
    def arch(self) -> str:
        return ELF_MACHINES.get(self.machine, f"em{self.machine}")

    def body(self, idx: int, what: str) -> memoryview:
        """The bytes of section ``idx``, a view of the file; ``what`` names it in errors."""
        views = self._views
        if idx in views:
            return views[idx]
        sections = self.sections
        if not 0 <= idx < len(sections):
            raise ElfError(f"{self.name}: {what} refers to section {idx}, but there are {len(sections)}")
        sh = sections[idx]
        if sh[1] == SHT_NOBITS:
            return self._whole[:0]
        off, sz = sh[4], sh[5]
        if off + sz > self.size:
            raise ElfError(
                f"{self.name}: section {idx} ({what}) at offset {off}+{sz} lies outside the {self.size}-byte file"
            )
        views[idx] = data = self._whole[off : off + sz]
        return data

    def strings(self, idx: int, what: str) -> str:
        """String table ``idx`` decoded once as latin-1 (byte offsets stay character offsets)."""
        texts = self._texts
        if idx not in texts:
            texts[idx] = str(self.body(idx, what), "latin-1")
        return texts[idx]

    def cstr(self, idx: int, off: int, where: str) -> str:
        """The NUL-terminated string at ``off`` of string table ``idx``, as UTF-8, read on its own
        (a lookup of a few names does not decode all of ``.dynstr``). ``where`` names the
        section that points into the table, in errors."""
        table = self.body(idx, f"{where}'s string table")
        if off >= len(table):
            raise ElfError(
                f"{self.name}: string offset {off} in {where} is past its string table ({len(table)} bytes)"
            )
        end = _NUL.search(table, off)
        raw = bytes(table[off : end.start() if end else len(table)])
        return raw.decode("utf-8", "replace")

    def section_names(self) -> dict[bytes, int]:
        """Section name -> index (the last of equal names), read from ``e_shstrndx`` once."""
        if self._names is None:
            self._names = self._read_names()
        return self._names

    def _read_names(self) -> dict[bytes, int]:
        sections = self.sections
        shstrndx = self._shstrndx
        if shstrndx == SHN_XINDEX:
            shstrndx = sections[0][6]
        if shstrndx >= len(sections):
            raise ElfError(f"{self.name}: e_shstrndx {shstrndx} names no section (there are {len(sections)}); "
                           "the file is corrupt")
        shstr = bytes(self.body(shstrndx, "e_shstrndx")) if shstrndx > 0 else b""
        if not shstr:
            return {}
        names = {}
        for i, sh in enumerate(sections):
            end = shstr.find(b"\0", sh[0])
            names[shstr[sh[0] : end if end >= 0 else None]] = i
        return names

    def file_range(self, idx: int) -> tuple[int, int] | None:
        """(start, end) of section ``idx`` in the file; None for a section with no bytes in
        the file (NOBITS) or one that lies outside it."""
        sh = self.sections[idx]
        if sh[1] == SHT_NOBITS or sh[4] + sh[5] > self.size:
            return None
        return sh[4], sh[4] + sh[5]

    def release(self) -> None:
        """Drop the views of the file, so that its mapping can be closed."""
        for view in (*self._views.values(), self._whole):
            # a view still exported (an error's frames hold it) is freed with them
            with contextlib.suppress(BufferError):
                view.release()
        self._views.clear()
