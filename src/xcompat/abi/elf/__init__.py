"""xcompat's ELF reader: one home for everything read from ELF files.

Hand-written on ``mmap`` + ``struct`` rather than built on pyelftools: reading the symbol
and version tables of ``libtorch_cpu.so`` (about 75,000 exported symbols) takes pyelftools
tens of times as long (``benchmarks/abi_elf_reader.py`` prints the ratio on the same files).
Only what an ABI check needs is read, by concern:

* :mod:`.headers`: the ELF header and the section header table (:class:`ElfSections`);
* :mod:`.dynamic`: ``DT_SONAME``, ``DT_NEEDED``, ``DT_RPATH``, ``DT_RUNPATH``;
* :mod:`.versions`: the symbol version nodes an object defines (``.gnu.version_d``) and
  the ones it needs from each library (``.gnu.version_r``: glibc, libstdc++ floors);
* :mod:`.symbols`: exported and imported symbols of ``.dynsym``, with type and size;
* :mod:`.reader`: :func:`read_elf`, all of the above plus CUDA device code (``.nv_fatbin``)
  and the NumPy C-API target string, as one :class:`~xcompat.abi.binary.LibraryInterface`;
* :mod:`.lookup`: :class:`~.lookup.ElfSymbolIndex`, single-symbol lookups through
  ``.gnu.hash``, for link checks;
* :mod:`.dwarf`: where DWARF says functions are defined; the only place that reads DWARF,
  with pyelftools, imported when a file with debug info is read.

Malformed input raises :class:`ElfError` naming the file and the place that is wrong.
"""

from xcompat.abi.elf.headers import ELF_MAGIC, ElfError
from xcompat.abi.elf.reader import read_elf, read_elf_bytes

__all__ = ["ELF_MAGIC", "ElfError", "read_elf", "read_elf_bytes"]
