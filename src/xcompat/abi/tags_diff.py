"""Differences between the platform tags of two wheels (or folders of wheels), and what a
tag already promises about the libraries inside."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

    from xcompat.abi.findings import Collector
    from xcompat.abi.manifest import Manifest

WHEEL = "(wheel)"

_PLAT = re.compile(
    r"^(?:(?P<ml>manylinux)_(?P<a>\d+)_(?P<b>\d+)_(?P<arch>.+)|"
    r"(?P<legacy>manylinux(?:1|2010|2014))_(?P<larch>.+)|"
    r"(?P<musl>musllinux)_(?P<ma>\d+)_(?P<mb>\d+)_(?P<march>.+)|"
    r"macosx_(?P<mac>\d+)_(?P<mmin>\d+)_(?P<macarch>.+))$"
)
_LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def _plat(tag: str) -> tuple[str, str, tuple[int, int]] | None:
    m = _PLAT.match(tag)
    if not m:
        return None
    if m.group("ml"):
        return ("manylinux", m.group("arch"), (int(m.group("a")), int(m.group("b"))))
    if m.group("legacy"):
        return ("manylinux", m.group("larch"), _LEGACY[m.group("legacy")])
    if m.group("musl"):
        return ("musllinux", m.group("march"), (int(m.group("ma")), int(m.group("mb"))))
    return ("macosx", m.group("macarch"), (int(m.group("mac")), int(m.group("mmin"))))


def _semantic_tags(tags: Iterable[str]) -> dict[tuple[str, str, str, str], tuple[int, int] | None]:
    """(interpreter, abi, family, arch) -> lowest floor; tags without a floor keep their platform."""
    out: dict[tuple[str, str, str, str], tuple[int, int] | None] = {}
    for tag in tags:
        interp, abi, plat = tag.split("-", 2)
        p = _plat(plat)
        if p is None:
            out[(interp, abi, plat, "")] = None
            continue
        k = (interp, abi, p[0], p[1])
        floor = out.get(k)
        if k not in out or (floor is not None and p[2] < floor):
            out[k] = p[2]
    return out


def diff_tags(old: Manifest, new: Manifest, c: Collector) -> None:
    if not old.tags or not new.tags:
        return
    a, b = _semantic_tags(old.tags), _semantic_tags(new.tags)
    abi3_a = {k: int(k[0][3:] or 0) for k in a if k[1] == "abi3" and k[0][3:].isdigit()}
    abi3_b = {(k[2], k[3]): int(k[0][3:]) for k in b if k[1] == "abi3" and k[0][3:].isdigit()}
    for k in sorted(a.keys() - b.keys()):
        interp, abi, fam, arch = k
        if k in abi3_a and (fam, arch) in abi3_b and abi3_b[(fam, arch)] > abi3_a[k]:
            new_floor = abi3_b[(fam, arch)]
            c.add("abi3_floor_raised", WHEEL, None,
                  f"abi3 floor {_py(abi3_a[k])} -> {_py(new_floor)} ({fam} {arch}): Python {_py(abi3_a[k])}"
                  f"..{_py(new_floor - 1)} lose their wheel", old=f"{interp}-abi3", new=f"cp{new_floor}-abi3")
            continue
        text = f"{interp}-{abi}-{fam}" + (f"_{arch}" if arch else "")
        c.add("wheel_tag_dropped", WHEEL, None, f"no wheel for {text} any more", old=text)
    for k in sorted(a.keys() & b.keys()):
        fa, fb = a[k], b[k]
        if fa is None or fb is None or fb <= fa:
            continue
        interp, abi, fam, arch = k
        kind = {"manylinux": "glibc_floor_raised", "musllinux": "glibc_floor_raised", "macosx": "macos_target_raised"}[fam]
        c.add(kind, WHEEL, None, f"{interp}-{abi}: {fam}_{fa[0]}_{fa[1]}_{arch} -> {fam}_{fb[0]}_{fb[1]}_{arch}",
              old=f"{fa[0]}.{fa[1]}", new=f"{fb[0]}.{fb[1]}")
    for k in sorted(b.keys() - a.keys()):
        interp, abi, fam, arch = k
        if k[1] == "abi3" and (fam, arch) in {(x[2], x[3]) for x in abi3_a}:
            continue
        text = f"{interp}-{abi}-{fam}" + (f"_{arch}" if arch else "")
        c.add("wheel_tag_added", WHEEL, None, f"new wheel for {text}", new=text)


def _py(n: int) -> str:
    s = str(n)
    return f"{s[0]}.{s[1:]}"




@cache
def _tag_floor_table() -> dict[tuple[int, int], dict[str, str]]:
    data = json.loads((Path(__file__).parent / "tag_floors.json").read_text(encoding="utf-8"))
    return {tuple(int(x) for x in k.split(".")): v for k, v in data["manylinux"].items()}  # type: ignore[misc]


def promised_floors(tags: tuple[str, ...]) -> tuple[dict[str, str], str | None]:
    """The highest glibc / libstdc++ / CXXABI versions every platform tag of a wheel already
    requires of the system (the lowest manylinux tag decides), and that tag; empty when a tag
    promises nothing (``linux_x86_64``, musllinux, macOS) or there are no tags."""
    lowest: tuple[int, int] | None = None
    shown = None
    for tag in tags:
        plat = tag.split("-")[-1]
        p = _plat(plat)
        if p is None or p[0] != "manylinux":
            return {}, None
        if lowest is None or p[2] < lowest:
            lowest, shown = p[2], plat
    if lowest is None:
        return {}, None
    out = {"GLIBC_": f"GLIBC_{lowest[0]}.{lowest[1]}"}
    rows = [k for k in _tag_floor_table() if k <= lowest]
    if rows:
        row = _tag_floor_table()[max(rows)]
        out.update({k: v for k, v in row.items() if k != "GLIBC_"})
    return out, shown
