"""Tars (sdists, ``git archive`` exports), plain or compressed: checked member by member as the
stream is read, since a compressed tar cannot be listed without inflating it."""

from __future__ import annotations

import bz2
import contextlib
import gzip
import lzma
import tarfile
from pathlib import Path
from typing import IO, Literal, cast

from xcompat import limits as _limits
from xcompat.archives.members import (
    CONTROL,
    COPY_BLOCK,
    DAMAGED,
    DRIVE,
    RATIO_FLOOR,
    UNREADABLE,
    ArchiveError,
    check_size,
    member_parts,
    refuse,
    show,
    too_many,
)
from xcompat.archives.writer import IfExists, Writer, unpack
from xcompat.archives.zips import open_regular

# A tar member's headers (pax records, GNU long names) are read whole into memory by tarfile:
# this bounds them, far above any real long name.
_TAR_HEADER_BYTES = 1 << 20


class _TarStream:
    """The inflated bytes of a tar stream for tarfile's stream mode, counted as they are read:
    past ``LIMITS.wheel_total_bytes``, past the compression ratio, or (while headers are read)
    past ``_TAR_HEADER_BYTES``, reading stops with ``ArchiveError``."""

    def __init__(self, inner: IO[bytes], raw: IO[bytes], *, label: str | Path, what: str, total: int) -> None:
        self.inner = inner
        self.raw = raw
        self.label = label
        self.what = what
        self.total = total
        self.seen = 0
        self.header_budget: int | None = None

    def read(self, size: int = -1) -> bytes:
        # tarfile's stream mode asks for blocks of its buffer size; an unbounded read is never needed.
        data = self.inner.read(size if size is not None and 0 <= size <= COPY_BLOCK else COPY_BLOCK)
        self.seen += len(data)
        hint = f"this {self.what} cannot be trusted: {DAMAGED} from its source"
        if self.seen > self.total:
            raise ArchiveError(f"unpacks to more than {self.total} bytes; refused", file=self.label, hint=hint)
        ratio = _limits.LIMITS.wheel_compression_ratio
        if self.raw is not self.inner and self.seen > RATIO_FLOOR and self.seen > ratio * max(self.raw.tell(), 1):
            raise ArchiveError(f"inflates more than {ratio} times (a compression bomb?); refused", file=self.label,
                               hint=hint)
        if self.header_budget is not None:
            self.header_budget -= len(data)
            if self.header_budget < 0:
                raise ArchiveError(f"a member's header (a long name or pax record) is over {_TAR_HEADER_BYTES} bytes;"
                                   " refused", file=self.label, hint=hint)
        return data


def _inflated(raw: IO[bytes]) -> contextlib.AbstractContextManager[IO[bytes]]:
    """A reader of ``raw`` inflated (gzip, bzip2, xz), chosen by its first bytes, or ``raw``
    itself for a plain tar (not closed on exit: its opener closes it)."""
    start = raw.tell()
    head = raw.read(6)
    raw.seek(start)
    if head[:2] == b"\x1f\x8b":
        return cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="rb"))  # a GzipFile is a binary reader
    if head[:3] == b"BZh":
        return bz2.BZ2File(raw, "rb")
    if head == b"\xfd7zXZ\x00":
        return lzma.LZMAFile(raw, "rb")
    return contextlib.nullcontext(raw)


