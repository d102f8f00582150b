"""A small reader for the dynamic interface of Mach-O libraries (macOS wheels).

Reads, with ``struct`` only (works on Linux CI runners where no Apple tool exists):

* ``LC_SYMTAB``: exported symbols (external, defined, not private-extern) and imported
  (undefined external) symbols. The export trie of ``LC_DYLD_INFO(_ONLY)`` /
  ``LC_DYLD_EXPORTS_TRIE`` lists the same exported names for linker-produced dylibs, so the
  symbol table is enough for a set comparison. Mach-O records no symbol sizes.
* ``LC_ID_DYLIB`` (the install name, the counterpart of an ELF SONAME), ``LC_LOAD_DYLIB`` /
  ``LC_LOAD_WEAK_DYLIB`` / ``LC_REEXPORT_DYLIB`` (needed libraries), ``LC_RPATH``;
* ``LC_BUILD_VERSION`` / ``LC_VERSION_MIN_MACOSX``: the deployment target (minimum macOS).

Universal (fat) files yield one interface per architecture slice.
"""

from __future__ import annotations

import mmap
import struct
from pathlib import Path

from xcompat.abi.binary import LibraryInterface

MH_MAGIC = 0xFEEDFACE
MH_MAGIC_64 = 0xFEEDFACF
FAT_MAGIC = 0xCAFEBABE
FAT_MAGIC_64 = 0xCAFEBABF

LC_SYMTAB = 0x2
LC_LOAD_DYLIB = 0xC
LC_ID_DYLIB = 0xD
LC_VERSION_MIN_MACOSX = 0x24
LC_BUILD_VERSION = 0x32
LC_LOAD_WEAK_DYLIB = 0x80000018
LC_RPATH = 0x8000001C
LC_REEXPORT_DYLIB = 0x8000001F

N_STAB = 0xE0
N_PEXT = 0x10
N_TYPE = 0x0E
N_EXT = 0x01
N_UNDF = 0x0
N_WEAK_REF = 0x0040

PLATFORM_MACOS = 1
CPU_TYPES = {0x01000007: "x86_64", 0x0100000C: "arm64", 7: "i386", 12: "arm"}

_MAGICS = {
    b"\xcf\xfa\xed\xfe",
    b"\xce\xfa\xed\xfe",
    b"\xfe\xed\xfa\xcf",
    b"\xfe\xed\xfa\xce",
    b"\xca\xfe\xba\xbe",
    b"\xca\xfe\xba\xbf",
}


MachOBuffer = bytes | bytearray | memoryview | mmap.mmap  # a whole file, or one slice of a fat file


class MachOError(ValueError):
    """The file is not a readable Mach-O object."""


def is_macho(head: bytes) -> bool:
    # 0xCAFEBABE is also a Java class file; Java class files have a major version >= 45 where
    # a fat Mach-O has a small architecture count.
    if head[:4] not in _MAGICS:
        return False
    if head[:4] in (b"\xca\xfe\xba\xbe", b"\xca\xfe\xba\xbf"):
        return len(head) >= 8 and 0 < struct.unpack(">I", head[4:8])[0] < 30
    return True


def read_macho(path: str | Path, *, display_name: str | None = None) -> list[LibraryInterface]:
    name = display_name or str(path)
    with open(path, "rb") as fh:
        try:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:
            raise MachOError(f"{name}: empty file, not a Mach-O object") from None
        try:
            return read_macho_buffer(mm, name)
        finally:
            mm.close()


def read_macho_buffer(buf: MachOBuffer, name: str) -> list[LibraryInterface]:
    if len(buf) < 8:
        raise MachOError(f"{name}: truncated Mach-O header ({len(buf)} bytes)")
    (magic,) = struct.unpack_from(">I", buf, 0)
    if magic in (FAT_MAGIC, FAT_MAGIC_64):
        (count,) = struct.unpack_from(">I", buf, 4)
        entry = struct.Struct(">iiIII" if magic == FAT_MAGIC else ">iiQQII")
        if 8 + count * entry.size > len(buf):
            raise MachOError(f"{name}: fat header lists {count} slices but the file is too short")
        out = []
        for i in range(count):
            cputype, _sub, off, size = entry.unpack_from(buf, 8 + i * entry.size)[:4]
            if off + size > len(buf):
                raise MachOError(f"{name}: fat slice {i} at offset {off}+{size} lies outside the file")
            arch = CPU_TYPES.get(cputype & 0xFFFFFFFF, f"cpu{cputype}")
            out.append(_read_thin(memoryview(buf)[off : off + size], f"{name}[{arch}]"))
        return out
    return [_read_thin(buf, name)]


# (byte order, 64-bit) of a thin Mach-O file, by its first four bytes
_THIN = {
    b"\xcf\xfa\xed\xfe": ("<", True),
    b"\xce\xfa\xed\xfe": ("<", False),
    b"\xfe\xed\xfa\xcf": (">", True),
    b"\xfe\xed\xfa\xce": (">", False),
}


