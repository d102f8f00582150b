"""Zips (wheels): checked whole before anything is written, read a member at a time or unpacked,
and kept unpacked by the sha256 of their bytes."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

from xcompat import limits as _limits
from xcompat.archives.members import (
    COPY_BLOCK,
    DAMAGED,
    UNREADABLE,
    ArchiveError,
    check_size,
    member_parts,
    refuse,
    too_many,
)
from xcompat.archives.writer import IfExists, Writer, unpack


def _zip_type(info: zipfile.ZipInfo) -> str:
    """``file``, ``dir``, ``link`` or ``special``, from the Unix mode a zip may carry."""
    kind = stat.S_IFMT(info.external_attr >> 16)
    if kind == stat.S_IFLNK:
        return "link"
    if kind == stat.S_IFDIR or (kind in (0, stat.S_IFREG) and info.filename.endswith("/")):
        return "dir"
    if kind in (0, stat.S_IFREG):
        return "file"
    return "special"


def check_zip(archive: str | Path, zf: zipfile.ZipFile, *, what: str = "archive"
              ) -> list[tuple[zipfile.ZipInfo, tuple[str, ...], bool]]:
    """Every member of an open zip as ``(info, path parts, is a folder)``, after the member
    rules have passed for all of them; ``ArchiveError`` for the first that does not."""
    infos = zf.infolist()
    if len(infos) > _limits.LIMITS.wheel_members:
        raise too_many(archive, len(infos), what=what)
    checked = []
    total = 0
    for info in infos:
        # zipfile cuts a name at its first NUL; the name as stored is checked.
        name = info.orig_filename if "\0" in info.orig_filename else info.filename
        parts = member_parts(archive, name, what=what)
        kind = _zip_type(info)
        if kind == "link":
            raise refuse(archive, name, f"is a symbolic link, which no {what} may hold", what=what)
        if kind == "special":
            raise refuse(archive, name, "is a device, FIFO or socket, not a file", what=what)
        if info.flag_bits & 0x1:
            raise refuse(archive, name, "is encrypted", what=what)
        total += info.file_size
        check_size(archive, name, info.file_size, info.compress_size, total, what=what)
        checked.append((info, parts, kind == "dir"))
    return checked


def open_regular(path: Path, *, what: str = "archive") -> IO[bytes]:
    """``path`` opened for reading when it is a regular file (a FIFO would block, a device
    never ends); ``ArchiveError`` otherwise."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise ArchiveError(f"no such {what}", file=path) from None
    except OSError as exc:
        raise ArchiveError(f"cannot read the {what} ({exc.strerror or exc})", file=path) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ArchiveError(f"not a regular file (a folder, FIFO or device); give a {what} file", file=path)
    return os.fdopen(fd, "rb")


def _open_zip(archive: Path, fh: IO[bytes], *, what: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(fh)
    except UNREADABLE as exc:
        raise ArchiveError(f"not a readable {what} ({exc}); {DAMAGED}", file=archive) from None


def read_member(archive: str | Path, zf: zipfile.ZipFile, name: str | zipfile.ZipInfo, *, limit: int,
                what: str = "archive") -> bytes:
    """The bytes of one zip member, at most ``limit`` of them (``ArchiveError`` past it)."""
    info = name if isinstance(name, zipfile.ZipInfo) else zf.getinfo(name)
    if info.file_size > limit:
        raise refuse(archive, info.filename, f"is {info.file_size} bytes, over the limit of {limit} for it",
                      what=what)
    try:
        with zf.open(info) as src:
            data = src.read(limit + 1)
    except UNREADABLE as exc:
        raise refuse(archive, info.filename, f"cannot be read ({exc})", what=what) from None
    if len(data) > limit:
        raise refuse(archive, info.filename, f"inflates past the limit of {limit} bytes for it", what=what)
    return data


def extract_zip(archive: Path, dest: Path, *, what: str = "archive", select: Callable[[str], bool] | None = None,
                fileobj: IO[bytes] | None = None, if_exists: IfExists = "error") -> list[str]:
    """Unpack the members of the zip ``archive`` whose ``/``-joined path ``select`` accepts
    (all by default) into ``dest``, after every member has passed the rules. Returns the
    ``/``-joined paths of the files written."""
    names: list[str] = []
    with contextlib.ExitStack() as stack:
        fh = fileobj if fileobj is not None else stack.enter_context(open_regular(archive, what=what))
        zf = stack.enter_context(_open_zip(archive, fh, what=what))
        members = check_zip(archive, zf, what=what)

        def fill(writer: Writer) -> None:
            for info, parts, is_dir in members:
                if select is not None and not select("/".join(parts)):
                    continue
                if is_dir:
                    writer.folder(parts, info.filename)
                    continue
                try:
                    with zf.open(info) as src:
                        writer.file(parts, info.filename, src, declared=info.file_size,
                                    executable=bool((info.external_attr >> 16) & 0o111))
                except UNREADABLE as exc:
                    raise refuse(archive, info.filename, f"cannot be read ({exc})", what=what) from None
                names.append("/".join(parts))

        unpack(archive, dest, fill, what=what, if_exists=if_exists)
    return names


def sha256_of(fh: IO[bytes]) -> str:
    """The sha256 of an open file's bytes; the file is left at its start."""
    fh.seek(0)
    digest = hashlib.sha256()
    for block in iter(lambda: fh.read(COPY_BLOCK), b""):
        digest.update(block)
    fh.seek(0)
    return digest.hexdigest()


def extract_zip_cached(archive: Path, cache: Path, *, what: str = "archive",
                       select: Callable[[str], bool] | None = None) -> Path:
    """``extract_zip`` into ``cache/<sha256 of the archive's bytes>``, once per content.

    The digest is taken from the same open file the members are then read from, so the bytes
    unpacked are the bytes hashed even when the file is replaced meanwhile.
    """
    with open_regular(archive, what=what) as fh:
        dest = cache / sha256_of(fh)
        if dest.is_dir():
            return dest
        extract_zip(archive, dest, what=what, select=select, fileobj=fh, if_exists="keep")
        return dest


