"""List the GPU architectures in a CUDA fat binary (the ``.nv_fatbin`` section).

The container layout is not documented by NVIDIA; this parser reads only the two header
levels that ``cuobjdump --list-elf/--list-ptx`` also report, checked against objects built
with nvcc here (``tests/integration/abi``):

* a fat binary header: ``magic u32 = 0xBA55ED50, version u16, header_size u16, fat_size u64``;
  a section may hold several fat binaries one after another (8-byte aligned);
* then entries of ``kind u16 (1 = PTX, 2 = ELF cubin), version u16, header_size u32,
  payload_size u64, ...`` with the SM number as ``u32`` at offset 28 of the entry header.

It works on the mapped file without copying the section, so ``libtorch_cuda.so``'s
several hundred megabytes of device code cost only the pages of the entry headers.
"""

from __future__ import annotations

import re
import struct
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import mmap

FATBIN_MAGIC = 0xBA55ED50
_HEADER = struct.Struct("<IHHQ")
_ENTRY = struct.Struct("<HHIQ")
_KINDS = {1: "compute", 2: "sm"}


class FatbinError(ValueError):
    pass


def fatbin_archs(
    buf: bytes | bytearray | memoryview | mmap.mmap, start: int = 0, end: int | None = None, *, name: str = "<fatbin>"
) -> tuple[str, ...]:
    """Sorted ``sm_XX`` (cubin) and ``compute_XX`` (PTX) names found in ``buf[start:end]``."""
    end = len(buf) if end is None else end
    found: set[str] = set()
    pos = start
    seen_header = False
    while pos + _HEADER.size <= end:
        magic, _version, hsize, fsize = _HEADER.unpack_from(buf, pos)
        if magic != FATBIN_MAGIC:
            pos += 8  # fat binaries are 8-byte aligned; skip padding between them
            continue
        seen_header = True
        if hsize < _HEADER.size or pos + hsize + fsize > end:
            raise FatbinError(f"{name}: fat binary header at offset {pos - start} claims {fsize} bytes past the end")
        entry = pos + hsize
        stop = entry + fsize
        while entry + 32 <= stop:
            kind, _ver, ehsize, payload = _ENTRY.unpack_from(buf, entry)
            if ehsize < 32 or entry + ehsize + payload > stop:
                raise FatbinError(f"{name}: fat binary entry at offset {entry - start} is truncated or corrupt")
            (sm,) = struct.unpack_from("<I", buf, entry + 28)
            prefix = _KINDS.get(kind)
            if prefix is not None and 10 <= sm < 10000:
                found.add(f"{prefix}_{sm}")
            entry += ehsize + payload
        pos = stop
    if not seen_header and end > start:
        raise FatbinError(f"{name}: no fat binary header (magic 0x{FATBIN_MAGIC:08X}) found")
    return tuple(sorted(found, key=_arch_key))


def _arch_key(arch: str) -> tuple[int, str]:
    kind, _, num = arch.partition("_")
    return (int(num) if num.isdigit() else 0, kind)


_LISTING = re.compile(r"^(ELF|PTX) file\s+\d+:\s+\S*?\.(sm_\d+[a-z]?)\.(?:cubin|ptx)\s*$", re.MULTILINE)


def parse_cuobjdump_listing(text: str) -> tuple[str, ...]:
    """Architectures in ``cuobjdump --list-elf --list-ptx`` output
    (``ELF file 1: x.1.sm_80.cubin`` -> ``sm_80``; ``PTX file 1: x.1.sm_90.ptx`` -> ``compute_90``)."""
    found = set()
    for kind, arch in _LISTING.findall(text):
        num = re.sub(r"\D", "", arch)
        found.add(f"sm_{num}" if kind == "ELF" else f"compute_{num}")
    return tuple(sorted(found, key=_arch_key))


def cuobjdump_archs(path: str) -> tuple[str, ...] | None:
    """Ask ``cuobjdump`` (when installed) for the architectures: the fallback when the fat
    binary container is in a layout this parser does not know."""
    import shutil
    import subprocess

    tool = shutil.which("cuobjdump")
    if tool is None:
        return None
    proc = subprocess.run([tool, "--list-elf", "--list-ptx", path], capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0:
        return None
    return parse_cuobjdump_listing(proc.stdout)
