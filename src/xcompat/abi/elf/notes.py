"""ELF notes: the GNU build ID (``NT_GNU_BUILD_ID`` in a ``SHT_NOTE`` section).

The build ID names one link of one library: two files with the same ID are the same build,
whatever their paths; two copies of a runtime with different IDs are different builds. Notes
are read from the section table with every size checked against the section, so a truncated
or hostile file raises :class:`ElfError` or yields no ID, never reads outside the file.
"""

from __future__ import annotations

import contextlib
import mmap
import struct
from pathlib import Path

from xcompat.abi.elf.headers import ElfError, ElfSections

SHT_NOTE = 7
NT_GNU_BUILD_ID = 3
_GNU = b"GNU\0"
# A build ID is a hash: 16 (MD5/UUID) or 20 (SHA-1) bytes; anything past this is not one.
MAX_BUILD_ID_BYTES = 64


def _aligned(size: int) -> int:
    return (size + 3) & ~3


def notes(data: bytes | memoryview, order: str, where: str) -> list[tuple[bytes, int, bytes]]:
    """The (name, type, desc) of each note in ``data`` (one note section's bytes); ElfError
    when a note's sizes run past the section."""
    header = struct.Struct(order + "III")
    found: list[tuple[bytes, int, bytes]] = []
    off = 0
    size = len(data)
    while off + header.size <= size:
        namesz, descsz, ntype = header.unpack_from(data, off)
        name_at = off + header.size
        desc_at = name_at + _aligned(namesz)
        end = desc_at + _aligned(descsz)
        if desc_at + descsz > size:
            raise ElfError(f"{where}: note at offset {off} (name {namesz}, desc {descsz} bytes) runs past "
                           f"its {size}-byte section")
        found.append((bytes(data[name_at : name_at + namesz]), ntype, bytes(data[desc_at : desc_at + descsz])))
        off = end
    return found


def build_id_of(elf: ElfSections) -> str | None:
    """The GNU build ID of ``elf`` as lowercase hex, or None when it has none."""
    for idx, sh in enumerate(elf.sections):
        if sh[1] != SHT_NOTE:
            continue
        for name, ntype, desc in notes(elf.body(idx, "a note section"), elf.layout.order, elf.name):
            if ntype == NT_GNU_BUILD_ID and name == _GNU and 0 < len(desc) <= MAX_BUILD_ID_BYTES:
                return desc.hex()
    return None


def read_build_id(path: str | Path, *, display_name: str | None = None) -> str | None:
    """The GNU build ID of the ELF file at ``path`` (ElfError for a file that is not ELF)."""
    name = display_name or str(path)
    with open(path, "rb") as fh:
        try:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:
            raise ElfError(f"{name}: empty file, not an ELF object") from None
        elf: ElfSections | None = None
        try:
            elf = ElfSections(mm, name)
            return build_id_of(elf)
        except struct.error as exc:
            raise ElfError(f"{name}: truncated ELF data ({exc})") from None
        finally:
            if elf is not None:
                elf.release()
            # a view held by an error's frames keeps the mapping; it is unmapped when they are dropped
            with contextlib.suppress(BufferError):
                mm.close()
