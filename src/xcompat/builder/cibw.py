"""The cibuildwheel backend: derive cibuildwheel's configuration from the plan's cells
(``xcompat.builder.cibw_runs``) and run it as a subprocess.

Only cibuildwheel's documented interface is used (``CIBW_*`` environment variables, the
command line, ``--print-build-identifiers``); none of its modules are imported, so any
cibuildwheel release with that interface works.

One cibuildwheel run per platform and *build flavour*: cells that need the same compiled
code (device backend, toolkit, GPU archs and, when the project builds against it, the
framework version) share a run and its wheels; each flavour gets its own environment
(``TORCH_CUDA_ARCH_LIST``/``PYTORCH_ROCM_ARCH``), builder image and test container options.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xcompat import jsonio
from xcompat.builder import defaults as D
from xcompat.builder.cibw_runs import CibwRun, build_identifier, derive_runs, flavour_of
from xcompat.builder.tools import run_tool, tool_env
from xcompat.errors import InputError, UnavailableError, XcompatError
from xcompat.log import get_logger
from xcompat.model import Cell, runner_platform

__all__ = [
    "CibwRun", "build_identifier", "build_with_cibuildwheel", "check_identifiers", "container_engine",
    "current_platform", "derive_runs", "flavour_of", "identifier_of_wheel", "print_build_identifiers",
]


def print_build_identifiers(project: Path, run: CibwRun, *, env: Mapping[str, str] | None = None) -> list[str]:
    """What cibuildwheel itself would build for ``run`` (``--print-build-identifiers``);
    needs no container engine."""
    full = tool_env(env, run.env)
    argv = [sys.executable, "-m", "cibuildwheel", "--print-build-identifiers", "--platform", run.platform, "."]
    result = run_tool(argv, what="cibuildwheel --print-build-identifiers", cwd=project, env=full, capture=True)
    return [line.strip() for line in result.stdout.splitlines() if line.strip()]


def check_identifiers(project: Path, run: CibwRun, *, env: Mapping[str, str] | None = None) -> list[str]:
    """Identifiers of ``run`` that this cibuildwheel will not build (unsupported Python,
    excluded by the project's requires-python, ...)."""
    printed = set(print_build_identifiers(project, run, env=env))
    return [ident for ident in run.identifiers if ident not in printed]


def container_engine(env: Mapping[str, str]) -> str | None:
    """``docker`` or ``podman`` when its engine answers (a client without a daemon does not count)."""
    import shutil
    import subprocess

    for name in ("docker", "podman"):
        exe = shutil.which(name, path=env.get("PATH"))
        if exe is None:
            continue
        try:
            probe = subprocess.run([exe, "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                                   timeout=20, env=dict(env), check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0 and probe.stdout.strip():
            return name
    return None


def current_platform() -> str:
    return runner_platform()


@dataclass
class _Outcome:
    """What the runs of one build produced, as build.json lists it."""

    wheels: list[dict[str, Any]] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    first: XcompatError | None = None  # the first run's failure, raised once build.json is written


def build_with_cibuildwheel(
    project: Path,
    out_dir: Path,
    *,
    cells: Sequence[Cell],
    env: Mapping[str, str] | None = None,
    build_frameworks: Sequence[str] | None = None,
    test_command: str | None = D.DEFAULT_TEST_COMMAND,
) -> dict[str, Any]:
    """Run cibuildwheel for the cells of this platform, audit the wheels, write build.json."""
    from xcompat.builder.native import tool_versions
    from xcompat.builder.record import BUILD_JSON, build_document
    from xcompat.builder.requirements import build_requirements, runner_frameworks

    start = time.monotonic()
    base = tool_env(env)
    requirements = build_requirements(project)
    if build_frameworks is None:
        build_frameworks = runner_frameworks(requirements, source=project / "pyproject.toml")
    mine = _cells_built_here(cells, base)
    runs = derive_runs(mine, build_frameworks=build_frameworks, build_requirements=requirements,
                       test_command=test_command, env=base)
    outcome = _Outcome()
    for run in runs:
        _build_run(project, out_dir, run, base, outcome)
    document = build_document(
        project=project, backend="cibuildwheel", wheels=outcome.wheels, cells=outcome.rows, errors=outcome.errors,
        seconds=time.monotonic() - start, tools=tool_versions(),
        settings={"runs": [r.to_dict() for r in runs]},
    )
    jsonio.write_json(out_dir / BUILD_JSON, document, schema="build")
    if outcome.first is not None:
        raise outcome.first
    return document


def _cells_built_here(cells: Sequence[Cell], base: Mapping[str, str]) -> list[Cell]:
    """The cells of this platform, once cibuildwheel (and on Linux a container engine) is here."""
    here = current_platform()
    mine = [c for c in cells if c.platform == here]
    if not mine:
        raise InputError(
            f"no cell of the plan builds on {here}",
            hint="pass --matrix with cells for this platform, or use --backend native",
        )
    import importlib.util

    if importlib.util.find_spec("cibuildwheel") is None:  # located, not imported
        raise UnavailableError("cibuildwheel is not installed", hint="pip install 'xcompat[build]'")
    if here == "linux" and container_engine(base) is None:
        raise UnavailableError(
            "cibuildwheel builds Linux wheels in containers and no container engine (docker, podman) "
            "is running here",
            hint="run this on a CI runner with Docker, or use --backend native",
        )
    return mine


def _build_run(project: Path, out_dir: Path, run: CibwRun, base: Mapping[str, str], outcome: _Outcome) -> None:
    """One cibuildwheel run: the identifiers this release builds, run, its wheels audited."""
    log = get_logger()
    missing = check_identifiers(project, run, env=base)
    for ident in missing:
        for cid in run.cells[ident]:
            outcome.rows.append({"id": cid, "status": "skipped", "wheels": [], "identifier": ident,
                                 "reason": "this cibuildwheel release does not build it"})
        log.warning(f"cibuildwheel will not build {ident}; its cells are skipped")
    wanted = [i for i in run.identifiers if i not in missing]
    if not wanted:
        return
    run_out = out_dir.resolve() / f".cibw-{run.flavour}"
    log_path = out_dir / "logs" / f"cibuildwheel-{run.platform}-{run.flavour}.log"
    # cibuildwheel copies its working directory into the build container: run it in the
    # project, not wherever xcompat was started (a repository root holding the project).
    argv = [sys.executable, "-m", "cibuildwheel", "--platform", run.platform, "--output-dir", str(run_out), "."]
    t0 = time.monotonic()
    try:
        with log.group(f"cibuildwheel {run.platform} {run.flavour}"):
            run_tool(argv, what="cibuildwheel", cell_id=", ".join(c for v in run.cells.values() for c in v),
                     cwd=project, env={**base, **run.env, "CIBW_BUILD": " ".join(wanted)},
                     log=log_path.resolve())
    except XcompatError as exc:
        outcome.first = outcome.first or exc
        for ident in wanted:
            for cid in run.cells[ident]:
                outcome.rows.append({"id": cid, "status": "failed", "wheels": [], "identifier": ident,
                                     "reason": exc.message})
        outcome.errors.append({"cell_id": run.cells[wanted[0]][0], "message": str(exc),
                               "log_tail": list(exc.details)})
        return
    by_ident = _audited_wheels(run_out, out_dir, wanted, time.monotonic() - t0, log_path, base)
    for ident in wanted:
        entries = by_ident.get(ident, [])
        for cid in run.cells[ident]:
            outcome.rows.append({"id": cid, "status": "passed" if entries else "failed", "identifier": ident,
                                 "wheels": [e["file"] for e in entries]})
            outcome.wheels.extend({**e, "cell_id": cid} for e in entries)
    with contextlib.suppress(OSError):
        run_out.rmdir()


def _audited_wheels(run_out: Path, out_dir: Path, wanted: Sequence[str], seconds: float, log_path: Path,
                    base: Mapping[str, str]) -> dict[str, list[dict[str, Any]]]:
    """The wheels a run made, moved to ``out_dir`` and audited, by the identifier that made them."""
    from xcompat.builder.native import BuiltWheel
    from xcompat.builder.record import audit_built_wheel
    from xcompat.builder.requirements import IsolationChoice

    produced = sorted(run_out.glob("*.whl"))
    by_ident: dict[str, list[dict[str, Any]]] = {}
    for wheel in produced:
        final = out_dir / wheel.name
        wheel.replace(final)
        produced_by = identifier_of_wheel(final.name, wanted)
        built = BuiltWheel(path=final, cell_id=None, build_seconds=seconds / max(1, len(produced)),
                           repair_seconds=0.0, repair_tool="cibuildwheel", excluded=tuple(D.default_excludes()),
                           log=log_path, isolation=IsolationChoice(isolated=True, reason="cibuildwheel"),
                           ccache=False)
        entry = audit_built_wheel(built, env=base, out_dir=out_dir, backend="cibuildwheel")
        if produced_by is not None:
            entry["identifier"] = produced_by
        by_ident.setdefault(produced_by or "", []).append(entry)
    return by_ident


def identifier_of_wheel(filename: str, identifiers: Sequence[str]) -> str | None:
    """Which build identifier produced a wheel file (interpreter, free-threading, platform)."""
    from packaging.utils import parse_wheel_filename

    _name, _version, _build, tags = parse_wheel_filename(filename)
    for ident in identifiers:
        interp, _, plat = ident.partition("-")
        free_threaded = interp.endswith("t")
        for tag in tags:
            if tag.interpreter != interp.rstrip("t") or free_threaded != tag.abi.endswith("t"):
                continue
            if _platform_matches(plat, tag.platform):
                return ident
    return None


def _platform_matches(identifier_platform: str, tag_platform: str) -> bool:
    family, _, arch = identifier_platform.partition("_")
    if family in ("manylinux", "musllinux", "macosx"):
        return tag_platform.startswith(family) and tag_platform.endswith("_" + arch)
    return tag_platform == identifier_platform
