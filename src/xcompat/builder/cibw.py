"""The cibuildwheel backend: derive cibuildwheel's configuration from the plan's cells and
run it as a subprocess.

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
import shlex
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xcompat import jsonio
from xcompat.builder import defaults as D
from xcompat.builder.archs import rocm_arch_list, torch_cuda_arch_list
from xcompat.builder.tools import run_tool, tool_env
from xcompat.errors import InputError, UnavailableError, XcompatError
from xcompat.log import get_logger
from xcompat.model import Cell, runner_platform


@dataclass(frozen=True, kw_only=True)
class CibwRun:
    """One cibuildwheel invocation: the cells it serves and the environment that selects them."""

    platform: str  # linux | macos | windows
    flavour: str  # e.g. "cpu", "cuda12.8-sm_80.sm_90-torch2.5"
    identifiers: tuple[str, ...]
    cells: Mapping[str, tuple[str, ...]]  # identifier -> cell ids
    env: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "flavour": self.flavour,
            "identifiers": list(self.identifiers),
            "cells": {k: list(v) for k, v in self.cells.items()},
            "env": dict(self.env),
        }


def build_identifier(cell: Cell) -> str:
    """cibuildwheel's build identifier of a cell's wheel, e.g. ``cp313t-manylinux_x86_64``
    (one definition, shared with ``xcompat matrix plan --format cibuildwheel``)."""
    from xcompat.matrix.plan import build_identifier as plan_identifier

    return plan_identifier(cell.python, cell.platform, cell.arch, cell.policy)


def _framework_pins(cell: Cell, build_frameworks: Sequence[str]) -> tuple[tuple[str, str], ...]:
    return tuple((name, version) for name, version in cell.frameworks if name in build_frameworks)


def _requirement_name(text: str) -> str:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    return canonicalize_name(Requirement(text).name)


def flavour_of(cell: Cell, build_frameworks: Sequence[str] = ()) -> str:
    parts = [cell.backend + (cell.toolkit or "")]
    if cell.gpu_archs:
        parts.append(".".join(cell.gpu_archs))
    parts += [f"{n}{v}" for n, v in _framework_pins(cell, build_frameworks)]
    return "-".join(parts)


def _env_value(value: str) -> str:
    """Quote a value for CIBW_ENVIRONMENT (bash-like syntax; ``$VAR`` stays expandable)."""
    if "$" in value:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return shlex.quote(value)


def builder_image(cell: Cell, env: Mapping[str, str]) -> str | None:
    """Builder image for a GPU cell, or None to use cibuildwheel's manylinux image."""
    if cell.backend not in D.BUILDER_IMAGES:
        return None
    template = env.get(D.BUILDER_IMAGE_ENV[cell.backend]) or D.BUILDER_IMAGES[cell.backend]
    if template is None:
        return None
    return template.format(toolkit=cell.toolkit or "latest", arch=cell.arch)


def framework_index(name: str, cell: Cell, env: Mapping[str, str] | None = None) -> str | None:
    """The extra index a framework build of ``cell`` comes from; ``XCOMPAT_TORCH_INDEX``
    (see ``defaults.FRAMEWORK_INDEX_ENV``) replaces it, an empty value means none."""
    override = D.FRAMEWORK_INDEX_ENV.get(name)
    if env is not None and override is not None and override in env:
        return env[override].strip() or None
    table = D.FRAMEWORK_INDEXES.get(name)
    if table is None or cell.backend not in table:
        return None
    toolkit = (cell.toolkit or "").replace(".", "")
    return table[cell.backend].format(cuda=toolkit, rocm=cell.toolkit or "")


def container_engine_option(backend: str, env: Mapping[str, str]) -> str:
    """``CIBW_CONTAINER_ENGINE``: the backend's engine and ``create_args``, plus those of
    ``XCOMPAT_CONTAINER_ARGS``."""
    engine = D.CONTAINER_ENGINE.get(backend, "docker")
    extra = env.get(D.CONTAINER_ARGS_ENV, "").strip()
    if not extra:
        return engine
    try:
        shlex.split(extra)
    except ValueError as exc:
        raise InputError(f"{D.CONTAINER_ARGS_ENV}: cannot split {extra!r} into arguments ({exc})",
                         hint="quote it as for a shell") from None
    if "create_args:" in engine:
        return f"{engine} {extra}"
    return f"{engine}; create_args: {extra}"


