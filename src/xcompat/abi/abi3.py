"""The CPython Limited-API (abi3) floor an extension module actually needs.

Each Limited-API function and data symbol has the CPython version that added it to the
stable ABI; the floor of a ``*.abi3.so`` is the newest of the ones it imports. The table
comes from ``abi3info`` (the data package abi3audit uses), imported only when needed.
"""

from __future__ import annotations

from functools import lru_cache

from xcompat.abi.binary import LibraryInterface


@lru_cache(maxsize=1)
def _table() -> dict[str, tuple[int, int]] | None:
    try:
        import abi3info
    except ImportError:
        return None
    table: dict[str, tuple[int, int]] = {}
    for collection in (abi3info.FUNCTIONS, abi3info.DATAS):
        for sym, item in collection.items():
            added = item.added
            table[sym.name] = (added.major, added.minor)
    return table


def is_abi3_module(key: str) -> bool:
    return ".abi3." in key.rsplit("/", 1)[-1]


def abi3_floor(lib: LibraryInterface) -> tuple[tuple[int, int], list[str]] | None:
    """(floor, the imports that need it), or None when abi3info is not installed."""
    table = _table()
    if table is None:
        return None
    floor = (3, 2)
    culprits: list[str] = []
    for name in lib.imports:
        v = table.get(name)
        if v is None:
            continue
        if v > floor:
            floor, culprits = v, [name]
        elif v == floor and v > (3, 2):
            culprits.append(name)
    return floor, sorted(culprits)
