"""Differences between two runtime-library snapshots: two cells, or a run against a baseline."""

from __future__ import annotations

import os
from collections.abc import Mapping

Entry = Mapping[str, object]


def _by_name(doc: Mapping[str, object]) -> dict[str, Entry]:
    libraries = doc.get("libraries")
    found: dict[str, Entry] = {}
    for lib in libraries if isinstance(libraries, list) else []:
        # like with like: a library only the test processes mapped has no counterpart in an
        # import snapshot (a baseline's tests are not run)
        seen_in = lib.get("seen_in") if isinstance(lib, Mapping) else None
        if isinstance(seen_in, list) and "import" not in seen_in:
            continue
        if isinstance(lib, Mapping) and isinstance(lib.get("path"), str):
            name = lib.get("soname") or os.path.basename(str(lib["path"]))
            found.setdefault(str(name), lib)
    return found


def compare_snapshots(old: Mapping[str, object], new: Mapping[str, object]) -> list[dict[str, object]]:
    """One entry per library (by SONAME, else file name) that only one snapshot maps
    (``added`` / ``removed``), or that both map from a different build or owner (``changed``)."""
    before, after = _by_name(old), _by_name(new)
    changes: list[dict[str, object]] = []
    for name in sorted(before.keys() | after.keys()):
        a, b = before.get(name), after.get(name)
        if a is None and b is not None:
            changes.append({"change": "added", "library": name, "path": b.get("path"), "owner": b.get("owner")})
        elif b is None and a is not None:
            changes.append({"change": "removed", "library": name, "path": a.get("path"), "owner": a.get("owner")})
        elif a is not None and b is not None:
            differs = [k for k in ("build_id", "owner", "distribution") if a.get(k) != b.get(k)]
            if differs:
                changes.append({"change": "changed", "library": name, "fields": differs,
                                "old": {k: a.get(k) for k in differs}, "new": {k: b.get(k) for k in differs}})
    return changes
