"""ISA level rules and the function reader's handling of hostile ELF files."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from xcompat.abi.elf import ElfError
from xcompat.abi.elf.functions import read_functions
from xcompat.errors import InputError
from xcompat.isa.levels import all_levels, levels_for


def test_levels_are_ordered_and_every_rule_names_a_known_level() -> None:
    for arch, rules in all_levels().items():
        assert len(set(rules.levels)) == len(rules.levels), arch
        for level in (*rules.groups.values(), *rules.mnemonics.values(), *rules.encodings.values()):
            assert level in rules.levels, (arch, level)
    x86 = levels_for("x86_64")
    assert x86.rank("x86-64") < x86.rank("x86-64-v2") < x86.rank("x86-64-v3") < x86.rank("x86-64-v4")
    assert x86.groups["avx2"] == "x86-64-v3" and levels_for("aarch64").encodings[2] == "armv8.2-a+sve"


def test_unknown_level_and_arch_are_input_errors() -> None:
    with pytest.raises(InputError, match="x86-64-v9"):
        levels_for("x86_64").rank("x86-64-v9")
    with pytest.raises(InputError, match="riscv64"):
        levels_for("riscv64")


def _elf64(sections: list[tuple[int, int, int, int, int, int]], blobs: bytes) -> bytes:
    """A little-endian ELF64 header + ``blobs`` + a section header table of ``sections``
    (type, flags, addr, offset, size, link)."""
    shoff = 64 + len(blobs)
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    header += struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(sections), 0)
    table = b"".join(struct.pack("<IIQQQQIIQQ", 0, t, f, a, o, s, link, 0, 1, 24 if t in (2, 11) else 0)
                     for t, f, a, o, s, link in sections)
    return header + blobs + table


@pytest.mark.parametrize("data, match", [
    (b"", "not an ELF"),
    (b"\x7fELF" + bytes(12), "unsupported ELF class"),
    (b"\x7fELF\x02\x01" + bytes(30), "truncated"),
    (b"MZ" + bytes(100), "not an ELF"),
])
def test_unreadable_files_raise_elf_errors(tmp_path: Path, data: bytes, match: str) -> None:
    path = tmp_path / "x.so"
    path.write_bytes(data)
    with pytest.raises(ElfError, match=match):
        read_functions(path)


def test_symbols_pointing_outside_their_section_or_huge_are_skipped(tmp_path: Path) -> None:
    strtab = b"\0f_ok\0f_out\0f_huge\0"
    code = b"\x90" * 16
    sym = struct.Struct("<IBBHQQ")
    symtab = sym.pack(0, 0, 0, 0, 0, 0)
    symtab += sym.pack(1, 0x12, 0, 3, 0x1000, 4)  # inside .text
    symtab += sym.pack(6, 0x12, 0, 3, 0x1008, 64)  # runs past .text
    symtab += sym.pack(12, 0x12, 0, 3, 0x1000, 1 << 40)  # absurd size
    blobs = strtab + code + symtab
    base = 64
    sections = [(0, 0, 0, 0, 0, 0),
                (3, 0, 0, base, len(strtab), 0),  # 1: .strtab
                (2, 0, 0, base + len(strtab) + len(code), len(symtab), 1),  # 2: .symtab -> strtab 1
                (1, 0x6, 0x1000, base + len(strtab), len(code), 0)]  # 3: .text, exec
    path = tmp_path / "lib.so"
    path.write_bytes(_elf64(sections, blobs))
    listing = read_functions(path)
    assert [(f.name, f.code) for f in listing.functions] == [("f_ok", code[:4])]
    assert listing.arch == "x86_64"


def test_a_symbol_name_past_its_string_table_is_an_elf_error(tmp_path: Path) -> None:
    sym = struct.Struct("<IBBHQQ")
    strtab = b"\0a\0"
    symtab = sym.pack(0, 0, 0, 0, 0, 0) + sym.pack(999, 0x12, 0, 0, 0, 0)
    sections = [(0, 0, 0, 0, 0, 0), (3, 0, 0, 64, len(strtab), 0), (2, 0, 0, 64 + len(strtab), len(symtab), 1)]
    path = tmp_path / "lib.so"
    path.write_bytes(_elf64(sections, strtab + symtab))
    with pytest.raises(ElfError, match="past its string table"):
        read_functions(path)
