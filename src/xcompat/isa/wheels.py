"""The ISA scan of a wheel, a folder of wheels or single shared objects, as one result."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from xcompat.abi.elf import ELF_MAGIC, ElfError
from xcompat.archives import extract_zip
from xcompat.errors import InputError
from xcompat.isa.scan import ObjectScan, scan_object

_LIBRARY_SUFFIXES = (".so",)


def _is_library(name: str) -> bool:
    leaf = name.rsplit("/", 1)[-1]
    return leaf.endswith(_LIBRARY_SUFFIXES) or ".so." in leaf


def _scan_file(path: Path, shown: str, floor: str) -> ObjectScan | None:
    with open(path, "rb") as handle:
        if handle.read(4) != ELF_MAGIC:
            return None
    try:
        found = scan_object(path, floor)
    except ElfError as err:
        raise InputError(f"{shown}: {err}") from None
    found.path = shown
    return found


def scan_targets(targets: Sequence[Path], floor: str) -> list[ObjectScan]:
    """Scan every shared object of ``targets`` (wheels, folders of wheels, objects)."""
    scans: list[ObjectScan] = []
    for target in targets:
        wheels = sorted(target.glob("*.whl")) if target.is_dir() else [target] if target.suffix == ".whl" else []
        if not target.exists():
            raise InputError(f"{target}: no such file or folder", hint="name a wheel, a folder of wheels or a .so")
        if not wheels:
            found = _scan_file(target, str(target), floor)
            if found is not None:
                scans.append(found)
            continue
        for wheel in wheels:
            with tempfile.TemporaryDirectory(prefix="xcompat-isa-") as tmp:
                names = extract_zip(wheel, Path(tmp) / "w", what="wheel", select=_is_library)
                for name in sorted(names):
                    found = _scan_file(Path(tmp) / "w" / name, f"{wheel.name}:{name}", floor)
                    if found is not None:
                        scans.append(found)
    return scans


def isa_document(scans: Sequence[ObjectScan], *, arch: str, floor: str, cell_id: str | None) -> dict[str, Any]:
    unguarded = [s for s in scans if s.verdict == "unguarded"]
    dispatched = [s for s in scans if s.verdict == "dispatched"]
    parts = [f"{len(scans)} objects scanned against {floor}"]
    if unguarded:
        first = unguarded[0]
        parts.append(f"{len(unguarded)} unguarded ({first.path}: {first.functions[0].function} needs "
                     f"{first.functions[0].level})")
    if dispatched:
        parts.append(f"{len(dispatched)} dispatched")
    return {"version": 1, "kind": "isa", "cell_id": cell_id, "status": "failed" if unguarded else "passed",
            "summary": "; ".join(parts), "arch": arch, "floor": floor, "objects": [s.to_dict() for s in scans]}
