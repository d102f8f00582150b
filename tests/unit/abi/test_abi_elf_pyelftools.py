"""The ELF reader's exports, imports and object sizes against pyelftools reading the same
tables: the system's libstdc++ (symbol versions, GNU-unique objects, TLS) and the test
suite's own C++ extension module (no version script) and versioned demo library."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerDefSection, GNUVerNeedSection, GNUVerSymSection
from tests.helpers import abi as h

from xcompat.abi.elf import read_elf

LIBSTDCXX = next((p for p in (Path("/usr/lib/x86_64-linux-gnu/libstdc++.so.6"), Path("/usr/lib64/libstdc++.so.6"),
                              Path("/usr/lib/aarch64-linux-gnu/libstdc++.so.6")) if p.exists()), None)

_TYPES = {"STT_NOTYPE": "n", "STT_OBJECT": "o", "STT_FUNC": "f", "STT_SECTION": "s", "STT_FILE": "l",
          "STT_COMMON": "c", "STT_TLS": "t", "STT_LOOS": "i", "STT_GNU_IFUNC": "i"}
_UNIQUE = ("STB_LOOS", "STB_GNU_UNIQUE")


def _pyelftools_interface(path: Path) -> tuple[dict[str, tuple[str, int]], dict[str, bool]]:
    """Exports ``{key: (type char, size)}`` and imports ``{name: weak}`` read by pyelftools."""
    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        versym = next((s for s in elf.iter_sections() if isinstance(s, GNUVerSymSection)), None)
        names: dict[int, str] = {}
        for sec in elf.iter_sections():
            if isinstance(sec, GNUVerDefSection):
                for vd, auxs in sec.iter_versions():
                    names[vd["vd_ndx"]] = next(auxs).name
            if isinstance(sec, GNUVerNeedSection):
                for _vn, auxs in sec.iter_versions():
                    for aux in auxs:
                        names[aux["vna_other"]] = aux.name
        exports: dict[str, tuple[str, int]] = {}
        imports: dict[str, bool] = {}
        for i, sym in enumerate(elf.get_section_by_name(".dynsym").iter_symbols()):
            bind, typ = sym["st_info"]["bind"], sym["st_info"]["type"]
            if bind not in ("STB_GLOBAL", "STB_WEAK", *_UNIQUE) or not sym.name:
                continue
            if sym["st_shndx"] == "SHN_UNDEF":
                imports[sym.name] = bind == "STB_WEAK"
                continue
            if sym["st_other"]["visibility"] not in ("STV_DEFAULT", "STV_PROTECTED"):
                continue
            char = _TYPES[typ]
            if bind in _UNIQUE and char == "o":
                char = "u"
            elif bind != "STB_GLOBAL":
                char = char.upper()
            ndx = versym.get_symbol(i)["ndx"] if versym is not None else 0
            ndx = ndx if isinstance(ndx, int) else 0
            key = sym.name if (ndx & 0x7FFF) <= 1 else f"{sym.name}@{names[ndx & 0x7FFF]}"
            # the reader keeps the size of data objects only (a function's is its code length)
            exports[key] = (char, sym["st_size"] if char in "oOtTu" else 0)
    return exports, imports


def _libraries() -> list[Path]:
    libs = [p for p in (LIBSTDCXX,) if p is not None]
    if shutil.which("g++"):
        libs += [h.build_extension("v1"), h.build_demo_library("v2")]
    return libs


@pytest.mark.parametrize("lib", _libraries(), ids=lambda p: p.name)
def test_reader_agrees_with_pyelftools(lib: Path):
    ours = read_elf(lib, want_fatbin=False)
    exports, imports = _pyelftools_interface(lib)
    assert dict(ours.exports.items()) == exports
    assert {k: v[0] for k, v in ours.imports.items()} == imports
    assert ours.object_sizes == {k: s for k, (t, s) in exports.items() if t in "oOtTu"}
