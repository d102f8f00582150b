"""Reading and unpacking the archives xcompat is given: wheels, torch wheels, sdists, exported sources.

Every archive comes from outside (a pull request's build, a download, a path on the command
line), so one set of member rules applies wherever one is opened:

* a member name is a relative ``/`` path: no ``..`` part, no leading ``/``, no drive letter
  (``C:``), no backslash, no NUL or other control character;
* a member is a regular file or a folder: symbolic links, hard links, devices, FIFOs and
  sockets are refused, whatever they point at (``links="copy"``, for a project's own git
  export only, writes a copy of what an in-tree link names instead of the link);
* at most ``LIMITS.wheel_members`` members, each at most ``LIMITS.wheel_member_bytes``
  unpacked, together at most ``LIMITS.wheel_total_bytes``, none (and no compressed tar
  stream) inflating more than ``LIMITS.wheel_compression_ratio`` times past 1 MiB; declared
  sizes are checked before a byte is inflated and the bytes actually written are counted too;
* every folder a member is written into is resolved and must lie inside the destination.

A zip is checked whole before anything is written; a tar stream is checked member by member
as it is read (a compressed tar cannot be listed without inflating it). Either way unpacking
goes into a fresh folder beside the destination that is renamed into place only when every
member was written: a refused or damaged archive leaves no half-unpacked folder behind.

A violation is an :class:`ArchiveError` (an input error, exit 2) naming the archive and the
member. Extracted copies that are kept (:func:`extract_zip_cached`) are keyed by the sha256
of the archive's bytes, so a different archive with the same name and size is never served
for another.
"""

from __future__ import annotations

import bz2
import contextlib
import errno
import gzip
import hashlib
import lzma
import os
import re
import shutil
import stat
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import IO, Literal, cast

from xcompat import limits as _limits
from xcompat.errors import InputError

