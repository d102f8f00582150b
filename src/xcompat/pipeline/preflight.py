"""What ``xcompat run`` checks before its first build: every input the stages will need.

A run builds for a minute or more before its later stages read their inputs, so an input that
cannot work is refused here, in one line, before anything is built: a ``--baseline`` that does
not exist or is no kind of baseline (exit 2), a matrix with no cell for this Python, platform,
arch, device backends or installed frameworks (exit 2), a ``tests.pytest`` path that is not in
the project (exit 2), a build tool the run needs that is not installed (exit 5, as for
``xcompat build``). The matrix's signature is checked by the verify stage (exit 3).
"""

from __future__ import annotations

import importlib.util
import sys
import tarfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from xcompat.errors import InputError, UnavailableError, UsageError
from xcompat.matrix.config import Matrix
from xcompat.settings import Settings

BaselineKind = Literal["project", "sdist", "wheel", "wheels", "snapshot"]
_BASELINE_HINT = ("give the last release as a project folder, an sdist (.tar.gz), a wheel, a folder of wheels "
                  "or an ABI snapshot (xcompat abi snapshot)")


def is_project(path: Path) -> bool:
    return (path / "pyproject.toml").is_file() or (path / "setup.py").is_file()


def baseline_kind(path: Path) -> BaselineKind:
    """What a ``--baseline`` is, from the path alone (cheap: no build, nothing unpacked);
    ``InputError`` (exit 2) when it does not exist or is none of the kinds a run can use."""
    if not path.exists():
        raise InputError("--baseline: no such file or folder", file=path, hint=_BASELINE_HINT)
    if path.is_dir():
        if is_project(path):
            return "project"
        if any(path.glob("*.whl")):
            return "wheels"
        raise InputError("--baseline: the folder holds no pyproject.toml, setup.py or wheel", file=path,
                         hint=_BASELINE_HINT)
    if not path.is_file():
        raise InputError("--baseline: not a regular file or folder", file=path, hint=_BASELINE_HINT)
    name = path.name.lower()
    if name.endswith(".whl"):
        if not zipfile.is_zipfile(path):
            raise InputError("--baseline: not a wheel (not a zip archive)", file=path, hint=_BASELINE_HINT)
        return "wheel"
    if name.endswith((".tar.gz", ".tgz")):
        from xcompat.pipeline.baseline_ref import sdist_project

        sdist_project(path)  # a tar archive with a project at its top, every member safe to extract
        return "sdist"
    if name.endswith((".json", ".json.gz")):
        from xcompat.abi.manifest import ManifestError, read_snapshot

        try:
            read_snapshot(path)
        except (ManifestError, OSError, EOFError, ValueError) as exc:
            raise InputError(f"--baseline: not an ABI snapshot: {exc}", file=path,
                             hint="write it with: xcompat abi snapshot WHEEL -o FILE") from None
        return "snapshot"
    if name.endswith(".zip"):
        raise InputError("--baseline: a .zip is not read as an sdist (sdists are .tar.gz)", file=path,
                         hint=_BASELINE_HINT)
    if tarfile.is_tarfile(path):
        raise InputError("--baseline: a tar archive that is not named .tar.gz", file=path, hint=_BASELINE_HINT)
    raise InputError("--baseline: not a project folder, sdist, wheel or ABI snapshot", file=path,
                     hint=_BASELINE_HINT)


def check_local_cells(matrix: Matrix, source: Path) -> None:
    """The matrix must have a cell this machine can run: this Python, platform and arch, a device
    backend present here and the frameworks installed here (what the plan stage keeps)."""
    from xcompat.devices import available_backends
    from xcompat.matrix.plan import cells_for_runner, expand
    from xcompat.model import runner_arch, runner_platform
    from xcompat.pipeline.frameworks import installed_frameworks, pick_framework_versions
    from xcompat.pipeline.local import python_tag

    python, system, arch = python_tag(), runner_platform(), runner_arch()
    cells = expand(matrix)
    if not any(c.python == python for c in cells):
        listed = ", ".join(sorted({c.python for c in cells}, key=_python_key))
        raise UsageError(f"the matrix has no cell for the running Python {python} (its Pythons: {listed})",
                         hint=f"run xcompat with one of those Pythons, or add {python} to `python:` in {source}")
    here = cells_for_runner(cells, platform=system, arch=arch, python=python)
    if not here:
        raise UsageError(f"the matrix has no cell for Python {python} on {system}/{arch}",
                         hint=f"add {system} {arch} to `platforms:` in {source}, or run on a machine it lists")
    backends = available_backends()
    usable = cells_for_runner(here, backends=backends)
    if not usable:
        wanted = ", ".join(sorted({c.backend for c in here}))
        raise UsageError(f"the matrix's cells for Python {python} on {system}/{arch} need a {wanted} device; "
                         f"this machine has {', '.join(backends) or 'none'}",
                         hint="run on a machine with that device, or add a cpu cell to the matrix")
    installed = installed_frameworks()
    kept, _ = pick_framework_versions([c.to_dict() for c in usable], installed)
    if not kept:
        needed = sorted({name for c in usable for name, _ in c.frameworks} - set(installed))
        raise UsageError(f"the matrix's cells for Python {python} on {system}/{arch} need "
                         f"{', '.join(needed)}, which is not installed here",
                         hint=f"install {' and '.join(needed)} into this environment ({sys.executable})")


def _python_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.rstrip("t").split(".") if part.isdigit())


def check_test_paths(settings: Settings, project: Path, source: Path) -> None:
    """``tests.pytest`` paths are relative to the project (module names with ``--pyargs``)."""
    tests = settings.tests
    if not tests.pytest_paths or "--pyargs" in tests.pytest_args:
        return
    for rel in tests.pytest_paths:
        if not (project / rel).exists():
            raise InputError(
                f"tests.pytest names {rel}, and {project / rel} does not exist", file=source,
                hint="tests.pytest paths are relative to the project; tests inside the package: "
                "tests.pytest: [PKG.tests] with tests.pytest-args: [--pyargs] (see xcompat matrix init)")


def check_build_tools(env: Mapping[str, str]) -> None:
    """What every native build of the run uses: the build frontend, pip (the tests install the
    wheel) and the repair tool of this platform."""
    from xcompat.builder.tools import find_tool, tool_env

    hint = "pip install 'xcompat[build]'"
    for module, what in (("build", "the build frontend (python -m build)"), ("pip", "pip")):
        if importlib.util.find_spec(module) is None:
            raise UnavailableError(f"{what} is not installed in {sys.executable}", hint=hint)
    tools = tool_env(env)
    if sys.platform.startswith("linux"):
        find_tool("auditwheel", tools, hint=f"{hint} (auditwheel and patchelf)")
        find_tool("patchelf", tools, hint=f"{hint} (auditwheel and patchelf)")
    elif sys.platform == "darwin":
        find_tool("delocate-wheel", tools, hint=f"{hint} (delocate)")


def check_run_inputs(*, project: Path, matrix: Matrix, matrix_path: Path, settings: Settings,
                     baseline: Path | None, env: Mapping[str, str]) -> None:
    """Everything the stages will need, before the first build; raises the first problem."""
    if baseline is not None:
        baseline_kind(baseline)
    check_local_cells(matrix, matrix_path)
    check_test_paths(settings, project, matrix_path)
    check_build_tools(env)
