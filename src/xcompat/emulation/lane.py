"""An emulated lane: a cell of another architecture run on this machine.

Host folders are bound into the root at the same absolute paths, so the commands a stage
runs on the host (``python -m xcompat test … --json OUT/test.json``) run unchanged inside
the root: only the interpreter changes, to the root's venv, which holds xcompat's runtime
needs and pytest (made once per root and requirement list). xcompat itself is a copy of the
running package, bound in read-only, so the lane runs exactly this xcompat; the copy carries
its package metadata, so pytest there loads xcompat's plugin as an installed xcompat's.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import xcompat
from xcompat.emulation.arches import Arch, arch, host_arch
from xcompat.emulation.binfmt import Emulator, emulator
from xcompat.emulation.chroot import ROOT_PATH, Bind, RootRun, command, prepare, run_in_root
from xcompat.emulation.roots import DEFAULT_SUITE, RootSpec, ensure_root, root_python
from xcompat.errors import ToolError
from xcompat.resources import data_dir

VENV = "/opt/xcompat-venv"
# What `xcompat test` and `xcompat kernels` import in the root, besides the standard library.
RUNTIME_REQUIREMENTS = ("pytest>=8", "pytest-timeout>=2.3", "jsonschema>=4.18")
# Environment a stage sets that means the same inside the root; the rest is the host's own.
_ENV_PREFIXES = ("XCOMPAT_", "PYTHON", "PYTEST_", "SAMPLE_EXT_", "OMP_", "MKL_")


@dataclass(frozen=True)
class Lane:
    arch: Arch
    root: Path
    emulator: Emulator
    cpu: str  # the QEMU CPU model the lane's processes see
    floor: str | None  # the ISA level that model stands for (None: the feature-rich model)
    python: str  # the root's Python, "3.11"
    suite: str

    @property
    def interpreter(self) -> str:
        return f"{VENV}/bin/python"

    def describe(self) -> dict[str, Any]:
        """What a result records of how its cell ran."""
        return {"arch": self.arch.name, "qemu": self.emulator.version, "cpu": self.cpu,
                "floor": self.floor, "root": f"debian {self.suite}", "python": self.python}

    def root_run(self, binds: Sequence[Path] = (), env: Mapping[str, str] | None = None) -> RootRun:
        seen = dict.fromkeys(Path(os.path.abspath(b)) for b in binds)
        return RootRun(root=self.root, binds=tuple(Bind(p, str(p)) for p in seen), cpu=self.cpu,
                       env=dict(env or {}))

    def wrap(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, binds: Sequence[Path]) -> list[str]:
        """The host command that runs ``argv`` (a Python command line: ``argv[0]`` is an
        interpreter) in the root, with ``binds`` and ``cwd`` at their host paths."""
        passed = {k: v for k, v in env.items() if k.startswith(_ENV_PREFIXES)}
        passed["PATH"] = f"{VENV}/bin:{ROOT_PATH}"  # as in an activated venv: its tools (ninja) first
        return command(self.root_run([*binds, cwd], passed), [self.interpreter, *argv[1:]], cwd=str(cwd))


def _venv_stamp(requirements: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(sorted(requirements)).encode()).hexdigest()[:16]


def ensure_venv(root: Path, requirements: Sequence[str] = RUNTIME_REQUIREMENTS, *, timeout: float = 1800) -> None:
    """The root's venv with ``requirements``, made once (pip runs emulated: minutes)."""
    stamp = root / VENV.lstrip("/") / ".xcompat-requirements"
    wanted = _venv_stamp(requirements)
    if stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == wanted:
        return
    run = RootRun(root=root)
    for argv in (["python3", "-m", "venv", "--clear", VENV],
                 [f"{VENV}/bin/python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                  "--only-binary=:all:", *requirements]):
        done = run_in_root(run, argv, timeout=timeout)
        if done.returncode != 0:
            tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])[:400]
            raise ToolError(f"could not make the emulated root's venv ({' '.join(argv[:4])}…): {tail}",
                            hint="check that pip in the root reaches the package index")
    stamp.write_text(wanted + "\n", encoding="utf-8")


# xcompat's pytest plugins, as pyproject.toml's [project.entry-points.pytest11] names them: pytest
# finds plugins by entry point, so the copy carries them in a .dist-info of its own
PYTEST_PLUGINS = {"xcompat": "xcompat.testing.plugin"}


def _dist_info(target: Path) -> Path:
    """The copy's package metadata: enough for importlib.metadata to find xcompat on
    PYTHONPATH and for pytest to load its plugin (the ``device`` fixture) as it does where
    xcompat is installed."""
    info = target / f"xcompat-{xcompat.__version__}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: xcompat\nVersion: {xcompat.__version__}\n",
                                   encoding="utf-8")
    plugins = [f"{name} = {module}" for name, module in PYTEST_PLUGINS.items()]
    (info / "entry_points.txt").write_text("\n".join(["[pytest11]", *plugins]) + "\n", encoding="utf-8")
    return info


def xcompat_copy(workdir: Path) -> Path:
    """A folder holding a copy of the running xcompat package, for the root's PYTHONPATH, with
    its package metadata (its pytest plugin loads there as from an installed xcompat)."""
    source = Path(xcompat.__file__).resolve().parent
    target = workdir / "xcompat-pkg"
    if target.exists():
        shutil.rmtree(target)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(source, target / "xcompat", ignore=ignore)
    data = target / "xcompat" / "_data"
    for name in ("schemas", "kernels"):  # what the stages run in the root read
        if not (data / name).is_dir():
            shutil.copytree(data_dir(name), data / name, ignore=ignore)
    _dist_info(target)
    return target


def open_lane(name: str, *, floor: str | None = None, suite: str = DEFAULT_SUITE,
              requirements: Sequence[str] = RUNTIME_REQUIREMENTS) -> Lane:
    """Make (or reuse) everything a lane of ``name`` needs: the QEMU handler, the root, its venv."""
    row = arch(name)
    emu = emulator(row)
    root = ensure_root(RootSpec(row, suite))
    prepare(root)
    ensure_venv(root, requirements)
    return Lane(arch=row, root=root, emulator=emu, cpu=row.cpu_model(floor), floor=floor,
                python=root_python(root), suite=suite)


def timed(func: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    value = func(*args, **kwargs)
    return value, time.perf_counter() - start


def host_floor_command(argv: Sequence[str], floor: str) -> list[str]:
    """``argv`` run on this machine's own architecture under QEMU with the CPU model of
    ``floor`` (x86-64-v2 -> Nehalem): what the tests reach above the floor dies with SIGILL.
    Processes the command forks stay under QEMU; a program it execs runs natively."""
    row = arch(host_arch())
    model = row.cpu_model(floor)
    qemu = shutil.which(f"qemu-{row.qemu}-static") or shutil.which(f"qemu-{row.qemu}")
    if qemu is None:
        raise ToolError(f"a run at the {floor} floor needs qemu-{row.qemu}-static",
                        hint="install qemu-user-static (Debian/Ubuntu)")
    return [qemu, "-cpu", model, *argv]
