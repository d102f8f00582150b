"""A wheel unpacked into a folder for ``PYTHONPATH``, for checks that import it.

Every member passes xcompat's archive rules (no absolute or escaping path, no link, bounded
sizes) before a byte is written; ``NAME.data/purelib`` and ``NAME.data/platlib`` are merged
into the top, as an installer would put them; other ``.data`` schemes (scripts, headers) are
not importable and are left out.
"""

from __future__ import annotations

from pathlib import Path

from xcompat.archives import extract_zip

_LIBRARY = ("purelib", "platlib")


def _target(name: str) -> str | None:
    """Where member ``name`` goes in the folder; None for members that are not importable."""
    top, _, rest = name.partition("/")
    if not top.endswith(".data"):
        return name
    scheme, _, inner = rest.partition("/")
    return inner if scheme in _LIBRARY and inner else None


def unpack_wheel(wheel: Path, site: Path) -> list[str]:
    """Unpack ``wheel`` into ``site`` (which must not exist yet); the paths written."""
    staging = site.with_name(site.name + ".unpack")
    names = extract_zip(wheel, staging, what="wheel")
    written: list[str] = []
    site.mkdir(parents=True)
    for name in names:
        target = _target(name)
        if target is None:
            continue
        dest = site / target
        dest.parent.mkdir(parents=True, exist_ok=True)
        (staging / name).replace(dest)
        written.append(target)
    return written
