"""The GNU build-id note reader on real and hostile ELF files."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from xcompat.abi.elf import ElfError
from xcompat.abi.elf.notes import MAX_BUILD_ID_BYTES, NT_GNU_BUILD_ID, notes, read_build_id

WANT = "0123456789abcdef0123456789abcdef01234567"


def _note(name: bytes, ntype: int, desc: bytes) -> bytes:
    def pad(b: bytes) -> bytes:
        return b + b"\0" * (-len(b) % 4)

    return struct.pack("<III", len(name), len(desc), ntype) + pad(name) + pad(desc)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    folder = tmp_path_factory.mktemp("notes")
    (folder / "x.c").write_text("int x(void) { return 1; }\n")
    out = folder / "libx.so"
    subprocess.run([cc, "-shared", "-fPIC", f"-Wl,--build-id=0x{WANT}", "-o", str(out), str(folder / "x.c")],
                   check=True)
    return out


def test_reads_the_linked_build_id(library: Path) -> None:
    assert read_build_id(library) == WANT


def test_no_build_id(tmp_path: Path) -> None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    (tmp_path / "y.c").write_text("int y(void) { return 2; }\n")
    out = tmp_path / "liby.so"
    subprocess.run([cc, "-shared", "-fPIC", "-Wl,--build-id=none", "-o", str(out), str(tmp_path / "y.c")], check=True)
    assert read_build_id(out) is None


def test_notes_in_order_and_other_owners() -> None:
    data = _note(b"GNU\0", 1, b"\1\2\3\4") + _note(b"GNU\0", NT_GNU_BUILD_ID, b"\xaa" * 20)
    assert [(n, t) for n, t, _ in notes(data, "<", "f")] == [(b"GNU\0", 1), (b"GNU\0", 3)]


@pytest.mark.parametrize("data", [
    struct.pack("<III", 4, 0xFFFFFFFF, 3) + b"GNU\0",  # desc size past the section
    struct.pack("<III", 0xFFFFFFF0, 4, 3),  # name size past the section
    _note(b"GNU\0", 3, b"\xaa" * 20)[:-4],  # truncated desc
])
def test_sizes_past_the_section_raise(data: bytes) -> None:
    with pytest.raises(ElfError, match="runs past"):
        notes(data, "<", "f")


def test_a_trailing_partial_header_is_ignored() -> None:
    assert notes(_note(b"GNU\0", 3, b"\x01" * 16) + b"\0\0\0", "<", "f")[0][2] == b"\x01" * 16


def test_oversized_or_foreign_build_id_is_not_one(library: Path, tmp_path: Path) -> None:
    data = bytearray(library.read_bytes())
    at = data.find(bytes.fromhex(WANT))
    assert at > 0
    # GNU -> GNX: a note of another owner with the same type is not a build ID
    name_at = data.rfind(b"GNU\0", 0, at)
    data[name_at + 2] = ord("X")
    (tmp_path / "foreign.so").write_bytes(bytes(data))
    assert read_build_id(tmp_path / "foreign.so") is None
    assert MAX_BUILD_ID_BYTES < 1000


@pytest.mark.parametrize("content", [b"", b"\x7fELF", b"MZ" + b"\0" * 100, b"\x7fELF\x02\x01\x01" + b"\xff" * 57])
def test_not_elf_or_truncated_raises(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.so"
    path.write_bytes(content)
    with pytest.raises(ElfError):
        read_build_id(path)


def test_a_corrupt_note_header_raises(library: Path, tmp_path: Path) -> None:
    data = library.read_bytes()
    cut = tmp_path / "cut.so"
    # the note's header (sizes, type, owner name) overwritten: sizes of 4 GiB, past the section
    at = data.find(bytes.fromhex(WANT))
    cut.write_bytes(data[:at - 16] + b"\xff" * 16 + data[at:])
    with pytest.raises(ElfError):
        read_build_id(cut)
