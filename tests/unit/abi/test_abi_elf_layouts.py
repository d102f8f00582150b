"""The column-wise symbol reader on all four ELF layouts (32/64-bit, little/big endian).

The test suite's real libraries are all 64-bit little-endian; these objects are written
byte by byte so every layout is read: exports of each binding and visibility, imports,
symbol versions (default and hidden), a name that starts inside another string (the
linker's suffix sharing), a UTF-8 name and a symbol without a name. pyelftools reads the
same files as the independent reference."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from tests.unit.abi.test_abi_elf_pyelftools import _pyelftools_interface

from xcompat.abi.elf import ElfError, read_elf, read_elf_bytes

SHT_DYNSYM, SHT_STRTAB, SHT_DYNAMIC = 11, 3, 6
SHT_VERSYM, SHT_VERDEF = 0x6FFFFFFF, 0x6FFFFFFD
GLOBAL, WEAK, UNIQUE, LOCAL = 1, 2, 10, 0
FUNC, OBJECT, TLS = 2, 1, 6
DEFAULT, HIDDEN, PROTECTED = 0, 2, 3

# (name, bind, type, visibility, defined, size, version index; 0x8000 marks a hidden version)
SYMBOLS = [
    ("compute", GLOBAL, FUNC, DEFAULT, True, 120, 1),
    ("inline_helper", WEAK, FUNC, DEFAULT, True, 40, 1),
    ("table", GLOBAL, OBJECT, PROTECTED, True, 64, 2),
    ("table", GLOBAL, OBJECT, DEFAULT, True, 32, 0x8003),  # table@V1, a hidden compat version
    ("guard", UNIQUE, OBJECT, DEFAULT, True, 8, 1),
    ("tls_state", GLOBAL, TLS, DEFAULT, True, 16, 1),
    ("private_fn", GLOBAL, FUNC, HIDDEN, True, 10, 1),
    ("local_fn", LOCAL, FUNC, DEFAULT, True, 10, 0),
    ("putenv_bar", GLOBAL, FUNC, DEFAULT, True, 5, 1),
    ("bar", GLOBAL, FUNC, DEFAULT, True, 6, 1),  # its name is the tail of putenv_bar
    ("größe", GLOBAL, OBJECT, DEFAULT, True, 4, 1),
    ("", GLOBAL, FUNC, DEFAULT, True, 4, 1),  # no name: not an interface
    ("malloc", GLOBAL, FUNC, DEFAULT, False, 0, 0),
    ("__gmon_start__", WEAK, 0, DEFAULT, False, 0, 0),
]
VERSIONS = ["libdemo.so.1", "V2", "V1"]  # index 1 is the file itself (VER_FLG_BASE)


def _elf(bits: int, order: str) -> bytes:
    o = "<" if order == "little" else ">"
    wide = bits == 64
    dynstr = bytearray(b"\0")
    offsets: dict[str, int] = {}

    def add(text: str) -> int:
        if text not in offsets:
            offsets[text] = len(dynstr)
            dynstr.extend(text.encode() + b"\0")
        return offsets[text]

    for v in VERSIONS:
        add(v)
    sym_fmt = struct.Struct(o + ("IBBHQQ" if wide else "IIIBBH"))
    symtab = bytearray(sym_fmt.size)  # index 0: the null symbol
    versym = bytearray(struct.pack(o + "H", 0))
    for name, bind, typ, vis, defined, size, ver in SYMBOLS:
        if name == "bar":
            noff = offsets["putenv_bar"] + len("putenv_")
        else:
            noff = add(name) if name else 0
        info, shndx = (bind << 4) | typ, (7 if defined else 0)
        row = (noff, info, vis, shndx, 0x1000, size) if wide else (noff, 0x1000, size, info, vis, shndx)
        symtab += sym_fmt.pack(*row)
        versym += struct.pack(o + "H", ver)
    verdef = bytearray()
    vd, vda = struct.Struct(o + "HHHHIII"), struct.Struct(o + "II")
    for i, v in enumerate(VERSIONS, start=1):
        nxt = vd.size + vda.size if i < len(VERSIONS) else 0
        verdef += vd.pack(1, 1 if i == 1 else 0, i, 1, 0, vd.size, nxt) + vda.pack(offsets[v], 0)
    dyn = struct.Struct(o + ("qQ" if wide else "iI"))
    dynamic = dyn.pack(14, offsets["libdemo.so.1"]) + dyn.pack(1, add("libc.so.6")) + dyn.pack(0, 0)
    shstr = bytearray(b"\0")

    def sname(text: str) -> int:
        shstr.extend(text.encode() + b"\0")
        return len(shstr) - len(text) - 1

    ehdr = struct.Struct(o + ("HHIQQQIHHHHHH" if wide else "HHIIIIIHHHHHH"))
    shdr = struct.Struct(o + ("IIQQQQIIQQ" if wide else "IIIIIIIIII"))
    body = bytearray()
    base = 16 + ehdr.size
    # (name, type, data, link, info, entsize); dynstr is section 2; a verdef's sh_info counts its entries
    specs = [(".dynsym", SHT_DYNSYM, symtab, 2, 1, sym_fmt.size), (".dynstr", SHT_STRTAB, dynstr, 0, 0, 0),
             (".gnu.version", SHT_VERSYM, versym, 1, 0, 2),
             (".gnu.version_d", SHT_VERDEF, verdef, 2, len(VERSIONS), 0),
             (".dynamic", SHT_DYNAMIC, dynamic, 2, 0, dyn.size)]
    headers = [shdr.pack(*([0] * 10))]
    for name, typ, data, link, info, entsize in specs:
        while (base + len(body)) % 8:
            body.append(0)
        off = base + len(body)
        body += data
        headers.append(shdr.pack(sname(name), typ, 2, off, off, len(data), link, info, 8, entsize))
    off = base + len(body)
    body += shstr
    headers.append(shdr.pack(sname(".shstrtab"), SHT_STRTAB, 0, 0, off, len(shstr), 0, 0, 1, 0))
    while (base + len(body)) % 8:
        body.append(0)
    shoff = base + len(body)
    ident = b"\x7fELF" + bytes([2 if wide else 1, 1 if order == "little" else 2, 1]) + b"\0" * 9
    header = ehdr.pack(3, 62 if wide else 3, 1, 0, 0, shoff, 0, 16 + ehdr.size, 0, 0, shdr.size, len(headers),
                       len(headers) - 1)
    return ident + header + bytes(body) + b"".join(headers)


LAYOUTS = [(64, "little"), (64, "big"), (32, "little"), (32, "big")]


@pytest.mark.parametrize(("bits", "order"), LAYOUTS, ids=[f"{b}-{o}" for b, o in LAYOUTS])
def test_every_layout_reads_the_same_interface(tmp_path: Path, bits: int, order: str):
    path = tmp_path / f"libdemo-{bits}-{order}.so"
    path.write_bytes(_elf(bits, order))
    info = read_elf(path, want_fatbin=False)
    # functions read as size 0: only data objects keep their st_size (binary.Exports)
    assert info.exports == {
        "compute": ("f", 0), "inline_helper": ("F", 0), "table@V2": ("o", 64), "table@V1": ("o", 32),
        "guard": ("u", 8), "tls_state": ("t", 16), "putenv_bar": ("f", 0), "bar": ("f", 0), "größe": ("o", 4),
    }
    assert info.hidden_versions == {"table@V1"}
    assert info.imports == {"malloc": (False, None, None), "__gmon_start__": (True, None, None)}
    assert info.object_sizes == {"table@V2": 64, "table@V1": 32, "guard": 8, "tls_state": 16, "größe": 4}
    assert info.soname == "libdemo.so.1" and info.needed == ("libc.so.6",)
    assert info.version_defs == ("V2", "V1")
    # the independent reader agrees on every layout
    exports, imports = _pyelftools_interface(path)
    assert info.exports == exports
    assert {k: v[0] for k, v in info.imports.items()} == imports


@pytest.mark.parametrize(("bits", "order"), LAYOUTS, ids=[f"{b}-{o}" for b, o in LAYOUTS])
def test_a_name_past_the_string_table_names_the_symbol(bits: int, order: str):
    data = bytearray(_elf(bits, order))
    o = "<" if order == "little" else ">"
    shoff = struct.unpack_from(o + ("Q" if bits == 64 else "I"), data, 0x28 if bits == 64 else 0x20)[0]
    shsize = 64 if bits == 64 else 40
    sym_off = struct.unpack_from(o + ("Q" if bits == 64 else "I"), data,
                                 shoff + shsize + (24 if bits == 64 else 16))[0]
    entsize = 24 if bits == 64 else 16
    struct.pack_into(o + "I", data, sym_off + 3 * entsize, 0x7FFFFFF0)  # symbol 3 ("table@V2")
    with pytest.raises(ElfError, match=r"<bad>: symbol 3 names offset 2147483632, past \.dynstr"):
        read_elf_bytes(bytes(data), display_name="<bad>", want_fatbin=False)
