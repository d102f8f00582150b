"""Shared helpers for the kernel, device and probe tests.

Compiled artifacts (the JIT-built kernel library, nvcc objects) are cached under
``${XCOMPAT_TEST_CACHE:-~/.cache/xcompat-tests}`` keyed by a hash of their inputs, so a
test session builds each of them at most once and later sessions reuse them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from xcompat.devices.base import Availability
from xcompat.resources import data_dir, repo_root

ROOT = repo_root() or Path(__file__).resolve().parents[2]
KERNELS = data_dir("kernels")


def artifact_cache() -> Path:
    base = os.environ.get("XCOMPAT_TEST_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "xcompat-tests")
    path = Path(base)
    path.mkdir(parents=True, exist_ok=True)
    return path


def kernel_cache() -> Path:
    """The XCOMPAT_CACHE the kernel tests build into (shared by subprocesses)."""
    path = artifact_cache() / "xcompat-cache"
    path.mkdir(parents=True, exist_ok=True)
    return path


def subprocess_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["XCOMPAT_CACHE"] = str(kernel_cache())
    env.pop("XCOMPAT_KERNELS_ISA", None)
    env.update(extra)
    return env


def run_cli(args: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "xcompat", *args],
        capture_output=True,
        text=True,
        env=dict(env) if env is not None else subprocess_env(),
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )


def nvcc() -> str | None:
    return shutil.which("nvcc")


def cached_nvcc_object(source: Path, gencodes: Sequence[str], *, extra: Sequence[str] = ()) -> Path:
    """``nvcc -c`` ``source`` for ``gencodes`` (e.g. ``80``, ``90``); cached by source, flags and nvcc version."""
    exe = nvcc()
    assert exe is not None
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True).stdout
    flags = ["-c", "-O3", "-std=c++17", "-Xcompiler", "-fPIC", *extra]
    for g in gencodes:
        flags += ["-gencode", f"arch=compute_{g},code=sm_{g}"]
    h = hashlib.sha256()
    for part in (version, " ".join(flags)):
        h.update(part.encode())
    for path in sorted(source.parent.glob("*")):
        if path.is_file():
            h.update(path.name.encode())
            h.update(path.read_bytes())
    out = artifact_cache() / "nvcc" / f"{source.stem}-{h.hexdigest()[:16]}.o"
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp.o")
        subprocess.run([exe, *flags, str(source), "-o", str(tmp)], check=True, capture_output=True, text=True)
        tmp.replace(out)
    return out


class FakeBackend:
    """A backend whose probe answer is fixed: stands in for GPUs this machine lacks."""

    def __init__(self, name: str, available: bool, reason: str = "", device: str | None = None) -> None:
        self.name = name
        self.torch_device = device or ("cuda" if name == "rocm" else name)
        self._available = available
        self._reason = reason or (f"{name} fake available" if available else f"{name} fake absent")
        self.calls = 0

    def probe(self, env: Mapping[str, str]) -> Availability:
        self.calls += 1
        return Availability(backend=self.name, available=self._available, reason=self._reason)  # type: ignore[arg-type]


def fake_registry(**available: bool) -> dict[str, Any]:
    return {name: FakeBackend(name, available.get(name, name == "cpu")) for name in ("cpu", "cuda", "rocm", "mps")}
