"""``read_elf``: the dynamic interface of one ELF shared object, as a
:class:`~xcompat.abi.binary.LibraryInterface`.

Reads ``.dynamic`` (:mod:`.dynamic`), the version sections (:mod:`.versions`), ``.dynsym``
(:mod:`.symbols`), and for CUDA and NumPy the bytes of ``.nv_fatbin`` (device code) and the
NumPy C-API target string in ``.rodata``.
"""

from __future__ import annotations

import contextlib
import mmap
import re
from pathlib import Path

from xcompat.abi.binary import LibraryInterface
from xcompat.abi.elf.dynamic import dynamic_entries
from xcompat.abi.elf.headers import ElfBuffer, ElfError, ElfSections
from xcompat.abi.elf.symbols import read_dynamic_symbols
from xcompat.abi.elf.versions import version_definitions, version_needs
from xcompat.gcpause import paused_gc

# NumPy bakes its C-API target into the message that ``import_array()`` prints on mismatch.
_NUMPY_TARGET = re.compile(rb"compiled against NumPy C-API version 0x[%\w]+ \(NumPy ([0-9]+\.[0-9]+)\)")


def read_elf(
    path: str | Path, *, display_name: str | None = None, want_fatbin: bool = True, symbols: bool = True
) -> LibraryInterface:
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
            # a view held by the frames of an error on its way up: the mapping is unmapped
            # when the error is dropped
            with contextlib.suppress(BufferError):
                mm.close()
    if want_fatbin and any(".nv_fatbin" in u for u in info.unchecked):
        from xcompat.abi.fatbin import cuobjdump_archs

        archs = cuobjdump_archs(str(path))
        if archs is not None:
            info.cuda_archs = archs
            info.unchecked = [u for u in info.unchecked if ".nv_fatbin" not in u]
    return info


def read_elf_bytes(data: bytes, *, display_name: str = "<bytes>", want_fatbin: bool = True) -> LibraryInterface:
    return _read(memoryview(data), display_name, want_fatbin)


def _read(buf: ElfBuffer, name: str, want_fatbin: bool, symbols: bool = True) -> LibraryInterface:
    elf = ElfSections(buf, name)
    info = LibraryInterface(path=name, format="elf", arch=elf.arch)
    names = elf.section_names()
    dyn = dynamic_entries(elf)
    if dyn is not None:
        info.needed = dyn.needed
        if dyn.soname is not None:
            info.soname = dyn.soname
        info.rpath, info.runpath = dyn.rpath, dyn.runpath
    info.debug_info = b".debug_info" in names
    if not symbols:
        return info
    def_names, defs = version_definitions(elf)
    info.version_defs = tuple(defs)
    need_names, needs = version_needs(elf)
    info.version_needs = {lib: tuple(v) for lib, v in needs.items()}
    read_dynamic_symbols(elf, info, {**def_names, **need_names})
    if want_fatbin and b".nv_fatbin" in names:
        _read_fatbin(elf, info, names[b".nv_fatbin"])
    # Only extension modules (which export PyInit_*) are scanned for NumPy's target string.
    if b".rodata" in names and info.is_python_extension:
        span = elf.file_range(names[b".rodata"])
        if span is not None:
            m = _NUMPY_TARGET.search(buf[span[0] : span[1]])
            if m:
                info.numpy_target = m.group(1).decode()
    return info


def _read_fatbin(elf: ElfSections, info: LibraryInterface, idx: int) -> None:
    """The CUDA architectures of the device code in section ``idx`` (``.nv_fatbin``)."""
    from xcompat.abi.fatbin import FatbinError, fatbin_archs

    span = elf.file_range(idx)
    if span is None:
        info.unchecked.append(f"{elf.name}: .nv_fatbin lies outside the file; CUDA architectures not compared")
        return
    try:
        info.cuda_archs = fatbin_archs(elf.buf, span[0], span[1], name=f"{elf.name}: .nv_fatbin")
    except FatbinError as exc:
        info.unchecked.append(f"{exc}; CUDA architectures not compared")