def _read_thin(buf: MachOBuffer, name: str) -> LibraryInterface:
    layout = _THIN.get(bytes(buf[:4]))
    if layout is None:
        raise MachOError(f"{name}: not a Mach-O file (bad magic at offset 0)")
    order, is64 = layout
    hsize = 32 if is64 else 28
    if len(buf) < hsize:
        raise MachOError(f"{name}: truncated Mach-O header")
    _m, cputype, _sub, _ftype, ncmds, sizeofcmds, _flags = struct.unpack_from(order + "IiiIIII", buf, 0)
    if hsize + sizeofcmds > len(buf):
        raise MachOError(f"{name}: load commands ({sizeofcmds} bytes) run past the end of the file")
    info = LibraryInterface(path=name, format="macho", arch=CPU_TYPES.get(cputype & 0xFFFFFFFF, f"cpu{cputype}"))
    symtab = _load_commands(buf, name, info, order, hsize, ncmds, hsize + sizeofcmds)
    if symtab is None:
        info.unchecked.append(f"{name}: no LC_SYMTAB; exported symbols not compared")
        return info
    _read_symbols(buf, name, info, order, is64, symtab)
    return info


def _load_commands(
    buf: MachOBuffer, name: str, info: LibraryInterface, order: str, off: int, ncmds: int, end: int
) -> tuple[int, int, int, int] | None:
    """Fill ``info`` from the ``ncmds`` load commands from ``off`` to ``end``: install name,
    needed libraries, run paths and deployment target. The LC_SYMTAB fields, if there is one."""
    u32 = struct.Struct(order + "I")
    needed: list[str] = []
    rpaths: list[str] = []
    symtab = None
    for i in range(ncmds):
        if off + 8 > end:
            raise MachOError(f"{name}: load command {i} at offset {off} is truncated")
        cmd, cmdsize = struct.unpack_from(order + "II", buf, off)
        if cmdsize < 8 or off + cmdsize > end:
            raise MachOError(f"{name}: load command {i} at offset {off} has a bad size {cmdsize}")
        if cmd in (LC_ID_DYLIB, LC_LOAD_DYLIB, LC_LOAD_WEAK_DYLIB, LC_REEXPORT_DYLIB, LC_RPATH):
            (str_off,) = u32.unpack_from(buf, off + 8)
            raw = bytes(buf[off + str_off : off + cmdsize])
            text = raw.split(b"\0", 1)[0].decode("utf-8", "replace")
            if cmd == LC_ID_DYLIB:
                info.soname = text
            elif cmd == LC_RPATH:
                rpaths.append(text)
            else:
                needed.append(text)
        elif cmd == LC_SYMTAB:
            symtab = struct.unpack_from(order + "IIII", buf, off + 8)
        elif cmd == LC_BUILD_VERSION:
            platform, minos = struct.unpack_from(order + "II", buf, off + 8)
            if platform == PLATFORM_MACOS:
                info.macos_target = _version(minos)
        elif cmd == LC_VERSION_MIN_MACOSX and info.macos_target is None:
            info.macos_target = _version(u32.unpack_from(buf, off + 8)[0])
        off += cmdsize
    info.needed = tuple(needed)
    info.rpath = tuple(rpaths)
    return symtab


def _read_symbols(
    buf: MachOBuffer, name: str, info: LibraryInterface, order: str, is64: bool, symtab: tuple[int, int, int, int]
) -> None:
    """The exported and imported external symbols of the symbol table, into ``info``."""
    symoff, nsyms, stroff, strsize = symtab
    entry = struct.Struct(order + ("IBBHQ" if is64 else "IBBHI"))
    if symoff + nsyms * entry.size > len(buf) or stroff + strsize > len(buf):
        raise MachOError(f"{name}: LC_SYMTAB points past the end of the file (symbols at {symoff}, strings at {stroff})")
    strtab = bytes(buf[stroff : stroff + strsize])
    exports: dict[str, tuple[str, int]] = {}
    imports: dict[str, tuple[bool, str | None, str | None]] = {}
    for strx, ntype, sect, desc, _value in entry.iter_unpack(bytes(buf[symoff : symoff + nsyms * entry.size])):
        if ntype & N_STAB or not ntype & N_EXT or strx == 0 or strx >= strsize:
            continue
        end = strtab.find(b"\0", strx)
        sym = strtab[strx : end if end >= 0 else strsize].decode("utf-8", "replace")
        # Mach-O C symbols carry a leading underscore; strip it so names match ELF's.
        sym = sym.removeprefix("_")
        if ntype & N_TYPE == N_UNDF:
            imports[sym] = (bool(desc & N_WEAK_REF), None, None)
        elif not ntype & N_PEXT:
            exports[sym] = ("f" if sect else "o", 0)
    info.exports = exports
    info.imports = imports


def _version(packed: int) -> str:
    major, minor, patch = packed >> 16, (packed >> 8) & 0xFF, packed & 0xFF
    return f"{major}.{minor}" + (f".{patch}" if patch else "")
