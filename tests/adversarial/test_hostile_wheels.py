"""Hostile wheels and libraries through `xcompat abi diff` / `abi snapshot`: refused with exit 2 and
one line naming the wheel and the member, never a traceback, never analysed as if they were fine."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from xcompat.cli import main

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is needed to build a real shared library")

WHEEL = "demo-1.0.0-cp312-cp312-linux_x86_64.whl"
METADATA = "Metadata-Version: 2.1\nName: demo\nVersion: 1.0.0\n"
WHEEL_FILE = "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp312-cp312-linux_x86_64\n"


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> bytes:
    folder = tmp_path_factory.mktemp("lib")
    (folder / "demo.c").write_text("int demo_answer(void) { return 42; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(folder / "libdemo.so"), str(folder / "demo.c")],
                   check=True, capture_output=True)
    return (folder / "libdemo.so").read_bytes()


def make_wheel(path: Path, members: dict[str, bytes], *, symlinks: tuple[str, ...] = ()) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("demo-1.0.0.dist-info/METADATA", METADATA)
        zf.writestr("demo-1.0.0.dist-info/WHEEL", WHEEL_FILE)
        for name, data in members.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if name in symlinks:
                info.external_attr = (0o120777 << 16)
            else:
                info.external_attr = (0o100755 << 16)
            zf.writestr(info, data)
    return path


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def snapshot(tmp_path: Path, capsys, wheel: Path) -> tuple[int, str]:
    return run(capsys, "abi", "snapshot", str(wheel), "--output", str(tmp_path / "snap.json"))


def test_a_good_wheel_is_read(tmp_path: Path, capsys, library: bytes) -> None:
    wheel = make_wheel(tmp_path / WHEEL, {"demo/libdemo.so": library})
    code, err = snapshot(tmp_path, capsys, wheel)
    assert code == 0, err


@pytest.mark.parametrize(("member", "message"), [
    ("../evil.so", "points outside the wheel"),
    ("demo/../../evil.so", "points outside the wheel"),
    ("/abs/evil.so", "points outside the wheel"),
])
def test_members_outside_the_wheel_are_refused(tmp_path: Path, capsys, library: bytes, member: str, message: str) -> None:
    wheel = make_wheel(tmp_path / WHEEL, {member: library})
    code, err = snapshot(tmp_path, capsys, wheel)
    assert code == 2 and message in err and member in err, err
    assert not (tmp_path / "snap.json").exists()


def test_symlink_members_are_refused(tmp_path: Path, capsys, library: bytes) -> None:
    wheel = make_wheel(tmp_path / WHEEL, {"demo/libdemo.so": library, "demo/link.so": b"/etc/passwd"},
                       symlinks=("demo/link.so",))
    code, err = snapshot(tmp_path, capsys, wheel)
    assert code == 2 and "symbolic link" in err, err


def test_a_zip_bomb_member_is_refused_before_it_is_inflated(tmp_path: Path, capsys) -> None:
    wheel = make_wheel(tmp_path / WHEEL, {"demo/bomb.so": bytes(16 << 20)})  # 16 MiB of zeros, ~16 KiB packed
    code, err = snapshot(tmp_path, capsys, wheel)
    assert code == 2 and "zip bomb" in err, err


def test_an_oversized_member_is_refused(tmp_path: Path, capsys, library: bytes, monkeypatch) -> None:
    from xcompat import limits

    monkeypatch.setattr(limits, "LIMITS", limits.InputLimits(wheel_member_bytes=len(library) - 1))
    wheel = make_wheel(tmp_path / WHEEL, {"demo/libdemo.so": library})
    code, err = snapshot(tmp_path, capsys, wheel)
    assert code == 2 and "over the limit" in err, err


def test_a_member_with_a_bad_crc_is_a_clean_error(tmp_path: Path, capsys, library: bytes) -> None:
    wheel = tmp_path / WHEEL
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("demo-1.0.0.dist-info/METADATA", METADATA)
        zf.writestr("demo-1.0.0.dist-info/WHEEL", WHEEL_FILE)
        zf.writestr("demo/libdemo.so", library)
    data = bytearray(wheel.read_bytes())
    at = data.find(library[64:96])  # inside the stored member, past the ELF header
    data[at] ^= 0xFF
    wheel.write_bytes(bytes(data))
    code, err = snapshot(tmp_path, capsys, wheel)
    assert code == 2 and "damaged" in err, err


def test_a_truncated_wheel_is_a_clean_error(tmp_path: Path, capsys, library: bytes) -> None:
    wheel = make_wheel(tmp_path / WHEEL, {"demo/libdemo.so": library})
    wheel.write_bytes(wheel.read_bytes()[: wheel.stat().st_size // 2])
    code, err = snapshot(tmp_path, capsys, wheel)
    assert code == 2 and WHEEL in err, err


def test_an_out_of_range_shstrndx_is_refused(tmp_path: Path, capsys, library: bytes) -> None:
    import struct

    elf = bytearray(library)
    assert elf[4] == 2 and elf[5] == 1  # ELF64, little endian: e_shstrndx is the u16 at offset 62
    struct.pack_into("<H", elf, 62, 999)
    (tmp_path / "libdemo.so").write_bytes(bytes(elf))
    code, err = snapshot(tmp_path, capsys, tmp_path / "libdemo.so")
    assert code == 2 and "e_shstrndx" in err, err


def test_a_folder_changing_during_the_scan_is_a_clean_error(tmp_path: Path, capsys, library: bytes, monkeypatch) -> None:
    folder = tmp_path / "libs"
    folder.mkdir()
    (folder / "liba.so").write_bytes(library)
    (folder / "libb.so").write_bytes(library)
    import xcompat.abi.inputs as load

    real = load.read_elf

    def vanishing(path, *args, **kwargs):  # another process removes the next library meanwhile
        (folder / "libb.so").unlink(missing_ok=True)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(load, "read_elf", vanishing)
    code, err = snapshot(tmp_path, capsys, folder)
    assert code == 2 and "libb.so" in err and "folder change" in err, err


def test_diff_of_a_hostile_wheel_exits_2_in_a_subprocess(tmp_path: Path, library: bytes) -> None:
    good = make_wheel(tmp_path / WHEEL, {"demo/libdemo.so": library})
    (tmp_path / "new").mkdir()
    bad = make_wheel(tmp_path / "new" / WHEEL, {"../evil.so": library})
    proc = subprocess.run([sys.executable, "-m", "xcompat", "abi", "diff", str(good), str(bad)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
