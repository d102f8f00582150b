"""A small, fast reader for the dynamic interface of ELF shared objects.

Hand-written on ``mmap`` + ``struct`` rather than built on pyelftools: on ``libtorch_cpu.so``
(about 75,000 exported symbols) pyelftools needs about 12 s for the symbol table and its
version sections, while ``struct.iter_unpack`` over the same bytes needs a few hundred
milliseconds. Only what an ABI check needs is read:

* ``.dynsym`` / ``.dynstr``: exported (defined, global/weak/unique, default or protected
  visibility) and imported (undefined) symbols, with type and ``st_size``;
* ``.gnu.version`` / ``.gnu.version_d`` / ``.gnu.version_r``: symbol version nodes that the
  object defines and the ones it needs from each library (glibc, libstdc++ floors);
* ``.dynamic``: ``DT_SONAME``, ``DT_NEEDED``, ``DT_RPATH``, ``DT_RUNPATH``;
* the bytes of ``.nv_fatbin`` (CUDA device code), and the NumPy C-API target string.

Malformed input raises :class:`ElfError` naming the file and the place that is wrong.
"""

from __future__ import annotations

import array
import mmap
import re
import struct
import sys
from pathlib import Path

from xcompat.abi.binary import ELF_MACHINES, SIZED_TYPES, Exports, LibraryInterface
from xcompat.gcpause import paused_gc

ELF_MAGIC = b"\x7fELF"

SHT_STRTAB = 3
SHT_DYNAMIC = 6
SHT_NOBITS = 8
SHT_DYNSYM = 11
SHT_GNU_VERDEF = 0x6FFFFFFD
SHT_GNU_VERNEED = 0x6FFFFFFE
SHT_GNU_VERSYM = 0x6FFFFFFF

DT_NULL = 0
DT_NEEDED = 1
DT_SONAME = 14
DT_RPATH = 15
DT_RUNPATH = 29

STB_GLOBAL = 1
STB_WEAK = 2
STB_GNU_UNIQUE = 10
STV_DEFAULT = 0
STV_PROTECTED = 3

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


_INFO_CHAR = {info: _info_char(info) for info in range(256)}
_OBJECT_CHARS = SIZED_TYPES

# NumPy bakes its C-API target into the message that ``import_array()`` prints on mismatch.
_NUMPY_TARGET = re.compile(rb"compiled against NumPy C-API version 0x[%\w]+ \(NumPy ([0-9]+\.[0-9]+)\)")


class ElfError(ValueError):
    """The file is not a readable ELF shared object."""


ElfInterface = LibraryInterface


class _Layout:
    """Struct formats for one ELF class and byte order."""

    def __init__(self, elf_class: int, order: str) -> None:
        o = order
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
        self.half_array = o + "H"


def is_elf(head: bytes) -> bool:
    return head[:4] == ELF_MAGIC


def read_elf(
    path: str | Path, *, display_name: str | None = None, want_fatbin: bool = True, symbols: bool = True
) -> ElfInterface:
    """Read the dynamic interface of the ELF file at ``path`` (``symbols=False``: only ``.dynamic``)."""
    name = display_name or str(path)
    with open(path, "rb") as fh:
        try:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:
            raise ElfError(f"{name}: empty file, not an ELF object") from None
        try:
            with paused_gc():
                info = _read(mm, name, want_fatbin, symbols)
        finally:
            try:
                mm.close()
            except BufferError:  # a view held by the frames of an error on its way up: the
                pass  # mapping is unmapped when the error is dropped
    if want_fatbin and any(".nv_fatbin" in u for u in info.unchecked):
        from xcompat.abi.fatbin import cuobjdump_archs

        archs = cuobjdump_archs(str(path))
        if archs is not None:
            info.cuda_archs = archs
            info.unchecked = [u for u in info.unchecked if ".nv_fatbin" not in u]
    return info


def read_elf_bytes(data: bytes, *, display_name: str = "<bytes>", want_fatbin: bool = True) -> ElfInterface:
    return _read(memoryview(data), display_name, want_fatbin)


