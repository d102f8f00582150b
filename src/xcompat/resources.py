"""Locate data shipped with xcompat: JSON schemas, kernel sources, bundled examples.

In a wheel they live in ``xcompat/_data/``; in a source checkout (editable install)
they are the top-level ``schemas/``, ``kernels/`` and ``examples/`` folders.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PKG = Path(__file__).resolve().parent


@cache
def data_dir(name: str) -> Path:
    """Return the folder ``name`` (``schemas``, ``kernels`` or ``examples``)."""
    packaged = _PKG / "_data" / name
    if packaged.is_dir():
        return packaged
    checkout = _PKG.parent.parent / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"xcompat data folder {name!r} not found (looked in {packaged} and {checkout})")


def schema_path(name: str) -> Path:
    """Path of ``schemas/<name>.schema.json``."""
    return data_dir("schemas") / f"{name}.schema.json"


def repo_root() -> Path | None:
    """The source checkout's root when running from one, else None."""
    root = _PKG.parent.parent
    return root if (root / "pyproject.toml").is_file() and (root / "schemas").is_dir() else None
