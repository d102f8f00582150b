"""A cell's description for the report: from its plan entry, or from its id when no plan lists it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_CELL_ID = re.compile(r"^py(?P<python>[0-9][0-9.]*t?)-(?P<platform>[^-]+)-(?P<arch>[^-]+)-(?P<backend>[a-z]+)(?P<toolkit>[0-9][^-]*)?(?P<rest>(-.+)?)$")


def cell_from_id(cell_id: str) -> dict[str, Any]:
    """Best-effort cell description from an id made by ``xcompat.model.cell_id``."""
    match = _CELL_ID.match(cell_id)
    if not match:
        return {"id": cell_id, "python": "?", "platform": "?", "arch": "?", "backend": cell_id}
    frameworks = {}
    for part in filter(None, match.group("rest").split("-")):
        m = re.match(r"^([A-Za-z_]+)([0-9].*)$", part)
        if m:
            frameworks[m.group(1)] = m.group(2)
    return {
        "id": cell_id,
        "python": match.group("python"),
        "platform": match.group("platform"),
        "arch": match.group("arch"),
        "backend": match.group("backend"),
        "toolkit": match.group("toolkit"),
        "frameworks": frameworks,
    }


def cell_fields(spec: Mapping[str, Any]) -> dict[str, Any]:
    frameworks = spec.get("frameworks")
    if isinstance(frameworks, dict):
        fw = tuple(sorted((str(k), str(v)) for k, v in frameworks.items()))
    elif isinstance(frameworks, list):
        fw = tuple(sorted((str(p[0]), str(p[1])) for p in frameworks if isinstance(p, list) and len(p) == 2))
    else:
        fw = ()
    toolkit = spec.get("toolkit")
    return {
        "id": str(spec["id"]),
        "python": str(spec.get("python", "?")),
        "platform": str(spec.get("platform", "?")),
        "arch": str(spec.get("arch", "?")),
        "backend": str(spec.get("backend", "?")),
        "toolkit": str(toolkit) if toolkit not in (None, "") else None,
        "frameworks": fw,
        "required": bool(spec.get("required", True)),
        # The runner labels the plan gave the cell: the report names them when its job never reported.
        "runs_on": tuple(str(x) for x in spec.get("runs_on") or () if isinstance(x, str))
        if isinstance(spec.get("runs_on"), list)
        else (),
    }
