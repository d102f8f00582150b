"""Released wheels from the package index, fetched once with ``pip download`` and cached.

    from tests.helpers.wheels import fetch_wheel
    whl = fetch_wheel("numpy", "2.1.3")          # Path of the cp311 manylinux x86_64 wheel

Files land in ``${XCOMPAT_TEST_CACHE:-~/.cache/xcompat-tests}/downloads`` and are reused by later
runs. When the index cannot be reached the calling test is skipped with pip's last error line, so a
machine without network says why instead of failing for a reason unrelated to the code under test.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest


def download_dir() -> Path:
    root = os.environ.get("XCOMPAT_TEST_CACHE") or str(Path.home() / ".cache" / "xcompat-tests")
    path = Path(root) / "downloads"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _normalise(name: str) -> str:
    return name.replace("-", "_").lower()


def _find_wheel(folder: Path, name: str, version: str) -> Path | None:
    for path in sorted(folder.glob("*.whl")):
        dist, _, rest = path.name.partition("-")
        if _normalise(dist) == _normalise(name) and rest.startswith((f"{version}-", f"{version}+")):
            return path
    return None


def _pip_download(args: list[str], what: str) -> None:
    folder = download_dir()
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
             "-d", str(folder), *args],
            capture_output=True, text=True, timeout=1800, check=False,
        )
    if proc.returncode != 0:
        lines = [line for line in (proc.stderr or proc.stdout).splitlines() if line.strip()]
        pytest.skip(f"cannot download {what} from the package index: {lines[-1] if lines else 'pip failed'}")


# pip matches --platform tags literally, so every manylinux tag an x86_64 glibc 2.28 system accepts
# that releases use is listed.
MANYLINUX_X86_64 = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")


def fetch_wheel(name: str, version: str, *, platforms: tuple[str, ...] = MANYLINUX_X86_64, python: str = "3.11") -> Path:
    """The released wheel ``name==version`` for CPython ``python`` on one of ``platforms``."""
    folder = download_dir()
    found = _find_wheel(folder, name, version)
    if found is not None:
        return found
    abi = "cp" + python.replace(".", "")
    platform_args = [arg for platform in platforms for arg in ("--platform", platform)]
    _pip_download(["--only-binary", ":all:", *platform_args, "--python-version", python,
                   "--implementation", "cp", "--abi", abi, f"{name}=={version}"], f"{name} {version} ({abi}, x86_64)")
    found = _find_wheel(folder, name, version)
    assert found is not None, f"pip reported {name} {version} downloaded but no wheel is in {folder}"
    return found
