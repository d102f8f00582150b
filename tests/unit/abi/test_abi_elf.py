"""The ELF reader and the hash lookup, on the system's own libraries and on broken copies."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

from xcompat.abi.demangle import demangle, demangle_many
from xcompat.abi.elf import ElfError, read_elf, read_elf_bytes
from xcompat.abi.elf.lookup import ElfSymbolIndex, gnu_hash

LIBC = next((p for p in (Path("/lib/x86_64-linux-gnu/libc.so.6"), Path("/lib64/libc.so.6"),
                          Path("/lib/aarch64-linux-gnu/libc.so.6")) if p.exists()), None)
LIBSTDCXX = next((p for p in (Path("/usr/lib/x86_64-linux-gnu/libstdc++.so.6"), Path("/usr/lib64/libstdc++.so.6"),
                              Path("/usr/lib/aarch64-linux-gnu/libstdc++.so.6")) if p.exists()), None)

needs_libc = pytest.mark.skipif(LIBC is None, reason="no glibc libc.so.6 found on this machine")


@needs_libc
def test_reads_glibc_interface():
    info = read_elf(LIBC)
    assert info.soname == "libc.so.6"
    assert "GLIBC_2.2.5" in info.version_defs
    assert any(k.startswith("memcpy@GLIBC_") for k in info.exports)
    stdout = next(v for k, v in info.exports.items() if k.startswith("stdout@GLIBC_"))
    assert stdout == ("o", 8)  # a pointer-sized data object
    assert "ld-linux-x86-64.so.2" in info.version_needs or info.arch != "x86_64"
    assert not info.is_python_extension


@needs_libc
@pytest.mark.parametrize("cut", [10, 63, 4096])
def test_truncated_elf_is_a_clear_error(cut):
    data = LIBC.read_bytes()[:cut]
    with pytest.raises(ElfError, match=r"<cut>: (truncated ELF header|section header table .* lies outside)"):
        read_elf_bytes(data, display_name="<cut>")


def test_not_elf_and_empty(tmp_path):
    with pytest.raises(ElfError, match="not an ELF file"):
        read_elf_bytes(b"MZ\x90\x00" + b"\0" * 100, display_name="x.dll")
    empty = tmp_path / "empty.so"
    empty.write_bytes(b"")
    with pytest.raises(ElfError, match="empty file"):
        read_elf(empty)
    with pytest.raises(ElfError, match="unsupported ELF class"):
        read_elf_bytes(b"\x7fELF\x07\x01" + b"\0" * 100)


@needs_libc
def test_corrupt_section_offsets_are_reported():
    data = bytearray(LIBC.read_bytes())
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    # point every section past the end of the file
    for i in range(shnum):
        struct.pack_into("<Q", data, shoff + i * shentsize + 0x18, len(data) + 1000)
    with pytest.raises(ElfError, match="lies outside the .*-byte file"):
        read_elf_bytes(bytes(data), display_name="bad.so")


@needs_libc
def test_a_symbol_name_past_the_string_table_is_reported():
    """A hostile .dynsym entry whose st_name points past .dynstr: a clear error naming the
    symbol, whichever symbol it is (the check covers every entry at once)."""
    data = bytearray(LIBC.read_bytes())
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    dynsym = next(h for h in headers if h[1] == 11)  # SHT_DYNSYM
    dynstr_size = headers[dynsym[6]][5]
    count = dynsym[5] // 24
    for idx in (count - 1, count // 2):
        bad = bytearray(data)
        struct.pack_into("<I", bad, dynsym[4] + idx * 24, dynstr_size + 7)
        with pytest.raises(ElfError, match=rf"bad.so: symbol {idx} names offset {dynstr_size + 7}, past .dynstr"):
            read_elf_bytes(bytes(bad), display_name="bad.so")


def _section_headers(data: bytearray) -> tuple[int, int, list[tuple]]:
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    return shoff, shentsize, [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]


@needs_libc
def test_an_error_in_a_mapped_file_is_the_reader_error(tmp_path):
    """Sections are read through views of the file's mapping; an error raised while views are
    alive still reaches the caller as the reader's error, not as a failure to unmap."""
    data = bytearray(LIBC.read_bytes())
    _, _, headers = _section_headers(data)
    dynsym = next(h for h in headers if h[1] == 11)
    struct.pack_into("<I", data, dynsym[4] + 24, headers[dynsym[6]][5] + 1)
    bad = tmp_path / "bad.so"
    bad.write_bytes(bytes(data))
    with pytest.raises(ElfError, match=r"bad.so: symbol 1 names offset \d+, past .dynstr"):
        read_elf(bad)
    assert read_elf(LIBC).soname == "libc.so.6"  # and the next read of a good file works


@needs_libc
def test_a_short_version_table_of_odd_length_is_reported(tmp_path):
    """A .gnu.version section cut to an odd number of bytes, shorter than .dynsym needs: a
    clear error, not a failure to build the array of 16-bit entries."""
    data = bytearray(LIBC.read_bytes())
    shoff, shentsize, headers = _section_headers(data)
    idx = next(i for i, h in enumerate(headers) if h[1] == 0x6FFFFFFF)  # SHT_GNU_VERSYM
    count = next(h for h in headers if h[1] == 11)[5] // 24
    struct.pack_into("<Q", data, shoff + idx * shentsize + 0x20, 2 * (count // 2) + 1)
    bad = tmp_path / "short.so"
    bad.write_bytes(bytes(data))
    with pytest.raises(ElfError, match=rf"short.so: .gnu.version has {count // 2} entries for {count} symbols"):
        read_elf(bad)


@pytest.mark.parametrize("lib", [p for p in (LIBC, LIBSTDCXX) if p is not None], ids=lambda p: p.name)
def test_hash_lookup_agrees_with_full_reader(lib):
    full = read_elf(lib)
    rng = random.Random(7)
    sample = rng.sample(sorted(full.exports), min(300, len(full.exports)))
    with ElfSymbolIndex(lib) as idx:
        assert idx._fallback is None  # the .gnu.hash path is exercised
        for key in sample:
            name, _, ver = key.partition("@")
            assert idx.exports(name, ver or None), key
            assert idx.exports(name)
        assert not idx.exports("xcompat_no_such_symbol")
        name, _, ver = sample[0].partition("@")
        if ver:
            assert not idx.exports(name, "NO_SUCH_VERSION_1.0")
        for imported in list(full.imports)[:50]:
            if imported not in {k.partition("@")[0] for k in full.exports}:
                assert not idx.exports(imported)


def test_gnu_hash_reference_values():
    # values from the ELF gABI GNU hash function (dl-new-hash.h)
    assert gnu_hash(b"") == 5381
    assert gnu_hash(b"printf") == 0x156B2BB8
    assert gnu_hash(b"exit") == 0x7C967E3F


def test_demangle_batch_keeps_versions_and_plain_names():
    assert demangle("_ZN3c1013GeneratorImplD2Ev") == "c10::GeneratorImpl::~GeneratorImpl()"
    assert demangle_many(["plain", "_ZTV5Shape@DEMO_1.0", "_Znot_valid"]) == ["plain", "vtable for Shape@DEMO_1.0", "_Znot_valid"]
