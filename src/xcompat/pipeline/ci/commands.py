"""The xcompat commands a CI stage runs, each in a process of its own as the job's steps did.

Every interpreter runs isolated (``-I``): the working folder, usually the change's checkout,
is never on ``sys.path``, so a checkout holding ``xcompat/`` or ``json.py`` cannot stand in for
the tool or its imports.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from xcompat.pipeline.ci.step import CiInputs, StageRefused


def xcompat(*args: str | Path) -> list[str]:
    return [sys.executable, "-I", "-m", "xcompat", *(str(a) for a in args)]


def bind(inputs: CiInputs) -> list[str]:
    """With ``matrix-sha256``: the plan must be the one the verified matrix bytes yield, and the
    bytes must have that hash (the plan's own ``matrix_sha256`` field is not evidence: anyone who
    edits the plan can keep it)."""
    if not inputs.matrix_sha256:
        return []
    return ["--matrix", str(inputs.verified), "--expect-sha256", inputs.matrix_sha256]


def plan_settings(inputs: CiInputs, fmt: str, failure: str, *extra: str) -> str:
    """``xcompat matrix settings`` of the verified plan in ``fmt``; its output, or ``StageRefused``
    with ``failure`` and its exit code."""
    proc = subprocess.run(xcompat("matrix", "settings", "--plan", inputs.plan_path, *bind(inputs), *extra,
                                  "--format", fmt), stdout=subprocess.PIPE, check=False)
    if proc.returncode != 0:
        raise StageRefused(failure, proc.returncode)
    return proc.stdout.decode("utf-8", "replace")


def bound_to_plan(inputs: CiInputs) -> None:
    """With ``matrix-sha256``: refuse (``StageRefused``) a plan that is not the verified matrix's,
    before the stage reads anything of it."""
    if inputs.matrix_sha256:
        plan_settings(inputs, "json", f"the plan {inputs.plan_path} and {inputs.verified} are not the "
                      "verified matrix's")


def run(argv: list[str], env: Mapping[str, str] | None = None, cwd: str | Path | None = None) -> int:
    """Run a command with the job's output streams; its exit code."""
    return subprocess.run(argv, env=env, cwd=cwd, check=False).returncode


def lines(text: str) -> list[str]:
    """One argument per non-empty line (no shell parsing)."""
    return [line for line in text.splitlines() if line]
