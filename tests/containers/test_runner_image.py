"""The CPU runner image (images/runner-cpu.Dockerfile), built by the tier FROM the local
Debian base with torch from the local wheel folder: xcompat and torch work in it."""

from __future__ import annotations

import os
import subprocess

import pytest


def docker(*args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def runner() -> str:
    return os.environ["XCOMPAT_RUNNER_IMAGE"]


def test_runner_has_xcompat_and_the_cpu_torch_of_the_wheel_folder(runner: str) -> None:
    from importlib.metadata import version

    code = ("import torch, xcompat; x = torch.arange(4.0); assert float((x * x).sum()) == 14.0; "
            "print(torch.__version__); print(xcompat.__file__)")
    proc = docker("run", "--rm", runner, "sh", "-c", f"xcompat --version && python -c '{code}'")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.split()
    assert lines[0] == "xcompat" and lines[1] == version("xcompat")
    assert lines[2] == version("torch")  # the host's CPU build, e.g. 2.13.0+cpu
    assert lines[3].startswith("/opt/venv/")


def test_runner_has_the_toolchain_for_jit_builds(runner: str) -> None:
    """What the image is for: building extensions against its torch (g++, ninja, ccache and
    torch's headers)."""
    script = ("import os, torch.utils.cpp_extension as ext; "
              "print(all(os.path.isfile(os.path.join(d, 'torch', 'extension.h')) for d in ext.include_paths()[:1]))")
    proc = docker("run", "--rm", runner, "sh", "-c",
                  f"for tool in g++ ninja ccache patchelf git; do command -v $tool || exit 1; done; "
                  f"python -c \"{script}\"")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.split()
    assert len(lines) == 6 and lines[-1] == "True", proc.stdout


def test_runner_base_is_the_build_argument(runner: str) -> None:
    """Built FROM the local base: its python is Debian's, not the public image's /usr/local one."""
    proc = docker("run", "--rm", runner, "sh", "-c", "readlink -f /opt/venv/bin/python; cat /etc/debian_version")
    assert proc.returncode == 0, proc.stderr
    python, debian = proc.stdout.split()
    assert python.startswith("/usr/bin/python3") and debian.startswith("12.")