def _read(buf, name: str, want_fatbin: bool, symbols: bool = True) -> ElfInterface:
    size = len(buf)
    if bytes(buf[:4]) != ELF_MAGIC:
        raise ElfError(f"{name}: not an ELF file (bad magic at offset 0)")
    if size < 16:
        raise ElfError(f"{name}: truncated ELF header ({size} bytes)")
    elf_class, data_enc = buf[4], buf[5]
    if elf_class not in (1, 2) or data_enc not in (1, 2):
        raise ElfError(f"{name}: unsupported ELF class/encoding {elf_class}/{data_enc} at offset 4")
    lay = _Layout(elf_class, "<" if data_enc == 1 else ">")
    if size < 16 + lay.ehdr.size:
        raise ElfError(f"{name}: truncated ELF header ({size} bytes)")
    eh = lay.ehdr.unpack_from(buf, 16)
    e_machine, e_shoff, e_shentsize, e_shnum, e_shstrndx = eh[1], eh[5], eh[10], eh[11], eh[12]
    info = LibraryInterface(path=name, format="elf", arch=ELF_MACHINES.get(e_machine, f"em{e_machine}"))
    if e_shoff == 0 or e_shnum == 0:
        raise ElfError(f"{name}: no section headers (stripped with --strip-sections?); cannot read symbols")
    if e_shentsize != lay.shdr.size or e_shoff + e_shnum * e_shentsize > size:
        raise ElfError(
            f"{name}: section header table at offset {e_shoff} ({e_shnum} x {e_shentsize} bytes) "
            f"lies outside the {size}-byte file; the file is truncated or corrupt"
        )
    sections = [lay.shdr.unpack_from(buf, e_shoff + i * e_shentsize) for i in range(e_shnum)]

    views: dict[int, memoryview] = {}  # .dynstr serves .dynamic, the version sections and .dynsym
    whole = memoryview(buf)

    def body(idx: int, what: str) -> memoryview:
        """The bytes of section ``idx``, a view of the mapped file (no copy: copying .dynstr and
        .dynsym of libtorch_cpu.so, 7 MB, into fresh memory costs more page faults than reading
        them through the mapping)."""
        if idx in views:
            return views[idx]
        if not 0 <= idx < len(sections):
            raise ElfError(f"{name}: {what} refers to section {idx}, but there are {len(sections)}")
        sh = sections[idx]
        if sh[1] == SHT_NOBITS:
            return whole[:0]
        off, sz = sh[4], sh[5]
        if off + sz > size:
            raise ElfError(
                f"{name}: section {idx} ({what}) at offset {off}+{sz} lies outside the {size}-byte file"
            )
        views[idx] = data = whole[off : off + sz]
        return data

    texts: dict[int, str] = {}

    def strings(idx: int, what: str) -> str:
        """String table ``idx`` decoded once as latin-1 (byte offsets stay character offsets)."""
        if idx not in texts:
            texts[idx] = str(body(idx, what), "latin-1")
        return texts[idx]

    by_type: dict[int, int] = {}
    for i, sh in enumerate(sections):
        by_type.setdefault(sh[1], i)

    # Section names are only needed for the CUDA fatbin and the NumPy string scan.
    if e_shstrndx == 0xFFFF:  # SHN_XINDEX: the real index is in section 0's sh_link
        e_shstrndx = sections[0][6]
    if e_shstrndx >= len(sections):
        raise ElfError(f"{name}: e_shstrndx {e_shstrndx} names no section (there are {len(sections)}); "
                       "the file is corrupt")
    shstr = bytes(body(e_shstrndx, "e_shstrndx")) if e_shstrndx > 0 else b""

    def sec_name(sh) -> bytes:
        end = shstr.find(b"\0", sh[0])
        return shstr[sh[0] : end if end >= 0 else None]

    names = {sec_name(sh): i for i, sh in enumerate(sections)} if shstr else {}

    # --- .dynamic ------------------------------------------------------------------------
    if SHT_DYNAMIC in by_type:
        di = by_type[SHT_DYNAMIC]
        dyn = body(di, ".dynamic")
        dynstr = strings(sections[di][6], ".dynamic's string table")
        needed: list[str] = []
        for tag, val in lay.dyn.iter_unpack(dyn[: len(dyn) - len(dyn) % lay.dyn.size]):
            if tag == DT_NULL:
                break
            if tag in (DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH):
                text = _cstr(dynstr, val, name, ".dynamic")
                if tag == DT_NEEDED:
                    needed.append(text)
                elif tag == DT_SONAME:
                    info.soname = text
                elif tag == DT_RPATH:
                    info.rpath = tuple(p for p in text.split(":") if p)
                else:
                    info.runpath = tuple(p for p in text.split(":") if p)
        info.needed = tuple(needed)

    info.debug_info = b".debug_info" in names
    if not symbols:
        return info
    # --- version definitions and needs ----------------------------------------------------
    ver_names: dict[int, tuple[str, str | None]] = {}  # index -> (version, library or None for own)
    defs: list[str] = []
    if SHT_GNU_VERDEF in by_type:
        vi = by_type[SHT_GNU_VERDEF]
        data = body(vi, ".gnu.version_d")
        strtab = strings(sections[vi][6], ".gnu.version_d's string table")
        off = 0
        for _ in range(len(data) // lay.verdef.size + 1):  # bounded walk of the vd_next chain
            if off + lay.verdef.size > len(data):
                raise ElfError(f"{name}: .gnu.version_d entry at offset {off} is truncated")
            _v, flags, ndx, cnt, _h, aux, nxt = lay.verdef.unpack_from(data, off)
            if cnt and off + aux + lay.verdaux.size <= len(data):
                vname = _cstr(strtab, lay.verdaux.unpack_from(data, off + aux)[0], name, ".gnu.version_d")
                ver_names[ndx & 0x7FFF] = (vname, None)
                if not flags & 1:  # VER_FLG_BASE names the file itself, not a version node
                    defs.append(vname)
            if not nxt:
                break
            off += nxt
    info.version_defs = tuple(defs)
    needs: dict[str, list[str]] = {}
    if SHT_GNU_VERNEED in by_type:
        vi = by_type[SHT_GNU_VERNEED]
        data = body(vi, ".gnu.version_r")
        strtab = strings(sections[vi][6], ".gnu.version_r's string table")
        off = 0
        for _ in range(len(data) // lay.verneed.size + 1):  # bounded walk of the vn_next chain
            if off + lay.verneed.size > len(data):
                raise ElfError(f"{name}: .gnu.version_r entry at offset {off} is truncated")
            _v, cnt, file_off, aux, nxt = lay.verneed.unpack_from(data, off)
            lib = _cstr(strtab, file_off, name, ".gnu.version_r")
            a = off + aux
            for _j in range(cnt):
                if a + lay.vernaux.size > len(data):
                    raise ElfError(f"{name}: .gnu.version_r auxiliary entry at offset {a} is truncated")
                _hash, _fl, other, vname_off, anext = lay.vernaux.unpack_from(data, a)
                vname = _cstr(strtab, vname_off, name, ".gnu.version_r")
                ver_names[other & 0x7FFF] = (vname, lib)
                needs.setdefault(lib, []).append(vname)
                if not anext:
                    break
                a += anext
            if not nxt:
                break
            off += nxt
    info.version_needs = {lib: tuple(v) for lib, v in needs.items()}

    # --- .dynsym ----------------------------------------------------------------------------
    if SHT_DYNSYM in by_type:
        si = by_type[SHT_DYNSYM]
        symdata = body(si, ".dynsym")
        strtab = strings(sections[si][6], ".dynsym's string table")
        symdata = symdata[: len(symdata) - len(symdata) % lay.sym.size]
        nsyms = len(symdata) // lay.sym.size
        versym: list[int] | None = None
        if SHT_GNU_VERSYM in by_type:
            raw = body(by_type[SHT_GNU_VERSYM], ".gnu.version")[: 2 * nsyms]
            arr = array.array("H")
            arr.frombytes(raw[: len(raw) - len(raw) % 2])  # an odd byte at the end is no entry
            if (lay.half_array[0] == ">") != (sys.byteorder == "big"):
                arr.byteswap()
            versym = arr.tolist()
            if len(versym) < nsyms:
                raise ElfError(f"{name}: .gnu.version has {len(versym)} entries for {nsyms} symbols")
        _fill_symbols(info, lay, symdata, strtab, versym, ver_names, name)
    else:
        info.unchecked.append(f"{name}: no .dynsym section; no exported symbols to compare")

    # --- CUDA device code and NumPy target ---------------------------------------------------
    if want_fatbin and b".nv_fatbin" in names:
        from xcompat.abi.fatbin import FatbinError, fatbin_archs

        fb = sections[names[b".nv_fatbin"]]
        if fb[1] != SHT_NOBITS and fb[4] + fb[5] <= size:
            try:
                info.cuda_archs = fatbin_archs(buf, fb[4], fb[4] + fb[5], name=f"{name}: .nv_fatbin")
            except FatbinError as exc:
                info.unchecked.append(f"{exc}; CUDA architectures not compared")
        else:
            info.unchecked.append(f"{name}: .nv_fatbin lies outside the file; CUDA architectures not compared")
    # Only extension modules (which export PyInit_*) are scanned for NumPy's target string.
    if b".rodata" in names and info.is_python_extension:
        ro = sections[names[b".rodata"]]
        if ro[1] != SHT_NOBITS and ro[4] + ro[5] <= size:
            m = _NUMPY_TARGET.search(buf[ro[4] : ro[4] + ro[5]])
            if m:
                info.numpy_target = m.group(1).decode()
    return info


def _cstr(table: str, off: int, name: str, where: str) -> str:
    """The NUL-terminated string at ``off`` of a string table decoded as latin-1, as UTF-8."""
    if off >= len(table):
        raise ElfError(f"{name}: string offset {off} in {where} is past its string table ({len(table)} bytes)")
    end = table.find("\0", off)
    text = table[off : end if end >= 0 else len(table)]
    return text if text.isascii() else text.encode("latin-1").decode("utf-8", "replace")


# st_info -> the export's type char, or None for a binding that is not exported (LOCAL)
_EXPORT_CHAR = tuple(
    _INFO_CHAR[i] if (i >> 4) in (STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE) else None for i in range(256)
)


def _check_name_offsets(lay: _Layout, symdata: bytes, tlen: int, name: str) -> None:
    """Every symbol's name offset must lie inside its string table. The st_name column is
    read at once (``st_name`` is the first 32-bit word of every entry in both ELF classes) and
    its maximum taken in C: a compare per symbol in the hot loop cost 2-5% of the read."""
    col = array.array("I")  # 4 bytes wherever CPython runs
    col.frombytes(symdata)
    if (lay.half_array[0] == ">") != (sys.byteorder == "big"):
        col.byteswap()
    offsets = col[:: lay.sym.size // 4]
    if offsets and max(offsets) >= tlen:
        idx = next(i for i, off in enumerate(offsets) if off >= tlen)
        raise ElfError(f"{name}: symbol {idx} names offset {offsets[idx]}, past .dynstr ({tlen} bytes)")


def _fill_symbols(info, lay, symdata, strtab, versym, ver_names, name) -> None:
    # Hot loop: kept flat on purpose. One 5-tuple per symbol from iter_unpack (st_value is
    # skipped by the format: one int object less per symbol), unpacked in the for statement,
    # one table look-up for binding and type, no attribute look-ups. A column-wise reader
    # (memoryview column slices, bytes.translate, itertools.compress, names from one split of
    # .dynstr and an offset table, dict(zip(...))) was measured no faster on libtorch_cpu.so
    # and 11 MB larger: creating the strings and dicts dominates either way.
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
    tlen = len(strtab)
    export_char = _EXPORT_CHAR
    objects_chars = _OBJECT_CHARS
    # No (kind, size) tuple per export: the type char is a cached one-character string, and
    # only data objects keep a size (binary.Exports says why).
    _check_name_offsets(lay, symdata, tlen, name)  # once for all symbols, not in the loop
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
        if vis != 0 and vis != 3:
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


def split_version(key: str) -> tuple[str, str | None]:
    """``"name@VER"`` -> (``"name"``, ``"VER"``); ``"name"`` -> (``"name"``, None)."""
    name, sep, ver = key.partition("@")
    return (name, ver) if sep else (key, None)
