"""The bundled sample project, built once and cached for every test and benchmark.

    from tests.helpers.sample import build_sample_wheel, sample_wheels, install_sample
    wheel = build_sample_wheel("v1")          # Path of the repaired wheel (auditwheel, torch excluded)
    record = sample_build_record("v1")        # its build.json (dict)
    target = install_sample("v2")             # folder with the wheel installed (pip --target), for PYTHONPATH

Wheels are built through ``xcompat.builder.build_project`` (the native backend: python -m
build against the installed torch, auditwheel repair, audits) from a copy of the sources,
into ``${XCOMPAT_TEST_CACHE:-~/.cache/xcompat-tests}/sample-<variant>-<hash>/``. The hash
covers the sample sources, xcompat's build code, the Python, torch, gcc and nvcc versions,
so a change to any of them rebuilds and nothing else does. An fcntl lock keeps concurrent
test processes from building the same variant twice.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
VARIANTS = {"v1": "sample-ext", "v2": "sample-ext-v2"}
# Not part of the build: tests, other tools' configuration, build leftovers.
_IGNORED = {"tests", ".xcompat", "build", "dist", "__pycache__", ".pytest_cache"}


def cache_root() -> Path:
    root = os.environ.get("XCOMPAT_TEST_CACHE") or str(Path.home() / ".cache" / "xcompat-tests")
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def sample_project(variant: str = "v1") -> Path:
    """Source folder of a sample variant (``v1`` or ``v2``)."""
    try:
        return EXAMPLES / VARIANTS[variant]
    except KeyError:
        raise ValueError(f"unknown sample variant {variant!r}; use one of {sorted(VARIANTS)}") from None


def _source_files(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if d not in _IGNORED and not d.endswith(".egg-info"))
        for name in sorted(filenames):
            if not name.endswith((".pyc", ".so", ".o")):
                yield Path(dirpath) / name


def _tool_version(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "absent"
    lines = [line for line in out.splitlines() if line.strip()]
    return lines[-1] if argv[0].endswith("nvcc") and lines else (lines[0] if lines else "absent")


@cache
def _toolchain_fingerprint() -> str:
    from importlib import metadata

    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "absent"

    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    parts = [
        sys.version,
        version("torch"),
        version("setuptools"),
        version("auditwheel"),
        _tool_version(["gcc", "--version"]),
        _tool_version([nvcc, "--version"]) if Path(nvcc).exists() else "no-nvcc",
        os.environ.get("SAMPLE_EXT_CUDA", ""),
    ]
    return "\n".join(parts)


@cache
def sample_hash(variant: str = "v1") -> str:
    """Hash of everything that decides the sample wheel's bytes."""
    digest = hashlib.sha256()
    root = sample_project(variant)
    for path in _source_files(root):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    # The build code behind the wheel and its build.json (the cibuildwheel driver is not used).
    build_code = [p for p in sorted((REPO / "src" / "xcompat" / "build").glob("*.py")) if p.name != "cibw.py"]
    for path in [*build_code, REPO / "schemas" / "build.schema.json"]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(_toolchain_fingerprint().encode())
    return digest.hexdigest()[:16]


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def sample_build_dir(variant: str = "v1") -> Path:
    """Cached folder holding the repaired wheel, ``build.json`` and the build log; built on first use."""
    root = cache_root()
    final = root / f"sample-{variant}-{sample_hash(variant)}"
    if (final / "build.json").is_file():
        return final
    with _locked(root / f"sample-{variant}.lock"):
        if (final / "build.json").is_file():
            return final
        from xcompat.builder import build_project

        with tempfile.TemporaryDirectory(prefix=f".sample-{variant}-", dir=root) as tmp:
            src = Path(tmp) / "src"
            # A copy: the build writes build/ and *.egg-info next to setup.py, and v2
            # shares v1's sources through symlinks (followed here).
            shutil.copytree(
                sample_project(variant), src, symlinks=False,
                ignore=shutil.ignore_patterns(*_IGNORED, "*.egg-info", "*.so", "*.o"),
            )
            out = Path(tmp) / "out"
            build_project(src, out)
            shutil.rmtree(final, ignore_errors=True)
            os.replace(out, final)
        _prune(root, variant, keep=final)
    return final


# Builds of older sources/toolchains kept besides the current one (others may still use them).
_KEEP_OLD_BUILDS = 3


def _prune(root: Path, variant: str, *, keep: Path) -> None:
    old = sorted((p for p in root.glob(f"sample-{variant}-*") if p.is_dir() and p != keep),
                 key=lambda p: p.stat().st_mtime, reverse=True)
    for path in old[_KEEP_OLD_BUILDS:]:
        shutil.rmtree(path, ignore_errors=True)


def sample_build_record(variant: str = "v1") -> dict[str, Any]:
    return json.loads((sample_build_dir(variant) / "build.json").read_text(encoding="utf-8"))


def build_sample_wheel(variant: str = "v1") -> Path:
    """Path of the repaired sample wheel (built once per source/toolchain hash)."""
    folder = sample_build_dir(variant)
    wheels = sorted(folder.glob("*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"expected one wheel in {folder}, found {[w.name for w in wheels]}")
    return wheels[0]


def sample_wheels() -> dict[str, Path]:
    return {variant: build_sample_wheel(variant) for variant in VARIANTS}


def install_sample(variant: str = "v1") -> Path:
    """A folder with the sample wheel installed by ``pip install --no-deps --target``;
    put it on PYTHONPATH (torch comes from the running environment)."""
    wheel = build_sample_wheel(variant)
    target = wheel.parent / "site"
    if (target / ".complete").is_file():
        return target
    with _locked(wheel.parent.parent / f"sample-{variant}.lock"):
        if (target / ".complete").is_file():
            return target
        shutil.rmtree(target, ignore_errors=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile",
             "--target", str(target), str(wheel)],
            check=True,
        )
        (target / ".complete").write_text("ok\n")
    return target
