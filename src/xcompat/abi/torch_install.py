"""A torch installation's shared libraries, for resolving an extension's imports against them
(:mod:`xcompat.abi.links`): from a site-packages folder, a ``torch`` package folder or a torch
wheel (its ``torch/lib`` unpacked once into the cache), plus the libraries in the folders the
RPATH/RUNPATH of torch's own libraries name (the nvidia / rocm wheels)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from xcompat.abi.elf import ElfError, read_elf


class LinkInputError(ValueError):
    pass


@dataclass
class TorchInstall:
    label: str
    version: str | None
    variant: str
    libs: dict[str, Path]  # file name -> path, torch/lib first, then RPATH folders
    unchecked: list[str] = field(default_factory=list)


def _cache_root() -> Path:
    import os

    base = os.environ.get("XCOMPAT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "xcompat"
    )
    return Path(base)


def _torch_member(name: str) -> bool:
    return name.startswith("torch/lib/") or name == "torch/version.py"


def _extract_torch_wheel(wheel: Path) -> Path:
    """``torch/lib`` and ``torch/version.py`` of a torch wheel, unpacked once per wheel content.

    The wheel goes through the member checks of :mod:`xcompat.archives` (a member named
    ``torch/lib/../../x`` is refused, nothing is written), and the cache folder is named by
    the sha256 of its bytes: a crafted wheel with the same name and size as a real one is
    never served in its place.
    """
    from xcompat.archives import extract_zip_cached

    dest = extract_zip_cached(wheel, _cache_root() / "torch-libs", what="wheel", select=_torch_member)
    if not (dest / "torch" / "lib").is_dir():
        raise LinkInputError(f"{wheel}: has no torch/lib folder; is it a torch wheel?")
    return dest / "torch"


def locate_torch(spec: str | Path) -> TorchInstall:
    path = Path(spec)
    if not path.exists():
        raise LinkInputError(f"{path}: no such torch installation (give site-packages, a torch folder or a torch wheel)")
    torch_dir = _torch_dir(path)
    lib_dir = torch_dir / "lib"
    libs = _shared_libraries(lib_dir)
    names = set(libs)
    variant = "cuda" if any(n.startswith(("libc10_cuda", "libtorch_cuda")) for n in names) else (
        "rocm" if any(n.startswith(("libc10_hip", "libtorch_hip")) for n in names) else "cpu")
    inst = TorchInstall(label=str(path), version=_torch_version(torch_dir), variant=variant, libs=libs)
    # Follow RPATH/RUNPATH of torch's own libraries to the nvidia / rocm wheels.
    extra_dirs, missing_dirs = _rpath_folders(list(libs.values()), lib_dir)
    for d in extra_dirs:
        for name, f in _shared_libraries(d).items():
            libs.setdefault(name, f)
    if missing_dirs:
        inst.unchecked.append(
            f"{len(missing_dirs)} RPATH folder(s) of torch's libraries are absent here "
            f"({', '.join(sorted(missing_dirs)[:3])}{'...' if len(missing_dirs) > 3 else ''}); "
            "symbols versioned by those libraries were skipped"
        )
    return inst


def _torch_dir(path: Path) -> Path:
    """The ``torch`` package folder of a torch wheel, a site-packages folder or itself."""
    if path.is_file() and path.suffix == ".whl":
        return _extract_torch_wheel(path)
    if (path / "torch" / "lib").is_dir():
        return path / "torch"
    if (path / "lib").is_dir() and (path / "__init__.py").exists():
        return path
    raise LinkInputError(f"{path}: no torch/lib folder found; give site-packages, a torch folder or a torch wheel")


def _torch_version(torch_dir: Path) -> str | None:
    vfile = torch_dir / "version.py"
    if not vfile.exists():
        return None
    m = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", vfile.read_text(encoding="utf-8", errors="replace"), re.MULTILINE)
    return m.group(1) if m else None


def _shared_libraries(folder: Path) -> dict[str, Path]:
    """The shared libraries (``*.so*``) of ``folder``, by file name, in name order."""
    return {f.name: f for f in sorted(folder.iterdir()) if ".so" in f.name and f.is_file()}


def _rpath_folders(libs: list[Path], lib_dir: Path) -> tuple[list[Path], set[str]]:
    """(the folders the $ORIGIN-relative RPATH/RUNPATH entries of ``libs`` name that exist here,
    in the order first named; the entries naming absent folders)."""
    extra_dirs: list[Path] = []
    missing_dirs: set[str] = set()
    for f in libs:
        try:
            info = read_elf(f, symbols=False, want_fatbin=False)
        except ElfError:
            continue
        for entry in info.rpath + info.runpath:
            if "$ORIGIN" not in entry and "${ORIGIN}" not in entry:
                continue
            d = Path(entry.replace("${ORIGIN}", str(lib_dir)).replace("$ORIGIN", str(lib_dir)))
            d = Path(*d.parts).resolve() if d.exists() else d
            if d.is_dir():
                if d not in extra_dirs and d != lib_dir.resolve():
                    extra_dirs.append(d)
            elif entry not in ("$ORIGIN",):
                missing_dirs.add(entry)
    return extra_dirs, missing_dirs
