"""Unpacking into place: checked members are written under a fresh folder beside the
destination, every byte counted, and the folder is renamed into place only when all were."""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Literal

from xcompat import limits as _limits
from xcompat.archives.members import COPY_BLOCK, DAMAGED, ArchiveError, refuse, show

IfExists = Literal["error", "keep", "replace"]


class Writer:
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
            raise refuse(self.archive, name, f"resolves outside the folder the {self.what} is unpacked into",
                          what=self.what)

    def _failed(self, name: str, exc: OSError) -> ArchiveError:
        if exc.errno in (errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
            return refuse(self.archive, name, "collides with another member of the same name", what=self.what)
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
                    raise refuse(self.archive, name, f"inflates past its declared size of {declared} bytes",
                                  what=self.what)
                if self.written > self.total:
                    raise ArchiveError(f"members inflate to more than {self.total} bytes; refused", file=self.archive,
                                       hint=f"this {self.what} cannot be trusted: {DAMAGED} from its source")
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
                raise refuse(self.archive, name, f"is a link to {show('/'.join(target))}, which the {self.what} "
                              "does not hold", what=self.what)
            pending = left


def unpack(archive: str | Path, dest: Path, fill: Callable[[Writer], None], *, what: str, if_exists: IfExists,
            total: int | None = None) -> Path:
    """Run ``fill`` on a fresh folder beside ``dest`` and rename that folder into place; on any
    failure the fresh folder is removed and ``dest`` is left as it was."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent))
    try:
        fill(Writer(archive, fresh, what=what, total=total or _limits.LIMITS.wheel_total_bytes))
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
