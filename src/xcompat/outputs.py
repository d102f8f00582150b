"""Where xcompat writes: one output policy for every command.

Every option that names a file or folder xcompat writes is declared with one of the two
argparse types below (``OutputFile`` or ``OutputDir``), and every file is written through
``write_bytes``. Together they decide, in this one place, what happens to whatever the
path already points at:

==========================  =====================================================
the path is                 what xcompat does
==========================  =====================================================
missing                     missing parent folders are created; the file is
                            written atomically (temporary file in the same folder,
                            fsync, rename) with the mode the umask gives
a regular file              replaced atomically; its mode, and its owner and group
                            where the process may keep them, are kept
a symlink                   written through: the link stays, its target is
                            written by the rule for what the target is
a character device, FIFO    opened and written directly, never replaced
or socket                   (``-o /dev/null`` stays the device it was)
``-``                       standard output, for options that accept it
a folder, a block device,   one-line error naming the option, exit 2; nothing is
or below a non-folder       written
==========================  =====================================================

Folder outputs (``OutputDir``) accept a missing path or a folder, and refuse anything
else with the same one-line error.

A write that fails (disk full, file size limit, read-only folder) or is interrupted
(SIGINT) removes its temporary file and leaves the previous file untouched.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import re
import stat
import sys
from collections.abc import Callable
from pathlib import Path

from xcompat.errors import XcompatError

STDOUT = "-"


class OutputError(XcompatError):
    """An output path that cannot be written: exit 2, nothing written."""

    exit_code = 2


def _special_kind(mode: int) -> str | None:
    """The name of a file type written in place (device, FIFO, socket), else None."""
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    return None


def _stat(path: Path) -> os.stat_result | None:
    """``stat`` following symlinks; None when nothing (or a dangling link) is there."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _parent_problem(path: Path) -> str | None:
    """Why the folders above ``path`` cannot hold it, or None (missing folders are fine)."""
    for parent in path.absolute().parents:
        st = _stat(parent)
        if st is None:
            continue
        if not stat.S_ISDIR(st.st_mode):
            return f"{parent} is not a folder"
        return None
    return None


def file_target_problem(path: Path) -> str | None:
    """Why ``path`` cannot be written as a file, or None when it can."""
    st = _stat(path)
    if st is None:
        return _parent_problem(path)
    if stat.S_ISDIR(st.st_mode):
        return "is a folder; give a file path"
    if stat.S_ISBLK(st.st_mode):
        return "is a block device; xcompat does not write to block devices"
    return None


def dir_target_problem(path: Path) -> str | None:
    """Why ``path`` cannot be used as an output folder, or None when it can."""
    st = _stat(path)
    if st is None:
        if os.path.islink(path):
            return "is a dangling symlink; give a folder path"
        return _parent_problem(path)
    if not stat.S_ISDIR(st.st_mode):
        kind = _special_kind(st.st_mode) or ("regular file" if stat.S_ISREG(st.st_mode) else "special file")
        return f"is a {kind}, not a folder; give a folder path"
    return None


def _accepted(value: str, problem_of: Callable[[Path], str | None]) -> Path:
    """``value`` as a path when ``problem_of`` finds nothing wrong with it; else argparse's error."""
    path = Path(value)
    try:
        problem = problem_of(path)
    except OSError as exc:
        problem = f"cannot be reached ({exc.strerror})"
    if problem:
        raise argparse.ArgumentTypeError(f"{value}: {problem}")
    return path


class OutputFile:
    """argparse type of every option naming a file xcompat writes.

    ``stdout=True`` accepts ``-`` for standard output; commands whose standard output
    already carries their primary output declare ``stdout=False``.
    """

    def __init__(self, *, stdout: bool = True) -> None:
        self.stdout = stdout

    def __call__(self, value: str) -> Path:
        if value == STDOUT:
            if not self.stdout:
                raise argparse.ArgumentTypeError(
                    "'-' (standard output) is not accepted here: standard output already carries "
                    "this command's output; give a file path"
                )
            return Path(STDOUT)
        if not value:
            raise argparse.ArgumentTypeError("empty path; give a file path")
        return _accepted(value, file_target_problem)

    def __repr__(self) -> str:  # argparse shows the type's name in some messages
        return "output file"


class OutputDir:
    """argparse type of every option naming a folder xcompat writes into."""

    def __call__(self, value: str) -> Path:
        if not value or value == STDOUT:
            raise argparse.ArgumentTypeError(f"{value!r} is not a folder path")
        return _accepted(value, dir_target_problem)

    def __repr__(self) -> str:
        return "output folder"


def _umask() -> int:
    """The process umask, read without changing it where Linux allows (``/proc/self/status``)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    # Elsewhere the only portable read is set-and-restore (not thread-safe, hence last).
    old = os.umask(0o022)
    os.umask(old)
    return old


def _write_in_place(path: Path, data: bytes, kind: str) -> None:
    """Write to a device, FIFO or socket without replacing it."""
    if kind == "socket":
        import socket  # only for this rare case

        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(path))
            sock.sendall(data)
        return
    # O_APPEND is harmless on devices and FIFOs; no O_CREAT/O_TRUNC: the node must stay as it is.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0))
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    finally:
        os.close(fd)


def _create_temporary(folder: Path, name: str) -> tuple[int, str]:
    """A new file ``.NAME.RANDOM.tmp`` in ``folder``, created exclusively, mode 0600, links not
    followed: what ``tempfile.mkstemp`` does. Not imported for it: ``tempfile`` brings
    ``shutil``, ``random`` and ``weakref``, about 4 ms of every command's start-up."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(100):
        tmp = os.path.join(folder, f".{name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name", str(folder))