def _pip_pins(pins: Sequence[tuple[str, str]]) -> list[str]:
    return [f"{name}=={version}.*" if version.count(".") < 2 else f"{name}=={version}" for name, version in pins]


def derive_runs(
    cells: Sequence[Cell],
    *,
    build_frameworks: Sequence[str] = (),
    build_requirements: Sequence[str] = (),
    test_command: str | None = D.DEFAULT_TEST_COMMAND,
    test_requires: Sequence[str] = D.DEFAULT_TEST_REQUIRES,
    excludes: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> list[CibwRun]:
    """The cibuildwheel runs that build every cell's wheel.

    ``build_frameworks``: frameworks the project builds against (from its build
    requirements, e.g. ``("torch",)``); their versions become part of the flavour, are
    installed before the build, with the rest of ``build_requirements``, and the build
    runs without isolation.
    """
    env = {} if env is None else env
    excludes = tuple(D.default_excludes() if excludes is None else excludes)
    groups: dict[tuple[str, str], list[Cell]] = {}
    for cell in cells:
        if cell.platform not in ("linux", "macos", "windows"):
            raise InputError(f"cell {cell.id}: unknown platform {cell.platform!r}")
        groups.setdefault((cell.platform, flavour_of(cell, build_frameworks)), []).append(cell)
    runs = []
    for (platform, flavour), members in groups.items():
        lead = members[0]
        ids: dict[str, list[str]] = {}
        archs: list[str] = []
        for cell in members:
            ids.setdefault(build_identifier(cell), []).append(cell.id)
            if cell.arch not in archs:
                archs.append(cell.arch)
        plat = platform.upper()
        cibw: dict[str, str] = {
            "CIBW_BUILD": " ".join(ids),
            f"CIBW_ARCHS_{plat}": " ".join(archs),
            "CIBW_BUILD_VERBOSITY": "1",
        }
        # PyPy and GraalPy are built only when enabled (cibuildwheel 3+): no skip for them (a
        # selector of a group not enabled draws a warning), only the libc family not asked for.
        skips: list[str] = []
        if platform == "linux":
            families = {"musllinux" if (c.policy or "").startswith("musllinux") else "manylinux" for c in members}
            if families == {"manylinux"}:
                skips.append("*-musllinux_*")
            elif families == {"musllinux"}:
                skips.append("*-manylinux_*")
            image = builder_image(lead, env)
            for cell in members:
                policy = cell.policy or "manylinux_2_28"
                family = "MUSLLINUX" if policy.startswith("musllinux") else "MANYLINUX"
                cibw[f"CIBW_{family}_{cell.arch.upper()}_IMAGE"] = image or policy
            cibw["CIBW_CONTAINER_ENGINE"] = container_engine_option(lead.backend, env)
            repair = ["auditwheel", "repair", "-w", "{dest_dir}"]
            for pattern in excludes:
                repair += ["--exclude", shlex.quote(pattern)]
            cibw["CIBW_REPAIR_WHEEL_COMMAND_LINUX"] = " ".join(repair) + " {wheel}"
        elif platform == "macos":
            target = next((c.policy for c in members if c.policy), None)
            if target:
                cibw["MACOSX_DEPLOYMENT_TARGET"] = target
            repair = ["delocate-wheel", "--require-archs", "{delocate_archs}", "-w", "{dest_dir}", "-v"]
            for pattern in D.DELOCATE_EXCLUDES:
                repair += ["--exclude", shlex.quote(pattern)]
            cibw["CIBW_REPAIR_WHEEL_COMMAND_MACOS"] = " ".join(repair) + " {wheel}"
        if skips:
            cibw["CIBW_SKIP"] = " ".join(skips)
        build_env: dict[str, str] = {}
        if lead.backend == "cuda":
            build_env.update(D.TOOLKIT_ENV["cuda"])
            if lead.gpu_archs:
                build_env["TORCH_CUDA_ARCH_LIST"] = torch_cuda_arch_list(lead.gpu_archs)
        elif lead.backend == "rocm":
            build_env.update(D.TOOLKIT_ENV["rocm"])
            if lead.gpu_archs:
                build_env["PYTORCH_ROCM_ARCH"] = rocm_arch_list(lead.gpu_archs)
        if build_env:
            cibw[f"CIBW_ENVIRONMENT_{plat}"] = " ".join(f"{k}={_env_value(v)}" for k, v in build_env.items())
        pins = _framework_pins(lead, build_frameworks)
        if pins:
            # Build against the framework version the cell tests, not whatever an isolated
            # build would download: install it (and the other build requirements) first.
            pinned = {name for name, _ in pins}
            indexes: list[str] = []
            for name, _version in pins:
                index = framework_index(name, lead, env)
                if index:
                    indexes += ["--extra-index-url", index]
            before = ["pip", "install", *_pip_pins(pins)]
            before += [r for r in build_requirements if _requirement_name(r) not in pinned]
            cibw["CIBW_BEFORE_BUILD"] = shlex.join(before + indexes)
            cibw["CIBW_BUILD_FRONTEND"] = "build; args: --no-isolation"
            if test_command:
                # The wheel is tested against the framework it was built against: installing the
                # wheel alone would pull the newest release, whose ABI a compiled op does not match.
                cibw["CIBW_BEFORE_TEST"] = shlex.join(["pip", "install", *_pip_pins(pins), *indexes])
        if test_command:
            cibw["CIBW_TEST_COMMAND"] = test_command
            if test_requires:
                cibw["CIBW_TEST_REQUIRES"] = " ".join(test_requires)
        runs.append(CibwRun(
            platform=platform, flavour=flavour, identifiers=tuple(ids),
            cells={k: tuple(v) for k, v in ids.items()}, env=cibw,
        ))
    return runs


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
    from xcompat.builder.native import (
        BuiltWheel,
        IsolationChoice,
        build_requirements,
        runner_frameworks,
        tool_versions,
    )
    from xcompat.builder.record import BUILD_JSON, audit_built_wheel, build_document

    start = time.monotonic()
    base = tool_env(env)
    log = get_logger()
    requirements = build_requirements(project)
    if build_frameworks is None:
        build_frameworks = runner_frameworks(requirements, source=project / "pyproject.toml")
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
    runs = derive_runs(mine, build_frameworks=build_frameworks, build_requirements=requirements,
                       test_command=test_command, env=base)
    wheels: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    first: XcompatError | None = None
    for run in runs:
        missing = check_identifiers(project, run, env=base)
        for ident in missing:
            for cid in run.cells[ident]:
                rows.append({"id": cid, "status": "skipped", "wheels": [], "identifier": ident,
                             "reason": "this cibuildwheel release does not build it"})
            log.warning(f"cibuildwheel will not build {ident}; its cells are skipped")
        wanted = [i for i in run.identifiers if i not in missing]
        if not wanted:
            continue
        run_out = out_dir.resolve() / f".cibw-{run.flavour}"
        log_path = out_dir / "logs" / f"cibuildwheel-{run.platform}-{run.flavour}.log"
        # cibuildwheel copies its working directory into the build container: run it in the
        # project, not wherever xcompat was started (a repository root holding the project).
        argv = [sys.executable, "-m", "cibuildwheel", "--platform", run.platform, "--output-dir", str(run_out),
                "."]
        t0 = time.monotonic()
        try:
            with log.group(f"cibuildwheel {run.platform} {run.flavour}"):
                run_tool(argv, what="cibuildwheel", cell_id=", ".join(c for v in run.cells.values() for c in v),
                         cwd=project, env={**base, **run.env, "CIBW_BUILD": " ".join(wanted)},
                         log=log_path.resolve())
        except XcompatError as exc:
            first = first or exc
            for ident in wanted:
                for cid in run.cells[ident]:
                    rows.append({"id": cid, "status": "failed", "wheels": [], "identifier": ident,
                                 "reason": exc.message})
            errors.append({"cell_id": run.cells[wanted[0]][0], "message": str(exc), "log_tail": list(exc.details)})
            continue
        seconds = time.monotonic() - t0
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
        for ident in wanted:
            entries = by_ident.get(ident, [])
            for cid in run.cells[ident]:
                rows.append({"id": cid, "status": "passed" if entries else "failed", "identifier": ident,
                             "wheels": [e["file"] for e in entries]})
                wheels.extend({**e, "cell_id": cid} for e in entries)
        with contextlib.suppress(OSError):
            run_out.rmdir()
    document = build_document(
        project=project, backend="cibuildwheel", wheels=wheels, cells=rows, errors=errors,
        seconds=time.monotonic() - start, tools=tool_versions(),
        settings={"runs": [r.to_dict() for r in runs]},
    )
    jsonio.write_json(out_dir / BUILD_JSON, document, schema="build")
    if first is not None:
        raise first
    return document


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
