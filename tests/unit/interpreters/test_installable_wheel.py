"""The one answer to "which wheel does this interpreter install" (CI stages and the run alike)."""

from __future__ import annotations

from pathlib import Path

from packaging.tags import sys_tags

from xcompat.interpreters.fit import installable_wheel


def _name(tag: object) -> str:
    return f"pkg-1.0-{tag.interpreter}-{tag.abi}-{tag.platform}.whl"  # type: ignore[attr-defined]


def test_the_first_wheel_whose_tags_fit_this_interpreter(tmp_path: Path):
    best = next(iter(sys_tags()))
    (tmp_path / "pkg-1.0-cp39-cp39-win_amd64.whl").write_bytes(b"")
    (tmp_path / "not a wheel name.whl").write_bytes(b"")
    fits = tmp_path / _name(best)
    fits.write_bytes(b"")
    assert installable_wheel(tmp_path) == fits
    assert installable_wheel(fits) == fits  # a wheel named as itself
    assert installable_wheel(tmp_path / "pkg-1.0-cp39-cp39-win_amd64.whl") is None
    assert installable_wheel(tmp_path / "missing") is None
