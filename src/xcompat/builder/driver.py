"""``build_project``: turn this runner's cells into repaired, audited wheels and ``build.json``."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from xcompat import jsonio
from xcompat.builder.native import NativeOptions, build_native, tool_versions
from xcompat.builder.record import BUILD_JSON, audit_built_wheel, build_document
from xcompat.builder.requirements import build_frameworks, check_project, installed_version
from xcompat.builder.tools import tool_env
from xcompat.errors import XcompatError
from xcompat.log import get_logger
from xcompat.model import Cell

Backend = Literal["native", "cibuildwheel"]


@dataclass(frozen=True, kw_only=True)
class BuildSettings:
    backend: Backend = "native"
    native: NativeOptions = field(default_factory=NativeOptions)
    env: Mapping[str, str] | None = None


def running_python() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}" + ("t" if _free_threaded() else "")


def _free_threaded() -> bool:
    import sysconfig

    return bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def interpreter_for(python: str, env: Mapping[str, str]) -> str | None:
    """A usable interpreter for cell Python ``python``: the running one when it matches,
    else ``python3.X`` on PATH if it really is that version and has ``build`` installed
    (version-manager shims answer for versions that are not active)."""
    import subprocess

    if python == running_python():
        return sys.executable
    exe = shutil.which(f"python{python.rstrip('t')}", path=env.get("PATH"))
    if exe is None:
        return None
    probe = (
        "import sys, sysconfig, build\n"
        "print('%d.%d' % sys.version_info[:2] + ('t' if sysconfig.get_config_var('Py_GIL_DISABLED') else ''))"
    )
    try:
        out = subprocess.run([exe, "-c", probe], capture_output=True, text=True, timeout=60, env=dict(env),
                             check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return exe if out.returncode == 0 and out.stdout.strip() == python else None


def native_build_key(cell: Cell) -> tuple[Any, ...]:
    """Cells with the same key share one native wheel (the device backend's GPU archs and
    toolkit change what is compiled; framework versions and runner labels do not)."""
    return (cell.python, cell.platform, cell.arch, cell.policy, cell.backend, cell.toolkit, cell.gpu_archs)


def version_matches(installed: str, wanted: str) -> bool:
    """``2.13.0+cpu`` matches a cell's ``2.13`` and ``2.13.0``; ``2.5.1`` does not match ``2.13``."""
    from packaging.version import InvalidVersion, Version

    try:
        have = Version(installed).release
        want = Version(wanted).release
    except InvalidVersion:
        return installed == wanted
    return have[: len(want)] == want


def framework_mismatch(cell: Cell, frameworks: Sequence[str], python: str) -> str | None:
    """Why this runner cannot build ``cell`` natively: the project builds against a framework
    whose installed version differs from the cell's (None when it can)."""
    for name in frameworks:
        wanted = cell.framework(name)
        if wanted is None:
            continue
        installed = installed_version(python, name)
        if installed is not None and not version_matches(installed, wanted):
            return f"the project builds against {name} and this runner has {name} {installed}, the cell wants {wanted}"
    return None


@dataclass
class _Record:
    """What the builds produced, as build.json lists it."""

    wheels: list[dict[str, Any]] = field(default_factory=list)
    cells: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    first_error: XcompatError | None = None  # raised once build.json is written


def build_project(
    project: Path,
    out_dir: Path,
    *,
    cells: Sequence[Cell] | None = None,
    settings: BuildSettings | None = None,
) -> dict[str, Any]:
    """Build ``project`` for ``cells`` (None: one build for this interpreter), write
    ``out_dir/build.json`` and return it. Raises ``ToolError`` after writing the record
    when a cell's build failed."""
    settings = settings or BuildSettings()
    project = check_project(Path(project))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    if settings.backend == "cibuildwheel":
        from xcompat.builder.cibw import build_with_cibuildwheel

        return build_with_cibuildwheel(project, out_dir, cells=list(cells or []), env=settings.env)
    env = tool_env(settings.env)
    record = _Record()
    jobs = _native_jobs(project, cells, settings, record)
    for lead, members in jobs:
        _build_job(project, out_dir, lead, members, settings, env, record)
    document = build_document(
        project=project,
        backend="native",
        wheels=record.wheels,
        cells=record.cells,
        errors=record.errors,
        seconds=time.monotonic() - start,
        tools=tool_versions(),
        settings={"isolation": settings.native.isolation, "repair": settings.native.repair,
                  "excludes": list(settings.native.excludes), "device": settings.native.device},
    )
    jsonio.write_json(out_dir / BUILD_JSON, document, schema="build")
    if record.first_error is not None:
        raise record.first_error
    return document


def _native_jobs(project: Path, cells: Sequence[Cell] | None, settings: BuildSettings,
                 record: _Record) -> list[tuple[Cell | None, list[Cell]]]:
    """One build per group of cells that share a wheel, led by its first cell (for no cells:
    one build for this interpreter); a cell whose framework this runner lacks is skipped."""
    groups: dict[tuple[Any, ...], list[Cell]] = {}
    frameworks = build_frameworks(project).names
    for cell in cells or []:
        mismatch = framework_mismatch(cell, frameworks, settings.native.python)
        if mismatch:
            record.cells.append({"id": cell.id, "status": "skipped", "wheels": [], "reason": mismatch})
            get_logger().warning(f"{cell.id}: skipped, {mismatch}")
            continue
        groups.setdefault(native_build_key(cell), []).append(cell)
    if cells is None:
        return [(None, [])]
    return [(g[0], g) for g in groups.values()]


def _build_job(project: Path, out_dir: Path, lead: Cell | None, members: list[Cell], settings: BuildSettings,
               env: Mapping[str, str], record: _Record) -> None:
    """Build, repair and audit the wheel of one group of cells, recording each cell's row."""
    log = get_logger()
    ids: list[str | None] = [c.id for c in members] or [None]
    options = settings.native
    if lead is not None:
        python = interpreter_for(lead.python, env)
        if python is None:
            for cid in ids:
                record.cells.append({"id": cid, "status": "skipped", "wheels": [],
                                     "reason": f"no usable Python {lead.python} (with `build`) on this runner"})
            log.warning(f"{lead.id}: skipped, no usable Python {lead.python} (with `build`) on this runner")
            return
        options = replace(options, python=python)
    try:
        built = build_native(project, out_dir, cell=lead, options=replace(options, env=settings.env))
        entries = [audit_built_wheel(item, env=env, out_dir=out_dir, backend="native") for item in built]
    except XcompatError as exc:
        record.first_error = record.first_error or exc
        for cid in ids:
            record.cells.append({"id": cid, "status": "failed", "wheels": [], "reason": exc.message})
        record.errors.append({"cell_id": ids[0], "message": str(exc), "log_tail": list(exc.details)})
        return
    for cid in ids:
        record.cells.append({"id": cid, "status": "passed", "wheels": [e["file"] for e in entries]})
    for entry in entries:
        record.wheels.append(entry)
        for extra in ids[1:]:
            record.wheels.append({**entry, "cell_id": extra})
    if built:
        log.info(f"built {', '.join(e['file'] for e in entries)} ({built[0].isolation.reason}; "
                 f"{built[0].toolchain})")
