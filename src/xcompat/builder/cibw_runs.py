"""cibuildwheel's configuration for the plan's cells: one run per platform and build flavour,
each with the ``CIBW_*`` environment that selects exactly its wheels (``xcompat.builder.cibw``
runs them).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from xcompat.builder import defaults as D
from xcompat.builder.archs import rocm_arch_list, torch_cuda_arch_list
from xcompat.errors import InputError
from xcompat.model import Cell


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
    runs = []
    for (platform, flavour), members in _groups(cells, build_frameworks).items():
        lead = members[0]
        ids: dict[str, list[str]] = {}
        archs: list[str] = []
        for cell in members:
            ids.setdefault(build_identifier(cell), []).append(cell.id)
            if cell.arch not in archs:
                archs.append(cell.arch)
        # The order of the variables is the order --print-config and build.json show them in.
        cibw: dict[str, str] = {
            "CIBW_BUILD": " ".join(ids),
            f"CIBW_ARCHS_{platform.upper()}": " ".join(archs),
            "CIBW_BUILD_VERBOSITY": "1",
        }
        if platform == "linux":
            cibw.update(_linux_options(members, env, excludes))
        elif platform == "macos":
            cibw.update(_macos_options(members))
        cibw.update(_toolkit_options(platform, lead))
        cibw.update(_framework_options(lead, build_frameworks, build_requirements, test_command, env))
        if test_command:
            cibw["CIBW_TEST_COMMAND"] = test_command
            if test_requires:
                cibw["CIBW_TEST_REQUIRES"] = " ".join(test_requires)
        runs.append(CibwRun(
            platform=platform, flavour=flavour, identifiers=tuple(ids),
            cells={k: tuple(v) for k, v in ids.items()}, env=cibw,
        ))
    return runs


def _groups(cells: Sequence[Cell], build_frameworks: Sequence[str]) -> dict[tuple[str, str], list[Cell]]:
    """The cells by (platform, flavour): one cibuildwheel run each."""
    groups: dict[tuple[str, str], list[Cell]] = {}
    for cell in cells:
        if cell.platform not in ("linux", "macos", "windows"):
            raise InputError(f"cell {cell.id}: unknown platform {cell.platform!r}")
        groups.setdefault((cell.platform, flavour_of(cell, build_frameworks)), []).append(cell)
    return groups


def _linux_options(members: Sequence[Cell], env: Mapping[str, str], excludes: Sequence[str]) -> dict[str, str]:
    """Images, container engine, auditwheel repair and the libc family not asked for."""
    lead = members[0]
    cibw: dict[str, str] = {}
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
    # PyPy and GraalPy are built only when enabled (cibuildwheel 3+): no skip for them (a
    # selector of a group not enabled draws a warning), only the libc family not asked for.
    families = {"musllinux" if (c.policy or "").startswith("musllinux") else "manylinux" for c in members}
    if families == {"manylinux"}:
        cibw["CIBW_SKIP"] = "*-musllinux_*"
    elif families == {"musllinux"}:
        cibw["CIBW_SKIP"] = "*-manylinux_*"
    return cibw


def _macos_options(members: Sequence[Cell]) -> dict[str, str]:
    """The deployment target and the delocate repair."""
    cibw: dict[str, str] = {}
    target = next((c.policy for c in members if c.policy), None)
    if target:
        cibw["MACOSX_DEPLOYMENT_TARGET"] = target
    repair = ["delocate-wheel", "--require-archs", "{delocate_archs}", "-w", "{dest_dir}", "-v"]
    for pattern in D.DELOCATE_EXCLUDES:
        repair += ["--exclude", shlex.quote(pattern)]
    cibw["CIBW_REPAIR_WHEEL_COMMAND_MACOS"] = " ".join(repair) + " {wheel}"
    return cibw


def _toolkit_options(platform: str, lead: Cell) -> dict[str, str]:
    """The GPU toolkit's build environment (``CIBW_ENVIRONMENT_<PLATFORM>``) of a GPU flavour."""
    build_env: dict[str, str] = {}
    if lead.backend == "cuda":
        build_env.update(D.TOOLKIT_ENV["cuda"])
        if lead.gpu_archs:
            build_env["TORCH_CUDA_ARCH_LIST"] = torch_cuda_arch_list(lead.gpu_archs)
    elif lead.backend == "rocm":
        build_env.update(D.TOOLKIT_ENV["rocm"])
        if lead.gpu_archs:
            build_env["PYTORCH_ROCM_ARCH"] = rocm_arch_list(lead.gpu_archs)
    if not build_env:
        return {}
    return {f"CIBW_ENVIRONMENT_{platform.upper()}": " ".join(f"{k}={_env_value(v)}" for k, v in build_env.items())}


def _framework_options(lead: Cell, build_frameworks: Sequence[str], build_requirements: Sequence[str],
                       test_command: str | None, env: Mapping[str, str]) -> dict[str, str]:
    """Build against the framework version the cell tests, not whatever an isolated build
    would download: install it (and the other build requirements) first."""
    pins = _framework_pins(lead, build_frameworks)
    if not pins:
        return {}
    pinned = {name for name, _ in pins}
    indexes: list[str] = []
    for name, _version in pins:
        index = framework_index(name, lead, env)
        if index:
            indexes += ["--extra-index-url", index]
    before = ["pip", "install", *_pip_pins(pins)]
    before += [r for r in build_requirements if _requirement_name(r) not in pinned]
    cibw = {"CIBW_BEFORE_BUILD": shlex.join(before + indexes), "CIBW_BUILD_FRONTEND": "build; args: --no-isolation"}
    if test_command:
        # The wheel is tested against the framework it was built against: installing the
        # wheel alone would pull the newest release, whose ABI a compiled op does not match.
        cibw["CIBW_BEFORE_TEST"] = shlex.join(["pip", "install", *_pip_pins(pins), *indexes])
    return cibw
