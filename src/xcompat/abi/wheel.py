"""Read the native libraries and packaging metadata of a wheel without unpacking it whole.

Each native member is streamed (``shutil.copyfileobj`` in 1 MiB blocks) into one reusable
temporary file and memory-mapped; only the mapped pages a reader touches are resident, so
reading the 183 MB torch CPU wheel (about 900 MB of ELF inside) needs tens of megabytes of
memory instead of the size of its largest member.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from xcompat.abi.binary import LibraryInterface
from xcompat.abi.elf import ELF_MAGIC, ElfError, read_elf
from xcompat.abi.macho import MachOError, is_macho, read_macho
from xcompat.abi.noise import unhashed_name

COPY_BLOCK = 1 << 20

_NATIVE_SUFFIX = re.compile(r"(\.so(\.[0-9]+)*|\.dylib|\.pyd)$")


class WheelError(ValueError):
    """A wheel is not a readable zip or lacks its metadata."""


def pairing_key(member: str) -> str:
    """A library's path inside the wheel with auditwheel's content hash taken out of its name."""
    head, _, base = member.rpartition("/")
    return f"{head}/{unhashed_name(base)}" if head else unhashed_name(base)


@dataclass(frozen=True, kw_only=True)
class WheelMetadata:
    name: str
    version: str
    tags: tuple[str, ...]
    requires_python: str | None
    requires_dist: tuple[str, ...]
    root_is_purelib: bool = True


def parse_wheel_filename(filename: str) -> tuple[str, str, tuple[str, ...]]:
    from packaging.utils import InvalidWheelFilename
    from packaging.utils import parse_wheel_filename as parse

    try:
        name, version, _build, tags = parse(filename)
    except InvalidWheelFilename as exc:
        raise WheelError(f"{filename}: not a valid wheel file name ({exc})") from None
    return str(name), str(version), tuple(sorted(str(t) for t in tags))


def _read_small(zf: zipfile.ZipFile, filename: str, member: str) -> bytes:
    """A metadata member, bounded (``LIMITS.wheel_metadata_bytes``): a METADATA that inflates
    to gigabytes is refused, not read into memory."""
    from xcompat.archives import ArchiveError, read_member
    from xcompat.limits import LIMITS

    try:
        return read_member(filename, zf, member, limit=LIMITS.wheel_metadata_bytes, what="wheel")
    except ArchiveError as exc:
        raise WheelError(str(exc)) from None


def read_metadata(zf: zipfile.ZipFile, filename: str) -> WheelMetadata:
    name, version, tags = parse_wheel_filename(filename)
    dist_info = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
    if not dist_info:
        raise WheelError(f"{filename}: no *.dist-info/METADATA member; not a wheel (rebuild it with a PEP 517 backend)")
    import email.parser

    parser = email.parser.BytesParser()
    meta = parser.parsebytes(_read_small(zf, filename, dist_info[0]), headersonly=True)
    wheel_member = dist_info[0].rsplit("/", 1)[0] + "/WHEEL"
    purelib = True
    if wheel_member in zf.namelist():
        wheel_meta = parser.parsebytes(_read_small(zf, filename, wheel_member), headersonly=True)
        purelib = str(wheel_meta.get("Root-Is-Purelib", "true")).strip().lower() == "true"
        file_tags = wheel_meta.get_all("Tag") or []
        if file_tags:
            from packaging.tags import parse_tag

            tags = tuple(sorted({str(t) for tag in file_tags for t in parse_tag(str(tag).strip())}))
    return WheelMetadata(
        name=str(meta.get("Name", name)),
        version=str(meta.get("Version", version)),
        tags=tags,
        requires_python=str(meta["Requires-Python"]).strip() if meta.get("Requires-Python") else None,
        requires_dist=tuple(str(r).strip() for r in (meta.get_all("Requires-Dist") or [])),
        root_is_purelib=purelib,
    )


def check_members(path: Path, zf: zipfile.ZipFile) -> None:
    """Refuse a wheel holding a member it must not have, before any of it is read (``WheelError``,
    exit 2): the member rules of :mod:`xcompat.archives` (``../x``, ``/x``, links, zip bombs,
    too many or too large members)."""
    from xcompat.archives import ArchiveError, check_zip

    try:
        check_zip(path, zf, what="wheel")
    except ArchiveError as exc:
        raise WheelError(str(exc)) from None


def is_native_member(member: str) -> bool:
    return bool(_NATIVE_SUFFIX.search(member)) and not member.endswith("/")


@dataclass
class WheelContents:
    metadata: WheelMetadata
    libraries: dict[str, LibraryInterface] = field(default_factory=dict)
    python_files: int = 0
    unchecked: list[str] = field(default_factory=list)


class _Scratch:
    """One reusable scratch file for wheel members: an anonymous in-memory file (memfd) on
    Linux, so inflated members never go to disk; a temporary file elsewhere."""

    def __enter__(self) -> _Scratch:  # noqa: PYI034 - private helper, never subclassed
        self._tmp = None
        if hasattr(os, "memfd_create"):
            self.fd = os.memfd_create("xcompat-abi-member", getattr(os, "MFD_CLOEXEC", 0))
            self.path = f"/proc/self/fd/{self.fd}"
            if not os.path.exists(self.path):  # no /proc: fall back to a file
                os.close(self.fd)
                self.fd = -1
        else:
            self.fd = -1
        if self.fd < 0:
            self._tmp = tempfile.TemporaryDirectory(prefix="xcompat-abi-")
            self.path = os.path.join(self._tmp.name, "member")
        return self

    def fill(self, head: bytes, src: IO[bytes]) -> None:
        if self.fd >= 0:
            # Overwrite in place and cut the tail afterwards: pages of the previous member are
            # reused instead of being freed and zeroed again.
            os.lseek(self.fd, 0, os.SEEK_SET)
            with open(self.fd, "wb", closefd=False) as dst:
                dst.write(head)
                shutil.copyfileobj(src, dst, COPY_BLOCK)
                dst.flush()
                os.ftruncate(self.fd, dst.tell())
        else:
            with open(self.path, "wb") as dst:
                dst.write(head)
                shutil.copyfileobj(src, dst, COPY_BLOCK)

    def __exit__(self, *exc: object) -> None:
        if self.fd >= 0:
            os.close(self.fd)
        if self._tmp is not None:
            self._tmp.cleanup()


def iter_native_members(
    path: Path, *, want_fatbin: bool = True, zf: zipfile.ZipFile | None = None
) -> Iterator[tuple[str, LibraryInterface]]:
    """Yield (member name, interface) for every ELF / Mach-O library in the wheel at ``path``
    (``zf``: the wheel already open; its central directory of 24,000 entries in torch's case
    is then not parsed twice)."""
    if zf is None:
        zf = open_wheel(path)
    with zf, _Scratch() as scratch:
        check_members(path, zf)
        for info in zf.infolist():
            if not is_native_member(info.filename):
                continue
            try:
                with zf.open(info) as src:
                    head = src.read(8)
                    if head[:4] != ELF_MAGIC and not is_macho(head):
                        continue
                    scratch.fill(head, src)
            except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError) as exc:
                raise WheelError(f"{path}: member {info.filename!r} cannot be read ({exc}); "
                                 "the wheel is damaged: download or build it again") from None
            display = f"{path.name}!{info.filename}"
            try:
                if head[:4] == ELF_MAGIC:
                    yield info.filename, read_elf(scratch.path, display_name=display, want_fatbin=want_fatbin)
                else:
                    for slice_ in read_macho(scratch.path, display_name=display):
                        yield f"{info.filename}[{slice_.arch}]" if slice_.path.endswith("]") else info.filename, slice_
            except (ElfError, MachOError) as exc:
                raise WheelError(str(exc)) from None


def open_wheel(path: Path) -> zipfile.ZipFile:
    """The wheel at ``path`` opened as a zip; only a regular file is opened (a FIFO would block)."""
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise WheelError(f"{path}: not a regular file (a FIFO or a device); give a .whl file")
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        if isinstance(exc, WheelError):
            raise
        raise WheelError(f"{path}: not a readable wheel ({exc}); download or build it again") from None


def read_wheel(path: Path, *, want_fatbin: bool = True) -> WheelContents:
    zf = open_wheel(path)
    try:
        check_members(path, zf)
        metadata = read_metadata(zf, path.name)
        names = zf.namelist()
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError) as exc:
        zf.close()
        raise WheelError(f"{path}: cannot be read ({exc}); the wheel is damaged: download or build it again") from None
    except BaseException:
        zf.close()
        raise
    contents = WheelContents(metadata=metadata, python_files=sum(1 for n in names if n.endswith((".py", ".pyi"))))
    windows = [n for n in names if n.lower().endswith((".pyd", ".dll"))]
    if windows:
        contents.unchecked.append(f"{path.name}: {len(windows)} Windows DLL(s) not read (PE is not supported)")
    for member, lib in iter_native_members(path, want_fatbin=want_fatbin, zf=zf):  # closes zf
        contents.libraries[pairing_key(member)] = lib
    return contents


def extract_python_tree(path: Path, dest: Path) -> list[str]:
    """Unpack the importable part of a wheel (packages, modules, extension modules, ``*.libs``)
    into ``dest`` (a folder that is absent or empty), through the member checks of
    :mod:`xcompat.archives`.

    Returns the top-level importable names. ``*.data`` and ``*.dist-info`` are left out
    except the dist-info itself, which ``importlib.metadata`` needs.
    """
    from xcompat.archives import ArchiveError, extract_zip

    try:
        names = extract_zip(path, dest, what="wheel", select=lambda name: not name.split("/", 1)[0].endswith(".data"))
    except ArchiveError as exc:
        raise WheelError(str(exc)) from None
    tops: set[str] = set()
    for name in names:
        top = name.split("/", 1)[0]
        if top.endswith((".dist-info", ".libs")):
            continue
        if "/" in name:
            tops.add(top)
        elif name.endswith(".py"):
            tops.add(name[:-3])
        elif _NATIVE_SUFFIX.search(name):
            tops.add(name.split(".", 1)[0])
    return sorted(tops)
