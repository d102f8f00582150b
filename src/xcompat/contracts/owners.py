"""Who owns a mapped file: the project's wheel, another installed distribution (by its
RECORD), the interpreter, the system's library folders, or nobody expected."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata

from xcompat.contracts.maps import is_shared_object

# The folders the dynamic loader searches by default, and where distributions put theirs.
SYSTEM_DIRS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/local/lib", "/usr/local/lib64",
               "/lib32", "/usr/libx32", "/usr/lib/wsl/lib")


@dataclass(frozen=True)
class Owner:
    kind: str  # project | distribution | interpreter | system | outside
    distribution: str | None = None


def _real(path: str) -> str:
    return os.path.realpath(path)


def _inside(path: str, root: str) -> bool:
    root = root.rstrip("/") or "/"
    return path == root or path.startswith(root + "/")


class OwnerIndex:
    """Shared objects of the distributions installed in ``sites`` (their RECORD files), and
    the interpreter's own folders ``interpreter``; ``project`` names the project's distribution."""

    def __init__(self, sites: Sequence[str], interpreter: Iterable[str], project: str | None = None) -> None:
        self.project = _normal(project) if project else None
        self.sites = [_real(s) for s in sites if os.path.isdir(s)]
        self.interpreter = [_real(p) for p in interpreter if p]
        self._files: dict[str, str] = {}
        for dist in metadata.distributions(path=list(self.sites)):
            name = dist.metadata["Name"] or "?"
            for file in dist.files or ():
                if is_shared_object(str(file)):
                    self._files[_real(str(dist.locate_file(file)))] = name

    def owner(self, path: str) -> Owner:
        real = _real(path)
        name = self._files.get(real) or self._files.get(path)
        if name is not None:
            return Owner("project" if _normal(name) == self.project else "distribution", name)
        installed = "/site-packages/" in real or "/dist-packages/" in real
        if not installed and any(_inside(real, p) for p in self.interpreter):
            return Owner("interpreter")  # the standard library's extensions, libpython
        if any(_inside(real, s) for s in self.sites):
            return Owner("distribution")  # in an installed tree, listed by no RECORD
        if any(_inside(real, d) or _inside(path, d) for d in SYSTEM_DIRS):
            return Owner("system")
        return Owner("outside")


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")