def _write_atomically(path: Path, data: bytes, existing: os.stat_result | None, mode: int | None) -> None:
    fd, tmp = _create_temporary(path.parent, path.name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if existing is not None:
            os.chmod(tmp, stat.S_IMODE(existing.st_mode))
            if hasattr(os, "chown") and (existing.st_uid, existing.st_gid) != (os.getuid(), os.getgid()):
                # Keep owner and group where this process may (root; or a group it is in).
                with contextlib.suppress(PermissionError):
                    os.chown(tmp, existing.st_uid, existing.st_gid)
        else:
            os.chmod(tmp, (0o666 if mode is None else mode) & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_bytes(path: str | Path, data: bytes, *, mode: int | None = None) -> Path:
    """Write ``data`` to ``path`` by the output policy of this module; return the path written.

    ``mode`` (before the umask) applies to new files only; a replaced file keeps its own.
    """
    if str(path) == STDOUT:
        out = sys.stdout.buffer
        out.write(data)
        out.flush()
        return Path(STDOUT)
    path = Path(path)
    try:
        target = Path(os.path.realpath(path)) if os.path.islink(path) else path
        st = _stat(target)
        kind = _special_kind(st.st_mode) if st is not None else None
        if kind is not None:
            _write_in_place(target, data, kind)
            return path
        problem = file_target_problem(target)
        if problem:
            raise OutputError(problem, file=path)
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_atomically(target, data, st, mode)
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        raise OutputError(f"cannot write ({reason}); the previous file, if any, is unchanged", file=path) from None
    return path


def write_text(path: str | Path, text: str) -> Path:
    """Write UTF-8 ``text`` by the output policy (see ``write_bytes``)."""
    return write_bytes(path, text.encode("utf-8"))


# A file name xcompat derives itself (a result's index and kind, a cell id): one path component,
# no separator, no "." or "..", nothing a shell or a forge would read specially.
_DERIVED_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=-]{0,199}")


def path_inside(folder: str | Path, name: str) -> Path:
    """``folder/name`` for a name xcompat derived, refused (``OutputError``) unless it is one plain
    component that stays inside ``folder`` once resolved (no separator, ``..`` or link out)."""
    folder = Path(folder)
    if not _DERIVED_NAME.fullmatch(name) or name in (".", ".."):
        raise OutputError(f"refused to write {name!r}: not a plain file name", file=folder)
    path = folder / name
    root = os.path.realpath(folder)
    if os.path.commonpath([root, os.path.realpath(path)]) != root:
        raise OutputError(f"refused to write {name!r}: it resolves outside the folder", file=folder)
    return path


def write_inside(folder: str | Path, name: str, data: bytes) -> Path:
    """Write ``data`` to ``folder/name`` (``path_inside`` checked) by the output policy."""
    return write_bytes(path_inside(folder, name), data)


# -- what a checkout committed into an output folder --------------------------------------


def remove_committed(folder: str | Path) -> list[Path]:
    """Remove every path git tracks under ``folder`` that is still as it was committed; return them.

    A pull request can commit files into the output folder (``.xcompat-out/plan.json``, results,
    a wheel) that a stage would then read as this run's own. A CI job downloads its artifacts
    into that folder before any stage runs, so the folder cannot simply be emptied: a tracked path
    whose content differs from the commit was written by a step of this job and stays; the rest
    is the checkout's and goes. ``folder`` itself is one of those paths when the commit holds it
    as a link. Nothing is removed outside a git work tree; the top of a work tree is refused.
    """
    import shutil
    import subprocess

    path = Path(os.path.abspath(folder))
    parent = path.parent
    if not parent.is_dir() or shutil.which("git") is None:
        return []

    def git(where: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["git", "-C", str(where), *args], capture_output=True, check=False,
                              env={**os.environ, "GIT_LITERAL_PATHSPECS": "1"})

    def toplevel(where: Path) -> Path | None:
        proc = git(where, "rev-parse", "--show-toplevel")
        return Path(os.fsdecode(proc.stdout.rstrip(b"\n"))) if proc.returncode == 0 else None

    if path.is_dir() and not path.is_symlink() and toplevel(path) == Path(os.path.realpath(path)):
        raise OutputError("the output folder is the top of a git work tree: give the output a folder of its own",
                          file=folder)
    root = toplevel(parent)
    if root is None:
        return []  # not a work tree: nothing was committed here
    tracked = git(parent, "ls-files", "-z", "--full-name", "--", path.name)
    # `git diff` compares contents: a copied checkout's stale stat data is not a change.
    changed = git(parent, "diff", "--name-only", "-z", "--no-renames", "--", path.name)
    for proc in (tracked, changed):
        if proc.returncode != 0:
            why = os.fsdecode(proc.stderr).strip().splitlines() or ["git failed"]
            raise OutputError(f"cannot tell what the checkout committed here: {why[-1]}", file=folder)
    kept = set(changed.stdout.split(b"\0"))
    real = Path(os.path.realpath(parent)) / path.name  # as git names the paths under it
    removed: list[Path] = []
    for name in tracked.stdout.split(b"\0"):
        if not name or name in kept:
            continue
        target = root / os.fsdecode(name)
        if target.is_dir() and not target.is_symlink():  # a submodule's folder
            shutil.rmtree(target)
        elif os.path.lexists(target):
            target.unlink()
        else:
            continue
        removed.append(target)
        # The folders the commit made for them go too, once empty (the output folder stays).
        folder_of = target.parent
        while real in folder_of.parents and not any(folder_of.iterdir()):
            folder_of.rmdir()
            folder_of = folder_of.parent
    return removed
