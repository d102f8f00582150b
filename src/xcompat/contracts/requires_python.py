"""The lowest Python a project claims: ``Requires-Python`` from pyproject.toml or a wheel."""

from __future__ import annotations

import re
import sys
from email.parser import HeaderParser
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from xcompat.errors import InputError
from xcompat.limits import LIMITS, read_bounded_text

# Candidates a floor can be: the Python 3 minors (vermin's minimums are Python 3 versions; a
# specifier that also admits Python 2 has its Python 3 floor all the same).
_MINORS = [(3, m) for m in range(0, 40)]
_METADATA = re.compile(r"^[^/]+\.dist-info/METADATA$")


def floor_of(spec: str, *, source: str) -> tuple[int, int]:
    """The lowest Python 3 ``major.minor`` that ``spec`` admits. Raises InputError on a
    malformed specifier or one admitting no Python 3."""
    try:
        specifiers = SpecifierSet(spec)
    except InvalidSpecifier as exc:
        raise InputError(f"malformed Requires-Python {spec!r} ({exc})", file=source) from None
    # A minor is admitted when any of its patch releases is: ">=3.9.2" admits 3.9.
    admitted = [m for m in _MINORS if any(specifiers.contains(f"{m[0]}.{m[1]}.{p}", prereleases=True)
                                          for p in range(0, 30))]
    if not admitted:
        raise InputError(f"Requires-Python {spec!r} admits no Python 3 version", file=source)
    return admitted[0]


def from_pyproject(path: Path) -> str | None:
    """``[project] requires-python`` of ``path`` (None when absent)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        import tomli as tomllib
    text = read_bounded_text(path, what="pyproject.toml", limit=LIMITS.matrix_bytes)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"invalid TOML ({exc})", file=path) from None
    project = data.get("project")
    value = project.get("requires-python") if isinstance(project, dict) else None
    if value is not None and not isinstance(value, str):
        raise InputError("[project] requires-python is not a string", file=path)
    return value


def from_wheel(wheel: Path) -> str | None:
    """The ``Requires-Python`` header of the wheel's METADATA (None when absent)."""
    import zipfile

    from xcompat.archives.zips import read_member

    try:
        with zipfile.ZipFile(wheel) as zf:
            names = [n for n in zf.namelist() if _METADATA.match(n)]
            if len(names) != 1:
                raise InputError(f"has {len(names)} .dist-info/METADATA files, not one", file=wheel)
            raw = read_member(wheel, zf, names[0], limit=LIMITS.wheel_metadata_bytes, what="wheel")
    except (OSError, zipfile.BadZipFile) as exc:
        raise InputError(f"cannot read the wheel ({exc})", file=wheel) from None
    headers = HeaderParser().parsestr(raw.decode("utf-8", "replace"))
    value = headers.get("Requires-Python")
    return str(value).strip() if value is not None else None


def parse_version(text: str) -> tuple[int, int]:
    """``3.10`` -> (3, 10); InputError for anything else."""
    match = re.fullmatch(r"(\d+)\.(\d+)", text.strip())
    if not match:
        raise InputError(f"not a Python version (MAJOR.MINOR): {text!r}")
    return int(match[1]), int(match[2])


def show(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"
