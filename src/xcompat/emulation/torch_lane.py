"""torch in an emulated root, for the conformance kernels (``xcompat kernels run``) on a lane.

The torch wheel of the lane's arch is downloaded once on the host (pip, for the root's
platform and Python; no emulation) into the tier cache, then installed into the root's venv by
the root's own pip, so that the wheel's dependencies are chosen for the root's platform (pip on
the host would read torch's ``platform_machine`` markers as the host's and pull CUDA libraries).
``ninja`` goes in too: torch's C++ extension loader needs it to build the kernels in the root;
and hypothesis and numpy, for a project's torch tests written with ``xcompat.testing``.

The version is the arch's ``torch`` in ``arches.json``: a CPU build (PyPI's aarch64 wheels of
later releases are CUDA builds that need NVIDIA's libraries). An arch without one (ppc64le,
s390x: PyPI has no torch for them) has no torch, and its lane's kernels are not run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

from xcompat.emulation.arches import Arch
from xcompat.emulation.chroot import Bind, RootRun, run_in_root
from xcompat.emulation.roots import _locked, cache_dir
from xcompat.errors import ToolError

# what the kernels need besides torch: ninja for torch's cpp_extension.load (the root has the
# compiler), numpy for the reference values; and hypothesis, which with numpy is what
# xcompat.testing's tensor strategies need (the xcompat[testing] extra) for a project's torch tests
EXTRA = ("ninja", "numpy", "hypothesis>=6.100")
STAMP = ".xcompat-torch"
INSTALL_TIMEOUT_S = 1800


def torch_version(row: Arch) -> str | None:
    """The torch release the lane of ``row`` installs (None: none for that arch)."""
    text = resources.files("xcompat.emulation").joinpath("arches.json").read_text(encoding="utf-8")
    value = json.loads(text)["arches"].get(row.name, {}).get("torch")
    return value if isinstance(value, str) else None


def wheel_dir(row: Arch, python: str) -> Path:
    return cache_dir().parent / "wheels" / f"{row.name}-cp{python.replace('.', '')}"


def site_packages(root: Path, venv: str, python: str) -> Path:
    return root / venv.lstrip("/") / "lib" / f"python{python}" / "site-packages"


def torch_wheel(row: Arch, python: str, version: str) -> Path:
    """The cached torch wheel for ``row`` and ``python``, downloaded by the host's pip when missing."""
    folder = wheel_dir(row, python)
    pattern = f"torch-{version}-cp{python.replace('.', '')}-*_{row.name}.whl"
    found = sorted(folder.glob(pattern))
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    tag = python.replace(".", "")
    with tempfile.TemporaryDirectory(dir=folder, prefix=".download-") as tmp:
        argv = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                "--implementation", "cp", "--abi", f"cp{tag}", "--python-version", python,
                "--platform", f"manylinux_2_28_{row.name}", "--platform", f"manylinux2014_{row.name}",
                "--dest", tmp, f"torch=={version}"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False)
        got = sorted(Path(tmp).glob(pattern))
        if done.returncode != 0 or not got:
            tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-2:])[:300]
            raise ToolError(f"could not download torch {version} for {row.name} (Python {python}): {tail}",
                            hint=f"put {pattern} in {folder}, or check that pip reaches the package index")
        os.replace(got[0], folder / got[0].name)
        return folder / got[0].name


def ensure_torch(root: Path, venv: str, python: str, row: Arch) -> None:
    """torch (and ninja) in the root's venv, installed once from the cached wheel."""
    version = torch_version(row)
    if version is None:
        raise ToolError(f"no torch wheel for {row.name}: PyPI publishes torch for x86_64 and aarch64 only")
    site = site_packages(root, venv, python)
    wanted = " ".join([f"torch=={version}", *EXTRA])
    if has_torch(site, wanted):
        return
    with _locked(root.with_name(root.name + "-torch")):
        if has_torch(site, wanted):
            return
        wheel = torch_wheel(row, python, version)
        inside = "/var/cache/xcompat-wheels"
        run = RootRun(root=root, binds=(Bind(wheel.parent, inside, read_only=True),))
        argv = [f"{venv}/bin/python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                "--only-binary=:all:", f"{inside}/{wheel.name}", *EXTRA]
        done = run_in_root(run, argv, timeout=INSTALL_TIMEOUT_S)
        if done.returncode != 0 or not (site / "torch").is_dir():
            shutil.rmtree(site / "torch", ignore_errors=True)  # a half install must not read as torch
            tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])[:400]
            raise ToolError(f"could not install torch {version} in the emulated {row.name} root: {tail}",
                            hint="check that pip in the root reaches the package index")
        (site / STAMP).write_text(wanted + "\n", encoding="utf-8")


def has_torch(site: Path, wanted: str | None = None) -> bool:
    """Whether ``site`` holds the lane's torch install (``wanted``: exactly that one)."""
    stamp = site / STAMP
    if not ((site / "torch").is_dir() and stamp.is_file()):
        return False
    return wanted is None or stamp.read_text(encoding="utf-8").strip() == wanted
