"""Run a small script against an unpacked wheel in a clean, isolated interpreter.

Loading a wheel's modules (for its Python API or the torch operators it registers) runs
its code: that happens in a child process with ``-I`` (no user site, no ``PYTHONPATH``),
so a crash or a hang in the wheel cannot take xcompat down and nothing leaks between the
old and the new wheel.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_isolated_script(
    script: str, root: Path, top_names: list[str], *, python: str | None = None, timeout: float
) -> subprocess.CompletedProcess[str] | None:
    """Run ``script`` with ``root`` and ``top_names`` as arguments; None when it timed out."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    try:
        return subprocess.run(
            [python or sys.executable, "-I", "-c", script, str(root), *top_names],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=root,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None
