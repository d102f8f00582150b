"""Build a :class:`Manifest` from whatever the user points at."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from xcompat.abi.elf import ELF_MAGIC, ElfError, read_elf
from xcompat.abi.macho import MachOError, is_macho, read_macho
from xcompat.abi.manifest import Manifest, ManifestError, looks_like_snapshot, read_snapshot

Toggle = Literal["auto", "on", "off"]
# Above this many Python files, "auto" skips the Python API (griffe on torch takes minutes).
AUTO_PYTHON_FILES_LIMIT = 1500


class InputProblem(ValueError):
    """An input path cannot be read as a wheel, folder of wheels, library or snapshot."""


def _unreadable() -> tuple[type[Exception], ...]:
    # evaluated only when an exception reaches the handler: a library diff never imports
    # the wheel reader (zipfile and its compressors)
    from xcompat.abi.wheel import WheelError

    return (WheelError, ManifestError, ElfError, MachOError)


def load_manifest(path: str | Path, *, python_api: Toggle = "auto", torch_ops: Toggle = "auto") -> Manifest:
    path = Path(path)
    try:
        if not path.exists():
            raise InputProblem(f"{path}: no such file or folder")
        if not path.is_dir() and not path.is_file():  # a FIFO, a device (/dev/zero), a socket
            raise InputProblem(f"{path}: not a regular file or folder; give a wheel, a folder, a library or a snapshot")
        if path.is_dir():
            return _load_dir(path, python_api=python_api, torch_ops=torch_ops)
        if path.suffix == ".whl":
            return _load_wheel(path, python_api=python_api, torch_ops=torch_ops)
        if looks_like_snapshot(path):
            return read_snapshot(path)
        return _load_library(path)
    except _unreadable() as exc:
        raise InputProblem(str(exc)) from None
    except OSError as exc:  # e.g. a file removed from the folder while it was being read
        where = exc.filename or path
        raise InputProblem(f"{where}: cannot be read ({exc.strerror or exc}); did the folder change while it was read?") from None


def _load_library(path: Path) -> Manifest:
    with open(path, "rb") as fh:
        head = fh.read(8)
    if head[:4] == ELF_MAGIC:
        libs = {path.name: read_elf(path)}
    elif is_macho(head):
        slices = read_macho(path)
        libs = {path.name if len(slices) == 1 else f"{path.name}[{s.arch}]": s for s in slices}
    else:
        raise InputProblem(
            f"{path}: not a wheel, ABI snapshot, ELF or Mach-O file (starts with {head[:4]!r}); "
            "give a .whl, a folder of wheels, a shared library or a file written by 'xcompat abi snapshot'"
        )
    m = Manifest(source=str(path), kind="library", libraries=libs)
    for lib in libs.values():
        m.unchecked.extend(lib.unchecked)
    return m


def _load_wheel(path: Path, *, python_api: Toggle, torch_ops: Toggle, prefix: str = "") -> Manifest:
    from xcompat.abi.wheel import read_wheel

    contents = read_wheel(path)
    md = contents.metadata
    m = Manifest(
        source=str(path),
        kind="wheel",
        name=md.name,
        version=md.version,
        tags=md.tags,
        requires_python=md.requires_python,
        requires_dist=md.requires_dist,
        libraries={prefix + k: v for k, v in contents.libraries.items()},
    )
    m.unchecked.extend(contents.unchecked)
    for lib in contents.libraries.values():
        m.unchecked.extend(lib.unchecked)
    _add_python_surfaces(m, path, contents.python_files, python_api=python_api, torch_ops=torch_ops)
    return m


def _add_python_surfaces(m: Manifest, path: Path, python_files: int, *, python_api: Toggle, torch_ops: Toggle) -> None:
    import tempfile

    from xcompat.abi.pyapi import extract_python_api
    from xcompat.abi.torchops import extract_torch_ops, uses_torch
    from xcompat.abi.wheel import extract_python_tree

    want_api = python_api == "on" or (python_api == "auto" and python_files <= AUTO_PYTHON_FILES_LIMIT)
    if python_api == "auto" and not want_api:
        m.unchecked.append(
            f"Python API: {path.name} has {python_files} Python files; skipped (use --python-api on to force)"
        )
    want_ops = torch_ops == "on" or (torch_ops == "auto" and uses_torch(m.requires_dist, m.libraries) and want_api)
    if not (want_api or want_ops):
        return
    if not _installable_here(m.tags):
        m.unchecked.append(
            f"Python API and torch operators: {path.name} ({', '.join(m.tags[:2])}) cannot be imported by this "
            "interpreter; not compared (run on a matching runner)"
        )
        return
    from xcompat.abi.pyapi import cached_python_api

    with tempfile.TemporaryDirectory(prefix="xcompat-abi-py-") as tmp:
        root = Path(tmp)
        tops: list[str] | None = None

        def unpacked() -> list[str]:
            nonlocal tops
            if tops is None:
                tops = extract_python_tree(path, root)
            return tops

        if want_api:  # cached per wheel content: a hit needs no unpacking and no griffe
            m.python_api, problems = cached_python_api(path, lambda: extract_python_api(root, unpacked()))
            m.unchecked.extend(problems)
        if want_ops:
            m.torch_ops, problems = extract_torch_ops(root, unpacked())
            m.unchecked.extend(problems)


def _installable_here(tags: tuple[str, ...]) -> bool:
    from packaging.tags import sys_tags

    supported = {str(t) for t in sys_tags()}
    return not tags or any(t in supported for t in tags)


_ARCH = re.compile(r"^(?:manylinux_\d+_\d+|manylinux\d+|musllinux_\d+_\d+|macosx_\d+_\d+|win|linux)_(?P<arch>.+)$")


def _wheel_arch(filename: str) -> str:
    """``..._x86_64.whl`` -> ``x86_64``: libraries of a folder of wheels are keyed by
    architecture, so a raised glibc floor in the platform tag does not unpair them."""
    return platform_arch(filename[:-4].split("-")[-1])


def platform_arch(platform_tag: str) -> str:
    plat = platform_tag.split(".")[0]
    m = _ARCH.match(plat)
    return m.group("arch") if m else plat


def align_keys(a: Manifest, b: Manifest) -> None:
    """Give a single wheel's libraries the ``<arch>/`` prefix a folder of wheels uses, when
    one side is a folder and the other a wheel (or a snapshot of one)."""
    def folder(m: Manifest) -> bool:
        return m.kind == "wheels" or (m.kind == "snapshot" and m.origin_kind == "wheels")

    if not any(folder(m) for m in (a, b)):
        return
    sides = [m for m in (a, b) if not folder(m) and m.kind in ("wheel", "snapshot") and m.tags]
    for m in sides:
        if any("/" in k and k.split("/", 1)[0] in {platform_arch(t.split("-")[-1]) for t in m.tags} for k in m.libraries):
            continue  # already prefixed (a snapshot of a folder)
        arch = platform_arch(m.tags[0].split("-")[-1])
        m.libraries = {f"{arch}/{k}": v for k, v in m.libraries.items()}


def _load_dir(path: Path, *, python_api: Toggle, torch_ops: Toggle) -> Manifest:
    from xcompat.abi.wheel import is_native_member, read_wheel

    wheels = sorted(path.glob("*.whl"))
    if wheels:
        from packaging.tags import sys_tags

        supported = {str(t) for t in sys_tags()}
        merged = Manifest(source=str(path), kind="wheels")
        names = set()
        api_done = False
        for whl in wheels:
            contents = read_wheel(whl)
            md = contents.metadata
            names.add(md.name)
            merged.name, merged.version = md.name, md.version
            merged.requires_python = md.requires_python
            merged.requires_dist = md.requires_dist
            merged.tags = tuple(sorted(set(merged.tags) | set(md.tags)))
            arch = _wheel_arch(whl.name)
            for key, lib in contents.libraries.items():
                merged.libraries.setdefault(f"{arch}/{key}", lib)
                merged.unchecked.extend(lib.unchecked)
            if not api_done and any(t in supported for t in md.tags):
                api_done = True
                tmp = Manifest(source=str(whl), kind="wheel", name=md.name, version=md.version, tags=md.tags,
                               requires_dist=md.requires_dist, libraries=contents.libraries)
                _add_python_surfaces(tmp, whl, contents.python_files, python_api=python_api, torch_ops=torch_ops)
                merged.python_api, merged.torch_ops = tmp.python_api, tmp.torch_ops
                merged.python_api_wheel = str(whl)
                merged.unchecked.extend(tmp.unchecked)
        if len(names) > 1:
            raise InputProblem(f"{path}: holds wheels of several projects ({', '.join(sorted(names))}); give one project's wheels")
        if not api_done and python_api != "off":
            merged.unchecked.append("Python API: no wheel in the folder can be imported by this interpreter; not compared")
        return merged
    libs = {}
    for f in sorted(p for p in path.rglob("*") if p.is_file() and is_native_member(p.name)):
        with open(f, "rb") as fh:
            head = fh.read(8)
        if head[:4] == ELF_MAGIC:
            libs[str(f.relative_to(path))] = read_elf(f, display_name=str(f))
        elif is_macho(head):
            for s in read_macho(f):
                libs[str(f.relative_to(path)) + (f"[{s.arch}]" if s.path.endswith("]") else "")] = s
    if not libs:
        raise InputProblem(f"{path}: folder holds no wheels and no shared libraries")
    m = Manifest(source=str(path), kind="library", libraries=libs)
    for lib in libs.values():
        m.unchecked.extend(lib.unchecked)
    return m
