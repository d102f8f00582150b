"""Map the paths a test cell recorded back to paths in the repository.

Coverage data names files where they were *executed or compiled*, which is rarely the
checkout: an extension built by pip in ``/tmp/pip-req-build-x/src/...``, a manylinux
container's ``/project/...``, a module imported from ``.../site-packages/pkg/mod.py``.
Reports, Cobertura ``<source>`` resolution and diff annotations all need the repository
path, so every recorded path goes through :class:`PathMapper`, in this order:

1. explicit ``FROM=TO`` maps (longest ``FROM`` first; ``TO`` is relative to the source root);
2. a path already inside the source root;
3. automatic suffix matching: the repository file sharing the longest run of trailing
   path components with the recorded path (``site-packages/sample_ext/_core.py`` matches
   ``src/sample_ext/_core.py``). At least ``min_suffix`` components must match, unless the
   whole repository path matched; a tie between candidates is refused, never guessed.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from xcompat.errors import UsageError

# Folders never searched for repository files when the source root is not a git checkout.
_SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "node_modules",
        "__pycache__",
        "build",
        "dist",
        ".eggs",
        "site-packages",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "wheelhouse",
    }
)


@dataclass(frozen=True)
class PathMap:
    """One explicit ``FROM=TO`` rewrite: an absolute (or build-relative) prefix to a repo folder."""

    source: str
    target: str

    @classmethod
    def parse(cls, text: str) -> PathMap:
        if "=" not in text:
            raise UsageError(f"--map {text!r}: expected FROM=TO, e.g. /project=. or /tmp/build/src=src")
        source, target = (part.strip() for part in text.split("=", 1))
        if not source:
            raise UsageError(f"--map {text!r}: FROM is empty")
        if PurePosixPath(target).is_absolute() or ".." in PurePosixPath(target).parts:
            raise UsageError(f"--map {text!r}: TO must be a folder inside the source root, e.g. . or src")
        source = source.rstrip("/") or "/"
        target = target.strip("/")
        if target == ".":
            target = ""
        return cls(source=source, target=target)


@dataclass(frozen=True)
class Mapping:
    """The result of mapping one path: ``repo_path`` or the ``reason`` it has none."""

    recorded: str
    repo_path: str | None
    how: str  # "map", "root", "suffix" or "unmapped"
    reason: str = ""


def list_repo_files(root: Path) -> list[str]:
    """Repository files (POSIX, relative to ``root``): git's view when it is a checkout, else a walk."""
    try:
        proc = subprocess.run(
            [
                "git",
                "-C",
                str(root),
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
                "--",
                ".",
            ],
            capture_output=True,
            check=False,
        )
    except FileNotFoundError:
        proc = None
    if proc is not None and proc.returncode == 0 and proc.stdout:
        return sorted({p for p in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if p})
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS and not d.endswith(".egg-info")]
        rel = os.path.relpath(dirpath, root)
        for name in filenames:
            found.append(name if rel == "." else f"{rel}/{name}".replace(os.sep, "/"))
    return sorted(found)


class PathMapper:
    """Maps recorded paths to repository paths (see the module docstring for the rules)."""

    def __init__(
        self,
        source_root: str | Path,
        maps: Sequence[PathMap] = (),
        repo_files: Iterable[str] | None = None,
        *,
        min_suffix: int = 2,
    ) -> None:
        self.root = Path(source_root).resolve()
        self._root_text = str(self.root)
        self.maps = sorted(maps, key=lambda m: len(m.source), reverse=True)
        files = list_repo_files(self.root) if repo_files is None else list(repo_files)
        self.repo_files = frozenset(files)
        self.min_suffix = min_suffix
        self._by_name: dict[str, list[tuple[str, ...]]] = {}
        for rel in files:
            parts = tuple(rel.split("/"))
            self._by_name.setdefault(parts[-1], []).append(parts)
        self._cache: dict[str, Mapping] = {}

    def map(self, recorded: str, *, base: str | Path | None = None) -> Mapping:
        """Map ``recorded`` (absolute, or relative to ``base``) to a repository path."""
        key = f"{base}\0{recorded}" if base is not None else recorded
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = self._map(recorded, base)
        return hit

    def _map(self, recorded: str, base: str | Path | None) -> Mapping:
        text = recorded.replace("\\", "/")
        if not PurePosixPath(text).is_absolute() and base is not None:
            text = f"{str(base).rstrip('/')}/{text}"
        text = os.path.normpath(text).replace("\\", "/") if text else text
        for rule in self.maps:
            if text == rule.source or text.startswith(rule.source.rstrip("/") + "/"):
                rest = text[len(rule.source) :].lstrip("/")
                candidate = "/".join(p for p in (rule.target, rest) if p)
                if candidate in self.repo_files or (self.root / candidate).is_file():
                    return Mapping(recorded, candidate, "map")
                return Mapping(
                    recorded,
                    None,
                    "unmapped",
                    f"--map {rule.source}={rule.target or '.'} gives "
                    f"{candidate!r}, which is not a file in {self._root_text}",
                )
        if text.startswith(self._root_text + "/"):
            # Only repository files: a virtualenv or build folder inside the checkout
            # (.venv/lib/.../site-packages/pkg/mod.py) is not the source; suffix matching
            # below finds the file it was installed from.
            candidate = text[len(self._root_text) + 1 :]
            if candidate in self.repo_files:
                return Mapping(recorded, candidate, "root")
        parts = tuple(p for p in text.split("/") if p)
        if not parts:
            return Mapping(recorded, None, "unmapped", "empty path")
        best: list[tuple[str, ...]] = []
        best_len = 0
        for cand in self._by_name.get(parts[-1], ()):
            n = _common_suffix(parts, cand)
            if n > best_len:
                best, best_len = [cand], n
            elif n == best_len:
                best.append(cand)
        if not best:
            return Mapping(recorded, None, "unmapped", "no repository file has this name")
        if len(best) > 1:
            names = ", ".join("/".join(c) for c in best[:3])
            return Mapping(recorded, None, "unmapped", f"ambiguous: matches {names}; add --map FROM=TO")
        cand = best[0]
        if best_len < self.min_suffix and best_len < len(cand):
            return Mapping(
                recorded,
                None,
                "unmapped",
                f"only the file name matches {'/'.join(cand)!r}; add --map FROM=TO if it is the same file",
            )
        return Mapping(recorded, "/".join(cand), "suffix")


def _common_suffix(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    n = 0
    for x, y in zip(reversed(a), reversed(b), strict=False):
        if x != y:
            break
        n += 1
    return n
