"""What the coverage stage measures of a project, and coverage.py's configuration for it.

``setup.py``/``pyproject.toml``) and its C/C++/Cython sources; test files (``tests``/``test``
folders, ``test_*.py``, ``*_test.py``, ``conftest.py`` and what ``tests.pytest`` names) are
left out.

"""

from __future__ import annotations

import glob
import importlib.util
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

INSTALL_HINT = "pip install 'xcompat[coverage]'"
_SKIP_DIRS = {"__pycache__", "build", "dist", ".pytest_cache", ".xcompat-out", ".git", ".tox", ".nox", ".venv",
              "venv", "node_modules"}
_SKIP_SUFFIXES = {".so", ".pyd", ".o", ".gcda", ".gcno"}
_NATIVE_SUFFIXES = {".c", ".cc", ".cpp", ".cxx", ".C", ".pyx", ".cu"}
# Folders of tests inside a package, and the names pytest's default discovery gives test files.
TEST_FOLDERS = frozenset({"tests", "test"})


def _project_files(project: Path) -> Iterable[tuple[Path, Path]]:
    """(path, relative path) of the project's own files: no build output, caches or VCS data.

    Folder links are followed (the copy the build works in follows them too: a project may
    share its C sources with another through one), each real folder once."""
    seen: set[str] = set()
    found: list[tuple[Path, Path]] = []
    for folder, dirs, files in os.walk(project, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in files:
            path = Path(folder, name)
            if path.suffix not in _SKIP_SUFFIXES and path.is_file():
                found.append((path, path.relative_to(project)))
    return sorted(found, key=lambda item: item[1])


@dataclass(frozen=True, kw_only=True)
class Layout:
    """Where a project's importable code is, and what of it is measured."""

    root: str  # the folder its packages are imported from: "" (flat) or "src"
    packages: tuple[str, ...]  # import names of the packages measured
    modules: tuple[str, ...]  # top-level modules measured (src layout only)
    native: bool  # C, C++, Cython or CUDA sources to build with --coverage

    @property
    def python(self) -> tuple[str, ...]:
        return self.packages + self.modules


def project_layout(project: Path) -> Layout:
    """The src layout when ``src/`` holds a package or module, else the flat layout; tests
    folders are never packages to measure (tests inside a package are left out by file)."""
    native = any(rel.suffix in _NATIVE_SUFFIXES for _, rel in _project_files(project))
    src = project / "src"
    src_packages = _packages(src)
    src_modules = sorted(p.stem for p in src.glob("*.py") if not _is_test_file(p)) if src.is_dir() else []
    if src_packages or src_modules:
        return Layout(root="src", packages=tuple(src_packages), modules=tuple(src_modules), native=native)
    return Layout(root="", packages=tuple(_packages(project)), modules=(), native=native)


def _packages(folder: Path) -> list[str]:
    if not folder.is_dir():
        return []
    return sorted(p.parent.name for p in folder.glob("*/__init__.py")
                  if p.parent.name not in TEST_FOLDERS and p.parent.name.isidentifier())


def _is_test_file(path: Path) -> bool:
    name = path.name
    return name == "conftest.py" or (name.startswith("test_") and name.endswith(".py")) or name.endswith("_test.py")


def omitted_test_files(import_root: Path, layout: Layout, extra: Iterable[Path] = ()) -> list[Path]:
    """The Python files under the measured packages that are tests, and those under ``extra``
    (what ``tests.pytest`` names)."""
    out: set[Path] = set()
    for package in layout.packages:
        for path in (import_root / package).rglob("*.py"):
            rel = path.relative_to(import_root / package)
            if set(rel.parts[:-1]) & TEST_FOLDERS or _is_test_file(path):
                out.add(path)
    for target in extra:
        if target.is_dir():
            out.update(target.rglob("*.py"))
        elif target.suffix == ".py":
            out.add(target)
    return sorted(out)


def coverage_rc(path: Path, *, data_file: Path, layout: Layout, omit: Iterable[Path]) -> Path:
    """coverage.py's configuration for the run: parallel data files (every test process writes
    its own), the project's packages by import name, its test files left out by exact path."""
    lines = ["[run]", "parallel = true", f"data_file = {data_file}", "source_pkgs ="]
    lines += [f"    {name}" for name in layout.python]
    lines += ["omit ="]
    # Exact paths (glob characters escaped): a pattern such as */tests/* would also match a
    # checkout that happens to live under a folder named tests.
    lines += [f"    {glob.escape(str(p))}" for p in omit]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def missing_tools(layout: Layout) -> list[str]:
    """The coverage tools this project needs that this Python lacks."""
    missing = []
    if layout.python and importlib.util.find_spec("coverage") is None:
        missing.append("coverage.py")
    if layout.native and shutil.which("gcovr") is None and importlib.util.find_spec("gcovr") is None:
        missing.append("gcovr")
    return missing
