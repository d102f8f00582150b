"""xcompat.archives: the one member-checked reader and unpacker of zips and tars, on real archives
built here. Every refusal is an input error naming the archive and the member, writes nothing
outside the destination and leaves no half-unpacked folder."""

from __future__ import annotations

import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from xcompat import limits
from xcompat.archives import (
    ArchiveError,
    extract_tar,
    extract_zip,
    extract_zip_cached,
    read_member,
)
from xcompat.errors import InputError


def make_zip(path: Path, members: dict[str, bytes], *, modes: dict[str, int] | None = None,
             method: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", method) as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = method
            info.external_attr = (modes or {}).get(name, 0o100644) << 16
            zf.writestr(info, data)
    return path


def make_tar(path: Path, members: list[tarfile.TarInfo | tuple[str, bytes]], *, mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode, format=tarfile.PAX_FORMAT) as tf:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                tf.addfile(member)
            else:
                name, data = member
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    return path


def special(name: str, kind: bytes, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info


def leftovers(folder: Path) -> list[str]:
    """What lies in ``folder`` besides the archives the test made."""
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith((".zip", ".whl", ".tar", ".tar.gz")))


def refused(call, *args, **kwargs) -> str:
    with pytest.raises(ArchiveError) as caught:
        call(*args, **kwargs)
    assert isinstance(caught.value, InputError) and caught.value.exit_code == 2
    text = str(caught.value)
    assert "\n" not in text
    return text


# -- zip ------------------------------------------------------------------------------------


def test_a_good_zip_is_unpacked_with_its_executable_bits(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "good.zip", {"pkg/__init__.py": b"x = 1\n", "pkg/tool": b"#!/bin/sh\n", "pkg/sub/": b""},
                       modes={"pkg/tool": 0o100755, "pkg/sub/": 0o040755})
    names = extract_zip(archive, tmp_path / "out")
    assert sorted(names) == ["pkg/__init__.py", "pkg/tool"]
    assert (tmp_path / "out" / "pkg" / "__init__.py").read_bytes() == b"x = 1\n"
    assert os.access(tmp_path / "out" / "pkg" / "tool", os.X_OK)
    assert not os.access(tmp_path / "out" / "pkg" / "__init__.py", os.X_OK)
    assert (tmp_path / "out" / "pkg" / "sub").is_dir()
    assert leftovers(tmp_path) == ["out"]


def test_select_unpacks_only_the_members_asked_for(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "t.whl", {"torch/lib/libc10.so": b"elf", "torch/version.py": b"v", "torch/x.py": b""})
    names = extract_zip(archive, tmp_path / "out", select=lambda n: n.startswith("torch/lib/"))
    assert names == ["torch/lib/libc10.so"]
    assert not (tmp_path / "out" / "torch" / "x.py").exists()


@pytest.mark.parametrize(("member", "message"), [
    ("torch/lib/../../../../X", "points outside"),
    ("../X", "points outside"),
    ("/tmp/X", "points outside"),
    ("C:/X", "points outside"),
    ("C:X", "points outside"),
    ("torch\\..\\..\\X", "backslash"),
    ("a\nb", "invalid name"),
])
def test_a_member_outside_or_misnamed_is_refused_and_nothing_is_written(tmp_path: Path, member: str,
                                                                        message: str) -> None:
    archive = make_zip(tmp_path / "bad.zip", {"torch/lib/ok.so": b"ok", member: b"evil"})
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    text = refused(extract_zip, archive, tmp_path / "a" / "b" / "c" / "out")
    assert message in text and "bad.zip" in text and repr(member) in text
    assert leftovers(tmp_path / "a" / "b" / "c") == []  # no half-unpacked folder
    assert not list(tmp_path.rglob("X"))


def test_a_name_with_a_nul_is_refused_though_zipfile_cuts_it(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "nul.zip", {"aXb.so": b"data"})
    archive.write_bytes(archive.read_bytes().replace(b"aXb.so", b"a\x00b.so"))  # local header and directory
    text = refused(extract_zip, archive, tmp_path / "out")
    assert "invalid name" in text and "'a\\x00b.so'" in text
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize(("mode", "message"), [
    (0o120777, "symbolic link"),
    (0o010644, "device, FIFO or socket"),
    (0o020644, "device, FIFO or socket"),
])
def test_links_and_special_files_in_a_zip_are_refused(tmp_path: Path, mode: int, message: str) -> None:
    archive = make_zip(tmp_path / "l.zip", {"pkg/x": b"/etc/passwd"}, modes={"pkg/x": mode})
    assert message in refused(extract_zip, archive, tmp_path / "out")
    assert leftovers(tmp_path) == []


def test_too_many_members_are_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(limits, "LIMITS", limits.InputLimits(wheel_members=3))
    archive = make_zip(tmp_path / "many.zip", {f"m{i}": b"" for i in range(4)})
    assert "more than 3 members" in refused(extract_zip, archive, tmp_path / "out")


def test_a_zip_bomb_is_refused_before_it_is_inflated(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "bomb.zip", {"zeros.so": bytes(16 << 20)})  # ~16 KiB packed
    assert "zip bomb" in refused(extract_zip, archive, tmp_path / "out")
    assert leftovers(tmp_path) == []


def test_a_huge_declared_size_is_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(limits, "LIMITS", limits.InputLimits(wheel_member_bytes=1000, wheel_total_bytes=1500))
    archive = make_zip(tmp_path / "big.zip", {"big": os.urandom(1001)})
    assert "over the limit of 1000" in refused(extract_zip, archive, tmp_path / "out")
    archive = make_zip(tmp_path / "total.zip", {"a": os.urandom(800), "b": os.urandom(800)})
    assert "more than 1500 bytes" in refused(extract_zip, archive, tmp_path / "out")


def test_a_member_declared_small_that_holds_more_is_refused(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "liar.zip", {"liar.so": os.urandom(4096)}, method=zipfile.ZIP_STORED)
    data = bytearray(archive.read_bytes())
    directory = data.rfind(b"PK\x01\x02")  # the central directory entry: uncompressed size at +24
    data[directory + 24:directory + 28] = (16).to_bytes(4, "little")
    archive.write_bytes(bytes(data))
    text = refused(extract_zip, archive, tmp_path / "out")
    assert "liar.so" in text
    assert leftovers(tmp_path) == []


def test_bytes_written_are_counted_past_the_declared_size(tmp_path: Path) -> None:
    from xcompat.archives.writer import Writer as _Writer

    (tmp_path / "root").mkdir()
    writer = _Writer("x.tar", tmp_path / "root", what="archive", total=1 << 30)
    with open(tmp_path / "big", "wb") as fh:
        fh.write(bytes(5000))
    with open(tmp_path / "big", "rb") as src:
        text = refused(writer.file, ("m",), "m", src, declared=100, executable=False)
    assert "past its declared size of 100" in text


def test_a_collision_of_a_file_and_a_folder_is_refused(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "dup.zip", {"a": b"1", "a/b": b"2"})
    assert "collides" in refused(extract_zip, archive, tmp_path / "out")
    assert leftovers(tmp_path) == []


def test_an_encrypted_member_is_refused(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "enc.zip", {"secret": b"x"}, method=zipfile.ZIP_STORED)
    data = bytearray(archive.read_bytes())
    for signature, flag_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.find(signature)
        data[at + flag_at] |= 0x1
    archive.write_bytes(bytes(data))
    assert "encrypted" in refused(extract_zip, archive, tmp_path / "out")


def test_a_fifo_is_not_opened_as_an_archive(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.zip")
    assert "not a regular file" in refused(extract_zip, tmp_path / "pipe.zip", tmp_path / "out")


def test_a_damaged_zip_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "junk.zip").write_bytes(b"not a zip at all")
    assert "not a readable archive" in refused(extract_zip, tmp_path / "junk.zip", tmp_path / "out")


def test_metadata_reads_are_bounded(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "m.whl", {"d-1.dist-info/METADATA": b"x" * 5000})
    with zipfile.ZipFile(archive) as zf:
        assert read_member(archive, zf, "d-1.dist-info/METADATA", limit=5000) == b"x" * 5000
        assert "over the limit of 4999" in refused(read_member, archive, zf, "d-1.dist-info/METADATA", limit=4999)


def test_replace_swaps_the_folder_only_when_the_new_one_is_whole(tmp_path: Path) -> None:
    dest = tmp_path / "out"
    extract_zip(make_zip(tmp_path / "one.zip", {"one": b"1"}), dest)
    with pytest.raises(FileExistsError):
        extract_zip(make_zip(tmp_path / "two.zip", {"two": b"2"}), dest)
    refused(extract_zip, make_zip(tmp_path / "bad.zip", {"ok": b"", "../x": b""}), dest, if_exists="replace")
    assert sorted(p.name for p in dest.iterdir()) == ["one"]
    extract_zip(tmp_path / "two.zip", dest, if_exists="replace")
    assert sorted(p.name for p in dest.iterdir()) == ["two"]
    assert leftovers(tmp_path) == ["out"]


# -- the cache ------------------------------------------------------------------------------


def test_the_cache_is_keyed_by_content_not_by_name_and_size(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "crafted").mkdir()
    name = "torch-2.0.0-cp311-cp311-linux_x86_64.whl"
    real = make_zip(tmp_path / "real" / name, {"torch/version.py": b"__version__ = '2.0.0'\n"}, method=zipfile.ZIP_STORED)
    crafted = make_zip(tmp_path / "crafted" / name, {"torch/version.py": b"__version__ = '6.6.6'\n"},
                       method=zipfile.ZIP_STORED)
    assert real.stat().st_size == crafted.stat().st_size
    cache = tmp_path / "cache"
    first = extract_zip_cached(crafted, cache)
    second = extract_zip_cached(real, cache)
    assert first != second
    assert "2.0.0" in (second / "torch" / "version.py").read_text()
    assert extract_zip_cached(real, cache) == second  # unpacked once
    assert sorted(p.name for p in cache.iterdir()) == sorted([first.name, second.name])


def test_a_refused_archive_leaves_nothing_in_the_cache(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "slip.whl", {"torch/lib/../../../../X": b"evil"})
    (tmp_path / "cache").mkdir()
    refused(extract_zip_cached, archive, tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []
    assert not list(tmp_path.rglob("X"))


# -- tar ------------------------------------------------------------------------------------


def test_a_good_sdist_is_unpacked(tmp_path: Path) -> None:
    folder = special("pkg-1.0/src", tarfile.DIRTYPE)
    archive = make_tar(tmp_path / "pkg-1.0.tar.gz", [("pkg-1.0/pyproject.toml", b"[project]\n"), folder,
                                                     ("pkg-1.0/src/m.py", b"x = 1\n")])
    assert extract_tar(archive, tmp_path / "out", what="sdist") == ["pkg-1.0/pyproject.toml", "pkg-1.0/src/m.py"]
    assert (tmp_path / "out" / "pkg-1.0" / "src" / "m.py").read_bytes() == b"x = 1\n"
    assert extract_tar(archive, None, what="sdist") == ["pkg-1.0/pyproject.toml", "pkg-1.0/src/m.py"]


@pytest.mark.parametrize(("member", "message"), [
    (special("pkg-1.0/inside", tarfile.SYMTYPE, "pyproject.toml"), "symbolic link"),
    (special("pkg-1.0/passwd", tarfile.SYMTYPE, "/etc/passwd"), "symbolic link"),
    (special("pkg-1.0/up", tarfile.SYMTYPE, "../../.."), "symbolic link"),
    (special("pkg-1.0/hard", tarfile.LNKTYPE, "pkg-1.0/pyproject.toml"), "hard link"),
    (special("pkg-1.0/null", tarfile.CHRTYPE), "device, FIFO"),
    (special("pkg-1.0/fifo", tarfile.FIFOTYPE), "device, FIFO"),
    (("pkg-1.0/../../X", b"evil"), "points outside"),
    (("/tmp/X", b"evil"), "points outside"),
])
def test_links_devices_and_escapes_in_an_sdist_are_refused(tmp_path: Path, member, message: str) -> None:
    archive = make_tar(tmp_path / "pkg-1.0.tar.gz", [("pkg-1.0/pyproject.toml", b"[project]\n"), member])
    text = refused(extract_tar, archive, tmp_path / "out", what="sdist")
    assert message in text and "pkg-1.0.tar.gz" in text
    assert leftovers(tmp_path) == []  # the file unpacked before the bad member is gone too
    assert not list(tmp_path.rglob("X"))


def test_too_many_tar_members_are_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(limits, "LIMITS", limits.InputLimits(wheel_members=3))
    archive = make_tar(tmp_path / "many.tar.gz", [(f"p/m{i}", b"") for i in range(4)])
    assert "more than 3 members" in refused(extract_tar, archive, tmp_path / "out")
    assert leftovers(tmp_path) == []


def test_a_gzip_bomb_sdist_is_refused(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "bomb.tar.gz", [("p/zeros", bytes(64 << 20))])  # ~64 KiB packed
    assert archive.stat().st_size < 1 << 20
    assert "compression bomb" in refused(extract_tar, archive, tmp_path / "out")
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("mode", ["w:gz", "w:bz2", "w:xz", "w"])
def test_a_tar_member_declared_over_the_limit_is_refused(tmp_path: Path, monkeypatch, mode: str) -> None:
    monkeypatch.setattr(limits, "LIMITS", limits.InputLimits(wheel_member_bytes=1000))
    archive = make_tar(tmp_path / "big.tar", [("p/big", os.urandom(1001))], mode=mode)
    assert "over the limit of 1000" in refused(extract_tar, archive, tmp_path / "out")


def test_an_oversized_tar_header_is_refused(tmp_path: Path) -> None:
    info = tarfile.TarInfo("p/x")
    info.pax_headers = {"comment": "y" * (2 << 20)}  # read whole into memory by tarfile
    with tarfile.open(tmp_path / "pax.tar", "w", format=tarfile.PAX_FORMAT) as tf:
        tf.addfile(info, io.BytesIO(b""))
    assert "header" in refused(extract_tar, tmp_path / "pax.tar", tmp_path / "out")


def test_a_truncated_sdist_is_an_input_error(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "t.tar.gz", [("p/a", os.urandom(100_000))])
    archive.write_bytes(archive.read_bytes()[:50_000])
    assert "not a readable" in refused(extract_tar, archive, tmp_path / "out")
    assert leftovers(tmp_path) == []


def test_git_exports_copy_in_tree_links_and_keep_no_link(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "git.tar", [
        special("p/README.md", tarfile.SYMTYPE, "docs/index.md"),  # before what it names
        ("p/docs/index.md", b"hello\n"),
        special("p/guide", tarfile.SYMTYPE, "docs"),
        special("p/chain.md", tarfile.SYMTYPE, "README.md"),
    ], mode="w")
    extract_tar(archive, tmp_path / "out", links="copy")
    out = tmp_path / "out" / "p"
    assert (out / "README.md").read_bytes() == (out / "guide" / "index.md").read_bytes() == b"hello\n"
    assert (out / "chain.md").read_bytes() == b"hello\n"
    assert not [p for p in (tmp_path / "out").rglob("*") if p.is_symlink()]


@pytest.mark.parametrize(("linkname", "message"), [
    ("/etc/passwd", "outside"),
    ("../../../etc", "outside"),
    ("..", "holding the link itself"),
    ("missing", "does not hold"),
])
def test_git_export_links_that_leave_the_tree_are_refused(tmp_path: Path, linkname: str, message: str) -> None:
    archive = make_tar(tmp_path / "git.tar", [("p/a", b""), special("p/d/link", tarfile.SYMTYPE, linkname)], mode="w")
    assert message in refused(extract_tar, archive, tmp_path / "out", links="copy")
    assert leftovers(tmp_path) == []
