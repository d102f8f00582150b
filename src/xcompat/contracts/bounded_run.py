"""Run a checking tool in a child process with a time limit and a bounded read of its output.

The tools (vermin, stubtest, an importing interpreter) run the project's code or parse its
files; in a child they cannot take xcompat down, and their output goes to a temporary file
of which at most ``limit`` bytes are read back, so a tool that prints without end costs disk
for as long as the timeout allows, never memory.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from xcompat.errors import ToolError

OUTPUT_LIMIT = 4 * 1024 * 1024


@dataclass(frozen=True)
class ToolRun:
    returncode: int
    output: str  # stdout, at most ``limit`` bytes of it, decoded with replacement
    errors: str  # the end of stderr
    truncated: bool


def run_tool(argv: Sequence[str], *, what: str, timeout: float, env: Mapping[str, str] | None = None,
             cwd: Path | None = None, limit: int = OUTPUT_LIMIT) -> ToolRun:
    """Run ``argv``; ToolError when it cannot start or runs past ``timeout`` seconds."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(list(argv), stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                    env=dict(env) if env is not None else None, cwd=cwd)
        except OSError as exc:
            raise ToolError(f"{what}: cannot start {argv[0]} ({exc})") from None
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise ToolError(f"{what}: {argv[0]} ran past its limit of {timeout:g} s") from None
        out.seek(0)
        data = out.read(limit + 1)
        size = err.seek(0, 2)
        err.seek(max(0, size - 16384))
        tail = err.read()
    return ToolRun(code, data[:limit].decode("utf-8", "replace"), tail.decode("utf-8", "replace"),
                   len(data) > limit)