COPY_BLOCK = 1 << 20
# Inflation ratios are only judged past this size: small members compress unevenly.
_RATIO_FLOOR = 1 << 20
# A tar member's headers (pax records, GNU long names) are read whole into memory by tarfile:
# this bounds them, far above any real long name.
_TAR_HEADER_BYTES = 1 << 20
_SHOWN_NAME_CHARS = 200
_DRIVE = re.compile(r"^[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DAMAGED = "build or download it again"
_UNREADABLE = (zipfile.BadZipFile, tarfile.TarError, zlib.error, lzma.LZMAError, EOFError, OSError,
               NotImplementedError, RuntimeError, ValueError)

IfExists = Literal["error", "keep", "replace"]


class ArchiveError(InputError):
    """An archive is unreadable or holds a member xcompat refuses to read or unpack."""


def show(name: str) -> str:
    """A member name for a one-line message: quoted (control characters escaped) and capped."""
    if len(name) > _SHOWN_NAME_CHARS:
        return repr(name[:_SHOWN_NAME_CHARS]) + "..."
    return repr(name)


def _refuse(archive: str | Path, name: str, why: str, *, what: str) -> ArchiveError:
    return ArchiveError(f"refusing member {show(name)}: it {why}", file=archive,
                        hint=f"this {what} cannot be trusted: {_DAMAGED} from its source")


def member_parts(archive: str | Path, name: str, *, what: str = "archive") -> tuple[str, ...]:
    """The path parts of member ``name``, or ``ArchiveError`` when the name is not a plain
    relative path inside the archive."""
    if not name or _CONTROL.search(name):
        raise _refuse(archive, name, "has an invalid name (empty, or a NUL or control character in it)", what=what)
    if name.startswith("/") or _DRIVE.match(name):
        raise _refuse(archive, name, f"points outside the {what}; a member is a relative path", what=what)
    if "\\" in name:
        raise _refuse(archive, name, "has a backslash in its name; member paths are separated by /", what=what)
    raw = name.split("/")
    if ".." in raw:
        raise _refuse(archive, name, f"points outside the {what}; a member is a relative path", what=what)
    parts = tuple(p for p in raw if p not in ("", "."))
    if not parts:
        raise _refuse(archive, name, "has an invalid name (no path in it)", what=what)
    return parts


def _check_size(archive: str | Path, name: str, declared: int, packed: int | None, total: int, *, what: str) -> None:
    lim = _limits.LIMITS
    if declared < 0:
        raise _refuse(archive, name, "declares a negative size", what=what)
    if declared > lim.wheel_member_bytes:
        raise _refuse(archive, name, f"inflates to {declared} bytes, over the limit of {lim.wheel_member_bytes}",
                      what=what)
    if packed is not None and declared > _RATIO_FLOOR and declared > lim.wheel_compression_ratio * max(packed, 1):
        raise _refuse(archive, name, f"inflates {declared // max(packed, 1)} times (a zip bomb?); refused", what=what)
    if total > lim.wheel_total_bytes:
        raise ArchiveError(f"members inflate to more than {lim.wheel_total_bytes} bytes; refused", file=archive,
                           hint=f"this {what} cannot be trusted: {_DAMAGED} from its source")


def _too_many(archive: str | Path, count: int, *, what: str) -> ArchiveError:
    return ArchiveError(f"more than {_limits.LIMITS.wheel_members} members ({count} seen), over the limit",
                        file=archive, hint=f"this {what} cannot be trusted: {_DAMAGED} from its source")


# -- zip ------------------------------------------------------------------------------------


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
        raise _too_many(archive, len(infos), what=what)
    checked = []
    total = 0
    for info in infos:
        # zipfile cuts a name at its first NUL; the name as stored is checked.
        name = info.orig_filename if "\0" in info.orig_filename else info.filename
        parts = member_parts(archive, name, what=what)
        kind = _zip_type(info)
        if kind == "link":
            raise _refuse(archive, name, f"is a symbolic link, which no {what} may hold", what=what)
        if kind == "special":
            raise _refuse(archive, name, "is a device, FIFO or socket, not a file", what=what)
        if info.flag_bits & 0x1:
            raise _refuse(archive, name, "is encrypted", what=what)
        total += info.file_size
        _check_size(archive, name, info.file_size, info.compress_size, total, what=what)
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
    except _UNREADABLE as exc:
        raise ArchiveError(f"not a readable {what} ({exc}); {_DAMAGED}", file=archive) from None


def read_member(archive: str | Path, zf: zipfile.ZipFile, name: str | zipfile.ZipInfo, *, limit: int,
                what: str = "archive") -> bytes:
    """The bytes of one zip member, at most ``limit`` of them (``ArchiveError`` past it)."""
    info = name if isinstance(name, zipfile.ZipInfo) else zf.getinfo(name)
    if info.file_size > limit:
        raise _refuse(archive, info.filename, f"is {info.file_size} bytes, over the limit of {limit} for it",
                      what=what)
    try:
        with zf.open(info) as src:
            data = src.read(limit + 1)
    except _UNREADABLE as exc:
        raise _refuse(archive, info.filename, f"cannot be read ({exc})", what=what) from None
    if len(data) > limit:
        raise _refuse(archive, info.filename, f"inflates past the limit of {limit} bytes for it", what=what)
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

        def fill(writer: _Writer) -> None:
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
                except _UNREADABLE as exc:
                    raise _refuse(archive, info.filename, f"cannot be read ({exc})", what=what) from None
                names.append("/".join(parts))

        _unpack(archive, dest, fill, what=what, if_exists=if_exists)
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


# -- tar ------------------------------------------------------------------------------------


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
        hint = f"this {self.what} cannot be trusted: {_DAMAGED} from its source"
        if self.seen > self.total:
            raise ArchiveError(f"unpacks to more than {self.total} bytes; refused", file=self.label, hint=hint)
        ratio = _limits.LIMITS.wheel_compression_ratio
        if self.raw is not self.inner and self.seen > _RATIO_FLOOR and self.seen > ratio * max(self.raw.tell(), 1):
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
        except _UNREADABLE as exc:
            raise ArchiveError(f"not a readable {what} ({exc}); {_DAMAGED}", file=source) from None
        stream = _TarStream(inner, raw, label=source, what=what, total=total)

        def fill(writer: _Writer | None) -> None:
            pending: list[tuple[tuple[str, ...], str, tuple[str, ...]]] = []
            try:
                stream.header_budget = _TAR_HEADER_BYTES  # opening reads the first header
                with tarfile.open(fileobj=stream, mode="r|") as tar:  # type: ignore[call-overload]
                    _tar_members(tar, stream, writer, names, pending, source=source, what=what, links=links)
            except _UNREADABLE as exc:
                raise ArchiveError(f"not a readable {what} ({exc}); {_DAMAGED}", file=source) from None
            if pending and writer is not None:
                writer.copies(pending)
            names.extend("/".join(parts) for parts, _name, _target in pending)

        if dest is None:
            fill(None)
        else:
            _unpack(source, dest, fill, what=what, if_exists=if_exists, total=total)
    return names


def _tar_members(tar: tarfile.TarFile, stream: _TarStream, writer: _Writer | None, names: list[str],
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
            raise _too_many(source, count, what=what)
        name = member.name
        parts = member_parts(source, name, what=what)
        declared += max(member.size, 0)
        _check_size(source, name, member.size, None, declared, what=what)
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
            raise _refuse(source, name, f"is a symbolic link (to {show(member.linkname)}), which no {what} may hold",
                          what=what)
        elif member.islnk():
            raise _refuse(source, name, f"is a hard link (to {show(member.linkname)}), which no {what} may hold",
                          what=what)
        else:
            raise _refuse(source, name, "is a device, FIFO or other special file, not a file", what=what)
        names.append("/".join(parts))


def _link_target(source: str | Path, parts: tuple[str, ...], name: str, linkname: str, *, what: str
                 ) -> tuple[str, ...]:
    """The in-tree path an in-tree symlink names, or ``ArchiveError``."""
    if not linkname or _CONTROL.search(linkname) or "\\" in linkname or linkname.startswith("/") \
            or _DRIVE.match(linkname):
        raise _refuse(source, name, f"is a link to {show(linkname)}, outside the {what}", what=what)
    resolved: list[str] = list(parts[:-1])
    for part in linkname.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not resolved:
                raise _refuse(source, name, f"is a link to {show(linkname)}, outside the {what}", what=what)
            resolved.pop()
        else:
            resolved.append(part)
    target = tuple(resolved)
    if not target or parts[: len(target)] == target:
        raise _refuse(source, name, f"is a link to {show(linkname)}, a folder holding the link itself", what=what)
    return target


# -- writing --------------------------------------------------------------------------------


class _Writer:
    """Writes checked members under ``root`` (the fresh folder beside the destination),
    counting every byte written against the member's declared size and the archive's total."""

    def __init__(self, archive: str | Path, root: Path, *, what: str, total: int) -> None:
        self.archive = archive
        self.root = root
        self.real_root = os.path.realpath(root)
        self.what = what
        self.total = total
        self.written = 0

    def _inside(self, folder: Path, name: str) -> None:
        real = os.path.realpath(folder)
        if real != self.real_root and not real.startswith(self.real_root + os.sep):
            raise _refuse(self.archive, name, f"resolves outside the folder the {self.what} is unpacked into",
                          what=self.what)

    def _failed(self, name: str, exc: OSError) -> ArchiveError:
        if exc.errno in (errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
            return _refuse(self.archive, name, "collides with another member of the same name", what=self.what)
        return ArchiveError(f"member {show(name)} cannot be written ({exc.strerror or exc})", file=self.archive,
                            hint="check the free space and permissions of the cache or output folder")

    def folder(self, parts: tuple[str, ...], name: str) -> None:
        target = self.root.joinpath(*parts)
        try:
            target.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._failed(name, exc) from None
        self._inside(target, name)

    def file(self, parts: tuple[str, ...], name: str, src: IO[bytes] | None, *, declared: int,
             executable: bool) -> None:
        parent = self.root.joinpath(*parts[:-1])
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._failed(name, exc) from None
        self._inside(parent, name)
        member_limit = min(declared, _limits.LIMITS.wheel_member_bytes)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(parent / parts[-1], flags, 0o755 if executable else 0o644)
        except OSError as exc:
            raise self._failed(name, exc) from None
        with os.fdopen(fd, "wb") as dst:
            size = 0
            while src is not None:
                block = src.read(COPY_BLOCK)
                if not block:
                    break
                size += len(block)
                self.written += len(block)
                # The reader stops at the declared size; counting here holds whatever reads the member.
                if size > member_limit:
                    raise _refuse(self.archive, name, f"inflates past its declared size of {declared} bytes",
                                  what=self.what)
                if self.written > self.total:
                    raise ArchiveError(f"members inflate to more than {self.total} bytes; refused", file=self.archive,
                                       hint=f"this {self.what} cannot be trusted: {_DAMAGED} from its source")
                try:
                    dst.write(block)
                except OSError as exc:
                    raise self._failed(name, exc) from None

    def copies(self, pending: list[tuple[tuple[str, ...], str, tuple[str, ...]]]) -> None:
        """Write each in-tree link as a copy of what it names; a link naming another link is
        written once that one is, so the order of members does not matter."""
        while pending:
            left = []
            for parts, name, target in pending:
                source = self.root.joinpath(*target)
                if not (source.is_file() or source.is_dir()):
                    left.append((parts, name, target))
                    continue
                self._inside(source.parent, name)
                if source.is_file():
                    with open(source, "rb") as src:
                        self.file(parts, name, src, declared=source.stat().st_size,
                                  executable=bool(source.stat().st_mode & 0o111))
                    continue
                for folder, _dirs, files in os.walk(source):
                    rel = Path(folder).relative_to(source).parts
                    self.folder(parts + rel, name)
                    for file in sorted(files):
                        with open(Path(folder) / file, "rb") as src:
                            size = os.fstat(src.fileno()).st_size
                            self.file(parts + rel + (file,), name, src, declared=size, executable=False)
            if len(left) == len(pending):
                parts, name, target = left[0]
                raise _refuse(self.archive, name, f"is a link to {show('/'.join(target))}, which the {self.what} "
                              "does not hold", what=self.what)
            pending = left


def _unpack(archive: str | Path, dest: Path, fill: Callable[[_Writer], None], *, what: str, if_exists: IfExists,
            total: int | None = None) -> Path:
    """Run ``fill`` on a fresh folder beside ``dest`` and rename that folder into place; on any
    failure the fresh folder is removed and ``dest`` is left as it was."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent))
    try:
        fill(_Writer(archive, fresh, what=what, total=total or _limits.LIMITS.wheel_total_bytes))
        _install(fresh, dest, if_exists)
    except BaseException:
        shutil.rmtree(fresh, ignore_errors=True)
        raise
    return dest


def _install(fresh: Path, dest: Path, if_exists: IfExists) -> None:
    try:
        os.rename(fresh, dest)  # replaces an empty folder too
        return
    except OSError as exc:
        if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
            raise
    if if_exists == "keep":  # another process unpacked the same content first
        shutil.rmtree(fresh, ignore_errors=True)
        return
    if if_exists == "error":
        raise FileExistsError(errno.EEXIST, "folder exists and is not empty", str(dest))
    old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".old", dir=dest.parent))
    os.rename(dest, old / "x")
    os.rename(fresh, dest)
    shutil.rmtree(old, ignore_errors=True)
