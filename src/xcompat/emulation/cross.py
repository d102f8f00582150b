"""Building a wheel for an emulated root's architecture on the host, with a cross compiler.

Compiling under emulation is what makes emulated lanes slow (a build that takes seconds
natively takes many minutes in QEMU); so, as crossenv and conda-forge's cross-python do, the
build runs on the host: a host Python of the root's minor version runs the build backend, the
target's build settings (``EXT_SUFFIX``, ``SOABI``, compiler and linker commands) come from the
root's ``_sysconfigdata`` module, its headers come from the root, and Debian's
``crossbuild-essential-<arch>`` compiler does the compiling. Only what must execute (tests,
kernels, imports) then runs under emulation.

A project whose build runs target code (a build step that imports the built extension, a
setup.py that needs the target's torch) cannot be cross built; :func:`cross_build` then
raises :class:`CrossUnavailable` and the caller builds inside the root instead. A build that
compiles against torch is refused up front where the arch has a torch (arches.json): the host's
torch is another architecture's and release, and the headers and ``libtorch`` it would compile
and link against must be the target's own, the ones its tests then load.
"""

from __future__ import annotations

import ast
import hashlib
import os
import pprint
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xcompat.emulation.arches import Arch, host_arch
from xcompat.emulation.roots import root_python
from xcompat.emulation.torch_lane import torch_version
from xcompat.errors import XcompatError

# build_time_vars entries that hold the target's header folders. Library folders stay as they
# are: a -L into the root would make the cross linker read the root's C library scripts,
# whose absolute paths name the root's files as if it were the host's.
_PATH_KEYS = ("INCLUDEPY", "CONFINCLUDEPY", "INCLUDEDIR", "CONFINCLUDEDIR")
# build_time_vars entries that are compiler or linker commands
_COMMAND_KEYS = ("CC", "CXX", "LDSHARED", "LDCXXSHARED", "BLDSHARED", "CPP")


class CrossUnavailable(XcompatError):
    """This project or machine cannot cross build for the root; build inside it instead."""

    exit_code = 5
    label = "cross build unavailable"


@dataclass(frozen=True)
class CrossSetup:
    python: str  # the host interpreter that runs the build backend
    env: dict[str, str]  # what its build needs in the environment
    compiler: str  # the cross C compiler


def host_python(version: str) -> str:
    """A host interpreter of ``version`` ("3.11"): this one, or python3.X on PATH."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return sys.executable
    found = shutil.which(f"python{version}")
    if found is None:
        raise CrossUnavailable(f"no host Python {version} to run the cross build",
                               hint=f"install python{version} on the host, or let the build run emulated")
    return found


def _sysconfigdata(root: Path, arch: Arch, version: str) -> Path:
    folder = root / "usr" / "lib" / f"python{version}"
    # the name CPython itself imports (_sysconfigdata_{abiflags}_linux_{multiarch}) first;
    # Debian also ships a short alias without the platform
    found = sorted(folder.glob(f"_sysconfigdata_*_linux_{arch.triplet}.py")) or \
        sorted(folder.glob(f"_sysconfigdata_*{arch.triplet}.py"))
    if not found:
        raise CrossUnavailable(f"the root has no _sysconfigdata for {arch.triplet} in {folder}")
    return found[0]


def _retarget(command: str, arch: Arch, compilers: Mapping[str, str]) -> str:
    """``gcc -shared ...`` or ``aarch64-linux-gnu-gcc ...`` -> the host's cross compiler."""
    words = command.split()
    if not words:
        return command
    tool = words[0].rsplit("/", 1)[-1]
    plain = tool.removeprefix(arch.triplet + "-")
    plain = re.sub(r"-\d+$", "", plain)  # gcc-12 -> gcc
    if plain in compilers:
        words[0] = compilers[plain]
    return " ".join(words)


def _read_vars(source: Path) -> dict[str, Any]:
    """``build_time_vars`` of a _sysconfigdata module, read as data (it is one dict literal)."""
    tree = ast.parse(source.read_text(encoding="utf-8"), str(source))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "build_time_vars"
                                                for t in node.targets):
            value = ast.literal_eval(node.value)
            if isinstance(value, dict):
                return value
    raise CrossUnavailable(f"{source} holds no build_time_vars dict")


def patched_vars(source: Path, root: Path, arch: Arch, compilers: Mapping[str, str]) -> dict[str, Any]:
    values = _read_vars(source)
    for key in _PATH_KEYS:
        if isinstance(values.get(key), str) and values[key].startswith("/"):
            values[key] = str(root) + values[key]
    for key in _COMMAND_KEYS:
        if isinstance(values.get(key), str):
            values[key] = _retarget(values[key], arch, compilers)
    return values


