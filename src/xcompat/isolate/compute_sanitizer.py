"""``--deep compute-sanitizer``: each test in its own ``compute-sanitizer`` process.

The defaults are wrong for CI and are overridden here: ``--error-exitcode`` is 0 unless
set, leak checking is off unless ``--leak-check full``, and PyTorch's caching allocator
hides out-of-bounds accesses inside its pooled blocks unless
``PYTORCH_NO_CUDA_MEMORY_CACHING=1``. Expandable segments give false "Invalid __global__
write" reports, so they are switched off too. The PyPI wheel ``nvidia-cuda-sanitizer-api``
ships the executable; it is looked up next to nvcc and in that wheel as well as on PATH.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace

from xcompat.errors import UnavailableError
from xcompat.isolate.sanitizers import Finding, parse_compute_sanitizer

SANITIZER_FLAGS = (
    "--tool",
    "memcheck",
    "--leak-check",
    "full",
    "--error-exitcode",
    "1",
    "--show-backtrace",
    "yes",
)
SANITIZER_ENV = {
    "PYTORCH_NO_CUDA_MEMORY_CACHING": "1",
    "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False",
    "CUDA_LAUNCH_BLOCKING": "1",
}


def find_compute_sanitizer(env: Mapping[str, str]) -> str | None:
    """PATH, CUDA_HOME/CUDA_PATH, then the pip wheel (``nvidia/cu13/bin/compute-sanitizer``):
    the search lives with the toolkit discovery in :mod:`xcompat.devices.toolkit`."""
    from xcompat.devices.toolkit import find_compute_sanitizer as find

    return find(env)


def sanitizer_command(tool: str, nodeid: str, args: Sequence[str]) -> list[str]:
    return [
        tool,
        *SANITIZER_FLAGS,
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        *args,
        nodeid,
    ]


def run_compute_sanitizer(
    nodeids: Sequence[str],
    *,
    args: Sequence[str] = (),
    timeout_s: float | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, list[Finding]]:
    env = dict(os.environ if env is None else env)
    tool = find_compute_sanitizer(env)
    if tool is None:
        raise UnavailableError(
            "compute-sanitizer is not installed",
            hint="pip install nvidia-cuda-sanitizer-api, or put the CUDA toolkit's compute-sanitizer on PATH",
        )
    run_env = {**env, **SANITIZER_ENV}
    per_test: dict[str, list[Finding]] = {}
    for nodeid in nodeids:
        try:
            proc = subprocess.run(
                sanitizer_command(tool, nodeid, args),
                env=run_env,
                capture_output=True,
                check=False,
                text=True,
                timeout=timeout_s * 20 if timeout_s else None,
            )
            report = proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as exc:
            report = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        if "=========" not in report:
            continue
        found = parse_compute_sanitizer(nodeid, text=report)
        if found:
            per_test[nodeid] = [replace(f, tests=(nodeid,)) for f in found]
    return per_test
