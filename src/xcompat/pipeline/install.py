"""The run's wheels made importable for its tests: unpacked into one folder, as pip would.

The test stage imports the new wheels from one folder on ``PYTHONPATH``. For a wheel whose
files all belong in the library folder (its top level, and ``NAME.data/purelib`` or
``NAME.data/platlib``) and that declares no scripts, ``pip install --target`` writes exactly
those files there; unpacking them gives the same folder without starting pip, which is most
of what that install costs. A wheel with scripts, headers or data files is left to pip, which
knows where each of those goes.
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

from xcompat.archives import extract_zip

LIBRARY_SCHEMES = ("purelib", "platlib")
SCRIPT_SECTIONS = ("[console_scripts]", "[gui_scripts]")


def _data_folder(names: Sequence[str]) -> str | None:
    """``NAME-VERSION.data``, named after the wheel's ``NAME-VERSION.dist-info``."""
    info = {n.split("/", 1)[0] for n in names if n.split("/", 1)[0].endswith(".dist-info")}
    return next(iter(info)).removesuffix(".dist-info") + ".data" if len(info) == 1 else None


def unpackable(wheel: Path) -> bool:
    """Whether every file of ``wheel`` goes to the library folder and it declares no scripts."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        data = _data_folder(names)
        if data is None:
            return False  # not a wheel pip would install either: let pip say so
        for name in names:
            top, _, rest = name.partition("/")
            if top == data and rest.split("/", 1)[0] not in LIBRARY_SCHEMES:
                return False
            if top.endswith(".dist-info") and rest == "entry_points.txt":
                text = archive.read(name).decode("utf-8", "replace")
                if any(section in text for section in SCRIPT_SECTIONS):
                    return False
    return True


def unpack_wheels(wheels: Sequence[Path], site: Path) -> list[str] | None:
    """Unpack ``wheels`` into ``site`` (created), each ``NAME.data/purelib|platlib`` merged into
    its top; the paths written, relative to ``site``. None, with nothing written, when one of
    them is not :func:`unpackable`."""
    if not all(unpackable(wheel) for wheel in wheels):
        return None
    site.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    for wheel in wheels:
        with tempfile.TemporaryDirectory(prefix=".unpack-", dir=site.parent) as tmp:
            # every member checked (no absolute or escaping path, no link, bounded size) first
            names = extract_zip(wheel, Path(tmp) / "wheel", what="wheel")
            root, data = Path(tmp) / "wheel", _data_folder(names)
            for name in names:
                top, _, rest = name.partition("/")
                target = rest.split("/", 1)[1] if top == data else name  # NAME.data/purelib/x -> x
                dest = site / target
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(root / name, dest)
                written.append(target)
    return written
