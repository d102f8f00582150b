"""The project's own Python sources: what ships in its package, not its tests or tooling.

A folder is skipped when it is a test folder, documentation, examples or benchmarks, build
output (``build``, ``dist``, ``*.egg-info``), a virtual environment (it holds ``pyvenv.cfg``)
or an installed tree (``site-packages``), or hidden (``.git``, ``.tox``, ``.nox``). A file is
skipped when it is a test module (``test_*.py``, ``*_test.py``, ``conftest.py``) or the
project's build script (``setup.py``, which the build machine's Python runs, not the user's).
"""

from __future__ import annotations

import os
from pathlib import Path

from xcompat.errors import InputError

MAX_FILES = 20_000

_SKIPPED_DIRS = frozenset({
    "tests", "test", "testing", "docs", "doc", "examples", "example", "benchmarks", "bench",
    "build", "dist", "site-packages", "node_modules", "__pycache__", "venv", "env",
})
_SKIPPED_FILES = frozenset({"conftest.py", "setup.py", "noxfile.py", "fabfile.py"})


def _skip_dir(path: Path) -> bool:
    name = path.name
    return (name.startswith(".") or name in _SKIPPED_DIRS or name.endswith(".egg-info")
            or (path / "pyvenv.cfg").is_file())


def _skip_file(name: str) -> bool:
    return (not name.endswith(".py") or name in _SKIPPED_FILES or name.startswith("test_")
            or name.endswith("_test.py"))


def package_sources(root: Path) -> list[str]:
    """The ``.py`` files of ``root`` that the rules above keep, relative and ``/``-joined,
    sorted. Symbolic links to folders are not followed (they may point out of the project)."""
    if not root.is_dir():
        raise InputError("project folder not found", file=root)
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not _skip_dir(here / d))
        for name in sorted(filenames):
            if _skip_file(name) or not (here / name).is_file():
                continue
            found.append((here / name).relative_to(root).as_posix())
            if len(found) > MAX_FILES:
                raise InputError(f"more than {MAX_FILES} Python files; point at the project's own folder",
                                 file=root)
    return found
