"""Expand a matrix into cells and render the plan for CI services.

Public API::

    from xcompat.matrix.plan import expand, cells_for_runner, plan_document
    cells = expand(matrix)                       # list[xcompat.model.Cell], stable order and ids
    mine = cells_for_runner(cells, platform="linux", arch="x86_64", backends=("cpu",))
    doc = plan_document(matrix, cells)           # versioned plan JSON (schemas/plan.schema.json)
    plan_mismatch(doc, matrix)                   # None, or where a plan is not the one matrix yields

and the renderers ``github_matrix``, ``gitlab_matrix`` and ``cibuildwheel_selectors`` (from
``xcompat.matrix.cibuildwheel``), each returning a versioned JSON document (see ``docs/matrix.md``).

Expansion: python x platform/arch x backend (where the backend runs) x toolkit x every
combination of framework versions, minus ``exclude`` rules, plus ``include`` cells. An
``include`` cell whose id already exists replaces that cell (to change ``required`` or
``runs-on``). Order follows the file: backend, platform, arch, toolkit, python, frameworks.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

from xcompat.errors import InputError
from xcompat.limits import LIMITS
from xcompat.matrix import defaults as D
from xcompat.matrix.cibuildwheel import build_identifier, cibuildwheel_selectors, installed_cibuildwheel_major
from xcompat.matrix.config import BackendSpec, IncludeCell, Matrix
from xcompat.model import Cell, cell_id

__all__ = [
    "FORMATS",
    "PLAN_VERSION",
    "build_identifier",
    "cells_for_runner",
    "cibuildwheel_selectors",
    "expand",
    "github_matrix",
    "gitlab_matrix",
    "installed_cibuildwheel_major",
    "plan_document",
    "plan_mismatch",
    "render",
    "settings_dict",
]

PLAN_VERSION = D.PLAN_VERSION
FORMATS = ("json", "github", "gitlab", "cibuildwheel")


def _framework_combos(matrix: Matrix) -> list[tuple[tuple[str, str], ...]]:
    names = list(matrix.frameworks)
    if not names:
        return [()]
    product = itertools.product(*(matrix.frameworks[n] for n in names))
    return [tuple(sorted(zip(names, versions, strict=True))) for versions in product]


def _make_cell(
    matrix: Matrix,
    backend: BackendSpec,
    *,
    python: str,
    platform: str,
    arch: str,
    toolkit: str | None,
    frameworks: tuple[tuple[str, str], ...],
    required: bool | None = None,
    runs_on: tuple[str, ...] | None = None,
) -> Cell:
    plat = matrix.platform(platform)
    fallback = plat.labels(arch) if plat else D.DEFAULT_RUNNERS.get((platform, arch), ())
    if plat is not None:
        policy = plat.wheel_policy
    elif platform == "linux":
        policy = D.DEFAULT_LINUX_POLICY
    elif platform == "macos":
        policy = D.DEFAULT_MACOS_DEPLOYMENT_TARGET
    else:
        policy = None
    return Cell(
        id=cell_id(python, platform, arch, backend.name, toolkit, frameworks),
        python=python,
        platform=platform,  # type: ignore[arg-type]
        arch=arch,
        backend=backend.name,  # type: ignore[arg-type]
        required=backend.required if required is None else required,
        toolkit=toolkit,
        gpu_archs=backend.gpu_archs,
        frameworks=frameworks,
        runs_on=runs_on if runs_on is not None else backend.labels(platform, arch, fallback),
        policy=policy,
    )


def expansion_size(matrix: Matrix) -> int:
    """How many cells the cross product holds before ``exclude`` rules (computed, not enumerated)."""
    combos = 1
    for versions in matrix.frameworks.values():
        combos *= max(len(versions), 1)
    total = 0
    for backend in matrix.backends:
        for plat in matrix.platforms:
            for arch in plat.archs:
                if backend.supports(plat.name, arch):
                    total += max(len(backend.toolkits), 1) * len(matrix.pythons) * combos
    return total + len(matrix.include)


def _check_size(matrix: Matrix, size: int, what: str, limit: int) -> None:
    if size > limit:
        raise InputError(
            f"the matrix expands to {size} cells{what}, over the limit of {limit}",
            file=matrix.source,
            hint="list fewer framework versions or Pythons, or split the matrix (see docs/trust-boundary.md, Limits)",
        )


def expand(matrix: Matrix) -> list[Cell]:
    """Every cell of the matrix, in a stable order, with stable ids (``xcompat.model.cell_id``).

    The size is bounded (``LIMITS.matrix_expansion`` before exclude rules, ``LIMITS.matrix_cells``
    after): a signed matrix is still a file a person can get wrong, and no CI service runs more.
    """
    _check_size(matrix, expansion_size(matrix), " before exclude rules", LIMITS.matrix_expansion)
    combos = _framework_combos(matrix)
    cells: dict[str, Cell] = {}
    for backend in matrix.backends:
        toolkits: Sequence[str | None] = backend.toolkits or (None,)
        for plat in matrix.platforms:
            for arch in plat.archs:
                if not backend.supports(plat.name, arch):
                    continue
                for toolkit in toolkits:
                    for python in matrix.pythons:
                        for fws in combos:
                            cell = _make_cell(
                                matrix,
                                backend,
                                python=python,
                                platform=plat.name,
                                arch=arch,
                                toolkit=toolkit,
                                frameworks=fws,
                            )
                            if any(rule.matches(cell) for rule in matrix.exclude):
                                continue
                            cells.setdefault(cell.id, cell)
    for inc in matrix.include:
        cell = _include_cell(matrix, inc)
        cells[cell.id] = cell
    _check_size(matrix, len(cells), "", LIMITS.matrix_cells)
    return list(cells.values())


def _include_cell(matrix: Matrix, inc: IncludeCell) -> Cell:
    backend = matrix.backend(inc.backend)
    assert backend is not None  # checked when the matrix was loaded
    toolkit = inc.toolkit if inc.toolkit is not None else (backend.toolkits[0] if backend.toolkits else None)
    return _make_cell(
        matrix,
        backend,
        python=inc.python,
        platform=inc.platform,
        arch=inc.arch,
        toolkit=toolkit,
        frameworks=inc.frameworks,
        required=inc.required,
        runs_on=inc.runs_on,
    )


def cells_for_runner(
    cells: Iterable[Cell],
    *,
    platform: str | None = None,
    arch: str | None = None,
    backends: Iterable[str] | None = None,
    python: str | None = None,
) -> list[Cell]:
    """The cells a runner can serve: same platform and arch (None = any) and one of ``backends``."""
    wanted = None if backends is None else set(backends)
    return [
        c
        for c in cells
        if (platform is None or c.platform == platform)
        and (arch is None or c.arch == arch)
        and (wanted is None or c.backend in wanted)
        and (python is None or c.python == python)
    ]


def plan_document(matrix: Matrix, cells: Sequence[Cell]) -> dict[str, Any]:
    """The versioned plan JSON (``schemas/plan.schema.json``)."""
    by_backend: dict[str, int] = {}
    for c in cells:
        by_backend[c.backend] = by_backend.get(c.backend, 0) + 1
    return {
        "version": PLAN_VERSION,
        "format": "json",
        "repo": matrix.repo,
        "serial": matrix.serial,
        "matrix_sha256": matrix.sha256,
        "expires": matrix.expires.isoformat() if matrix.expires else None,
        "counts": {
            "cells": len(cells),
            "required": sum(1 for c in cells if c.required),
            "by_backend": by_backend,
        },
        "required": [c.id for c in cells if c.required],
        "cells": [c.to_dict() for c in cells],
        "settings": settings_dict(matrix),
    }


def plan_mismatch(document: Any, matrix: Matrix) -> str | None:
    """Where a ``--format json`` plan differs from the plan ``matrix`` yields (a JSON path such
    as ``$.settings.tests.pytest_args``), or None when it is that plan.

    A plan's ``matrix_sha256`` is a field like any other, so it proves nothing about the rest of
    the document: the plan is recomputed from the matrix and compared whole. It may list a subset
    of the matrix's cells (``matrix plan --backend cpu``), in the matrix's order, as the plan
    command writes it; every other field, the settings included, must be equal.
    """
    import json

    if not isinstance(document, dict):
        return "$"
    raw_cells = document.get("cells")
    if not isinstance(raw_cells, list):
        return "$.cells"
    ids = {c.get("id") for c in raw_cells if isinstance(c, dict)}
    chosen = [c for c in expand(matrix) if c.id in ids]
    # Through JSON, as the plan file went: tuples become lists, and the key order does not matter.
    expected = json.loads(json.dumps(plan_document(matrix, chosen)))
    return _first_difference(document, expected, "$")


def _first_difference(got: Any, expected: Any, path: str) -> str | None:
    if isinstance(expected, dict) and isinstance(got, dict):
        for key in sorted(set(got) | set(expected)):
            where = _first_difference(got.get(key), expected.get(key), f"{path}.{key}") \
                if key in got and key in expected else f"{path}.{key}"
            if where is not None:
                return where
        return None
    if isinstance(expected, list) and isinstance(got, list):
        if len(got) != len(expected):
            return path
        for index, (a, b) in enumerate(zip(got, expected, strict=True)):
            where = _first_difference(a, b, f"{path}[{index}]")
            if where is not None:
                return where
        return None
    # bool is an int to Python: True must not stand in for 1, nor 1 for True.
    same = type(got) is type(expected) or (_numeric(got) and _numeric(expected))
    return None if same and got == expected else path


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def settings_dict(matrix: Matrix) -> dict[str, Any]:
    """The non-cell settings of the matrix as JSON data (tests, abi, coverage, gate), spelled as
    a plan spells them (``xcompat.settings.formats.plan_settings``)."""
    from xcompat.settings.formats import plan_settings

    return plan_settings(matrix)


# -- renderers ------------------------------------------------------------------------


def _job_name(c: Cell) -> str:
    parts = [f"py{c.python}", f"{c.platform}-{c.arch}", c.backend + (f" {c.toolkit}" if c.toolkit else "")]
    parts += [f"{k} {v}" for k, v in c.frameworks]
    return " · ".join(parts)


def github_matrix(matrix: Matrix, cells: Sequence[Cell]) -> dict[str, Any]:
    """``{"version": 1, "matrix": {"include": [...]}}``: use ``fromJSON(...).matrix`` as ``strategy.matrix``."""
    include = []
    for c in cells:
        include.append(
            {
                "cell": c.id,
                "name": _job_name(c),
                "python": c.python,
                "platform": c.platform,
                "arch": c.arch,
                "backend": c.backend,
                "toolkit": c.toolkit or "",
                "gpu-archs": " ".join(c.gpu_archs),
                "frameworks": dict(c.frameworks),
                "policy": c.policy or "",
                "required": c.required,
                "runs-on": list(c.runs_on),
            }
        )
    return {
        "version": PLAN_VERSION,
        "format": "github",
        "repo": matrix.repo,
        "serial": matrix.serial,
        "matrix_sha256": matrix.sha256,
        "jobs": len(include),
        "max_jobs": D.GITHUB_MAX_JOBS,
        "matrix": {"include": include},
    }


def gitlab_matrix(matrix: Matrix, cells: Sequence[Cell]) -> dict[str, Any]:
    """``{"version": 1, "parallel": {"matrix": [...]}}``: one entry per cell, every value a single string.

    GitLab expands list values into several jobs, so each entry holds scalars only;
    runner labels are joined with commas in ``XCOMPAT_RUNS_ON`` and the last (most
    specific) one is ``XCOMPAT_RUNNER_TAG`` for ``tags: ["$XCOMPAT_RUNNER_TAG"]``.
    """
    entries = []
    for c in cells:
        entry = {
            "XCOMPAT_CELL": c.id,
            "XCOMPAT_PYTHON": c.python,
            "XCOMPAT_PLATFORM": c.platform,
            "XCOMPAT_ARCH": c.arch,
            "XCOMPAT_BACKEND": c.backend,
            "XCOMPAT_TOOLKIT": c.toolkit or "",
            "XCOMPAT_GPU_ARCHS": " ".join(c.gpu_archs),
            "XCOMPAT_FRAMEWORKS": " ".join(f"{k}=={v}" for k, v in c.frameworks),
            "XCOMPAT_POLICY": c.policy or "",
            "XCOMPAT_REQUIRED": "true" if c.required else "false",
            "XCOMPAT_RUNS_ON": ",".join(c.runs_on),
            "XCOMPAT_RUNNER_TAG": c.runs_on[-1] if c.runs_on else "",
        }
        entries.append(entry)
    return {
        "version": PLAN_VERSION,
        "format": "gitlab",
        "repo": matrix.repo,
        "serial": matrix.serial,
        "matrix_sha256": matrix.sha256,
        "jobs": len(entries),
        "max_jobs": D.GITLAB_MAX_JOBS,
        "parallel": {"matrix": entries},
    }


def render(
    fmt: str, matrix: Matrix, cells: Sequence[Cell], *, cibuildwheel_major: int | None = None
) -> dict[str, Any]:
    """The plan document in one of ``FORMATS``."""
    if fmt == "json":
        return plan_document(matrix, cells)
    if fmt == "github":
        return github_matrix(matrix, cells)
    if fmt == "gitlab":
        return gitlab_matrix(matrix, cells)
    if fmt == "cibuildwheel":
        return cibuildwheel_selectors(matrix, cells, cibuildwheel_major=cibuildwheel_major)
    raise ValueError(f"unknown plan format {fmt!r}")
