"""Helpers for the tests of ``xcompat test`` and ``xcompat.testing``.

from tests.helpers.testing import run_xcompat_test, crashy_suite_copy
proc, doc = run_xcompat_test(tmp_path, [suite, "--timeout", "3"], json_out=tmp_path / "r.json")
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CRASHY_SUITE = REPO / "tests" / "fixtures" / "crashy_suite"
# The crashy suite's conftest only lets pytest collect it when this is set.
CRASHY_ENV = {"XCOMPAT_CRASHY_SUITE": "1"}
# Plugins the runs under test do not need (hypothesis' alone costs ~1 s per pytest start).
LEAN_PYTEST = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")


def crashy_suite_copy(dest: Path) -> Path:
    """A copy of the crashy suite outside the repository (no pyproject.toml options apply)."""
    target = dest / "crashy_suite"
    shutil.copytree(CRASHY_SUITE, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def xcompat_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GITLAB_", "PYTEST_"))}
    env.pop("CI", None)
    env["PYTHONPATH"] = str(REPO / "src")
    env.update(extra or {})
    return env


def run_xcompat_test(
    cwd: Path,
    args: list[str],
    *,
    json_out: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 300,
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    """Run ``xcompat test ARGS`` in a subprocess; return the process and the parsed JSON result."""
    cmd = [sys.executable, "-m", "xcompat", "test", *args]
    if json_out is not None:
        cmd[4:4] = ["--json", str(json_out)]
    proc = subprocess.run(
        cmd, cwd=cwd, env=xcompat_env(env), capture_output=True, text=True, timeout=timeout, check=False
    )
    doc = json.loads(json_out.read_text()) if json_out is not None and json_out.is_file() else None
    return proc, doc


def by_name(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Test records keyed by the test's name (the last part of the node id)."""
    return {t["nodeid"].split("::")[-1]: t for t in doc["tests"]}