def extract_tar(archive: Path | None, dest: Path | None, *, what: str = "archive", fileobj: IO[bytes] | None = None,
                label: str | Path | None = None, links: Literal["refuse", "copy"] = "refuse",
                max_total: int | None = None, if_exists: IfExists = "error") -> list[str]:
    """Unpack the tar (plain, gzip, bzip2 or xz) ``archive`` or ``fileobj`` into ``dest``, each
    member checked as it is read; ``dest=None`` only checks them. Returns the ``/``-joined
    paths of the files it holds. ``label`` names the archive in messages when it
    is not a file (``git archive v1.0``).

    ``links="copy"`` is for a project's own ``git archive`` only: the build that follows runs
    that tree's code anyway, and a tracked symlink (``README.md -> docs/index.md``) is common.
    A link naming a file or folder inside the tree is written as a copy of it, never as a
    link; one naming anything else is refused.
    """
    source: str | Path = label if label is not None else archive  # type: ignore[assignment]
    total = min(_limits.LIMITS.wheel_total_bytes, max_total or _limits.LIMITS.wheel_total_bytes)
    names: list[str] = []
    with contextlib.ExitStack() as stack:
        raw = fileobj if fileobj is not None else stack.enter_context(open_regular(archive, what=what))  # type: ignore[arg-type]
        try:
            inner = stack.enter_context(_inflated(raw))
        except UNREADABLE as exc:
            raise ArchiveError(f"not a readable {what} ({exc}); {DAMAGED}", file=source) from None
        stream = _TarStream(inner, raw, label=source, what=what, total=total)

        def fill(writer: Writer | None) -> None:
            pending: list[tuple[tuple[str, ...], str, tuple[str, ...]]] = []
            try:
                stream.header_budget = _TAR_HEADER_BYTES  # opening reads the first header
                with tarfile.open(fileobj=stream, mode="r|") as tar:  # type: ignore[call-overload]
                    _tar_members(tar, stream, writer, names, pending, source=source, what=what, links=links)
            except UNREADABLE as exc:
                raise ArchiveError(f"not a readable {what} ({exc}); {DAMAGED}", file=source) from None
            if pending and writer is not None:
                writer.copies(pending)
            names.extend("/".join(parts) for parts, _name, _target in pending)

        if dest is None:
            fill(None)
        else:
            unpack(source, dest, fill, what=what, if_exists=if_exists, total=total)
    return names


def _tar_members(tar: tarfile.TarFile, stream: _TarStream, writer: Writer | None, names: list[str],
                 pending: list[tuple[tuple[str, ...], str, tuple[str, ...]]], *, source: str | Path, what: str,
                 links: str) -> None:
    count = 0
    declared = 0
    while True:
        stream.header_budget = _TAR_HEADER_BYTES
        member = tar.next()
        stream.header_budget = None
        if member is None:
            return
        count += 1
        if count > _limits.LIMITS.wheel_members:
            raise too_many(source, count, what=what)
        name = member.name
        parts = member_parts(source, name, what=what)
        declared += max(member.size, 0)
        check_size(source, name, member.size, None, declared, what=what)
        if member.isdir():
            if writer is not None:
                writer.folder(parts, name)
            continue
        if member.type in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.CONTTYPE):
            src = tar.extractfile(member)
            if writer is not None:
                writer.file(parts, name, src, declared=member.size, executable=bool(member.mode & 0o111))
            else:  # read through, so the bytes are counted and the next header is bounded
                while src is not None and src.read(COPY_BLOCK):
                    pass
        elif member.issym() and links == "copy":
            pending.append((parts, name, _link_target(source, parts, name, member.linkname, what=what)))
            continue
        elif member.issym():
            raise refuse(source, name, f"is a symbolic link (to {show(member.linkname)}), which no {what} may hold",
                          what=what)
        elif member.islnk():
            raise refuse(source, name, f"is a hard link (to {show(member.linkname)}), which no {what} may hold",
                          what=what)
        else:
            raise refuse(source, name, "is a device, FIFO or other special file, not a file", what=what)
        names.append("/".join(parts))


def _link_target(source: str | Path, parts: tuple[str, ...], name: str, linkname: str, *, what: str
                 ) -> tuple[str, ...]:
    """The in-tree path an in-tree symlink names, or ``ArchiveError``."""
    if not linkname or CONTROL.search(linkname) or "\\" in linkname or linkname.startswith("/") \
            or DRIVE.match(linkname):
        raise refuse(source, name, f"is a link to {show(linkname)}, outside the {what}", what=what)
    resolved: list[str] = list(parts[:-1])
    for part in linkname.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not resolved:
                raise refuse(source, name, f"is a link to {show(linkname)}, outside the {what}", what=what)
            resolved.pop()
        else:
            resolved.append(part)
    target = tuple(resolved)
    if not target or parts[: len(target)] == target:
        raise refuse(source, name, f"is a link to {show(linkname)}, a folder holding the link itself", what=what)
    return target