def cross_setup(root: Path, arch: Arch, workdir: Path) -> CrossSetup:
    """What a host build for ``arch`` needs; CrossUnavailable when this machine cannot."""
    compilers = {name: shutil.which(f"{arch.triplet}-{name}") for name in ("gcc", "g++", "cpp")}
    if compilers["gcc"] is None:
        raise CrossUnavailable(f"no cross compiler {arch.triplet}-gcc on PATH",
                               hint=f"apt-get install crossbuild-essential-{arch.debian}")
    found = {k: v for k, v in compilers.items() if v}
    found.setdefault("c++", found.get("g++", ""))
    version = root_python(root)
    python = host_python(version)
    source = _sysconfigdata(root, arch, version)
    values = patched_vars(source, root, arch, {"gcc": found["gcc"], "cc": found["gcc"], "g++": found.get("g++", ""),
                                               "c++": found["c++"], "cpp": found.get("cpp", "")})
    workdir.mkdir(parents=True, exist_ok=True)
    module = source.stem
    (workdir / f"{module}.py").write_text("build_time_vars = " + pprint.pformat(values) + "\n", encoding="utf-8")
    includes = [root / "usr" / "include" / f"python{version}",
                root / "usr" / "include" / arch.triplet / f"python{version}", root / "usr" / "include"]
    # the root's headers last: Debian's pyconfig.h includes <TRIPLET/python3.X/pyconfig.h>,
    # and the cross compiler's own C library headers stay first
    flags = " ".join([*(f"-I{p}" for p in includes[:2]), f"-idirafter{includes[2]}"])
    env = {
        "_PYTHON_HOST_PLATFORM": arch.platform_tag,
        "_PYTHON_SYSCONFIGDATA_NAME": module,
        "PYTHONPATH": os.pathsep.join(filter(None, (str(workdir), os.environ.get("PYTHONPATH", "")))),
        "CC": found["gcc"], "CXX": found.get("g++", found["gcc"]), "LDSHARED": values.get("LDSHARED", ""),
        "CFLAGS": flags, "CXXFLAGS": flags, "CPPFLAGS": flags,
    }
    return CrossSetup(python=python, env=env, compiler=found["gcc"])


# Build requirements whose target-architecture build a host cannot provide: a project that
# compiles against them is built in the root instead.
TARGET_ONLY = ("torch", "tensorflow", "jax", "jaxlib")
_MAX_PYPROJECT = 1 << 20


def torch_build(project: Path) -> str | None:
    """Why ``project``'s build compiles against torch (None: it does not), as ``xcompat build``
    decides it: torch in its ``[build-system] requires``, or a setup.py that imports torch."""
    from xcompat.builder.requirements import build_frameworks

    found = build_frameworks(project)
    if "torch" in found.required:
        return "torch is in its [build-system] requires"
    if "torch" in found.imported:
        return "its setup.py imports torch"
    return None


def refuse_torch_build(project: Path, arch: Arch) -> None:
    """CrossUnavailable when ``project`` compiles against torch and ``arch`` has a torch: the
    host's torch is of another architecture (and release), so the build runs in the root
    against the lane's. Where the arch has no torch the torch-free cross build goes on."""
    why = torch_build(project)
    version = torch_version(arch)
    if why is None or version is None:
        return
    raise CrossUnavailable(f"the build compiles against torch ({why}): a cross build would compile and link "
                           f"against this machine's {host_arch()} torch, not the lane's {arch.name} torch {version}")


def requirement_name(requirement: str) -> str:
    """``torch>=2.4; python_version < '4'`` -> ``torch``."""
    return re.split(r"[<>=!~;\[ (]", requirement.strip(), maxsplit=1)[0].lower()


def build_requirements(project: Path) -> list[str]:
    """``[build-system] requires`` of ``project`` (setuptools when it has none)."""
    path = project / "pyproject.toml"
    if not path.is_file():
        return ["setuptools>=40.8.0", "wheel"]
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        with open(path, "rb") as handle:
            raw = handle.read(_MAX_PYPROJECT + 1)
        if len(raw) > _MAX_PYPROJECT:
            raise ValueError(f"larger than {_MAX_PYPROJECT} bytes")
        data = tomllib.loads(raw.decode("utf-8"))
    except (OSError, ValueError) as err:
        raise CrossUnavailable(f"cannot read {path}: {err}") from None
    requires = data.get("build-system", {}).get("requires", ["setuptools>=40.8.0", "wheel"])
    return [str(r) for r in requires if isinstance(r, str)]


def _host_build_env(python: str, requires: list[str], base: Path) -> Path:
    """A host venv holding ``requires`` (made once per interpreter and list): the build runs in
    it without pip's isolation, which would hide the target's build settings from it."""
    kept = sorted(r for r in requires if requirement_name(r) not in TARGET_ONLY)
    key = hashlib.sha256("\n".join([python, *kept]).encode()).hexdigest()[:16]
    venv = base / key
    stamp = venv / ".xcompat-ready"
    if stamp.is_file():
        return venv
    if venv.exists():
        shutil.rmtree(venv)
    for argv in ([python, "-m", "venv", str(venv)],
                 [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                  "wheel", *kept]):
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise CrossUnavailable(f"cannot install the build requirements on the host: "
                                   f"{(done.stderr or done.stdout).strip()[-300:]}")
    stamp.write_text(key + "\n", encoding="utf-8")
    return venv


def cross_build(project: Path, root: Path, arch: Arch, out: Path, workdir: Path, *,
                extra_env: Mapping[str, str] | None = None, timeout: float = 1800, torch: bool = True) -> Path:
    """Build ``project``'s wheel for ``arch`` on the host into ``out``; the wheel's path.
    ``torch``: False when ``extra_env`` turns the project's torch part off (see build_for_lane)."""
    if torch:
        refuse_torch_build(project, arch)
    setup = cross_setup(root, arch, workdir / "sysconfig")
    cache = Path(os.environ.get("XCOMPAT_CACHE") or Path.home() / ".cache" / "xcompat") / "emulation" / "build-envs"
    venv = _host_build_env(setup.python, build_requirements(project), cache)
    python = str(venv / "bin" / "python")
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **setup.env, **(extra_env or {})}
    argv = [python, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--disable-pip-version-check",
            "-w", str(out), str(project)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    log = workdir / "cross-build.log"
    log.write_text(done.stdout + "\n" + done.stderr, encoding="utf-8")
    wheels = sorted(out.glob(f"*{arch.name}*.whl"))
    if done.returncode != 0 or not wheels:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])[:400]
        raise CrossUnavailable(f"the cross build for {arch.name} failed ({tail})",
                               hint=f"see {log}; the build runs emulated instead")
    return wheels[-1]
