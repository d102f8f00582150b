"""Run vermin on source files and read its parsable output.

vermin runs as a command in a child process (``python -m vermin``), not through its Python
API: the API's entry points (``Config``, ``Processor``, ``detect``) are vermin's internals,
undocumented and changed between releases, and the processor forks a process pool inside the
caller; the command line and its ``--format parsable`` output are documented and stable, and a
child process lets the run be bounded in time and output and survive a crash on hostile input.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from xcompat.contracts.bounded_run import run_tool
from xcompat.errors import ToolError, UnavailableError

TIMEOUT_S = 600

# file:line:column:py2:py3:feature; the file may hold colons, the versions never do.
_LINE = re.compile(r"^(?P<file>.+?):(?P<line>\d*):(?P<col>\d*):(?P<py2>!2|~2|2(?:\.\d+)*|):"
                   r"(?P<py3>!3|~3|3(?:\.\d+)*|):(?P<feature>.*)$")


@dataclass(frozen=True)
class Requirement:
    """One construct in one file and the lowest Python 3 that has it."""

    file: str
    line: int | None
    feature: str
    minimum: tuple[int, int]


def parse_parsable(text: str) -> list[Requirement]:
    """Per-construct lines of vermin's ``--format parsable`` output. Lines without a line
    number (a file's or the run's total) and lines that do not parse are skipped: a total
    repeats what its constructs say, and a line that is not vermin's is not evidence."""
    found: list[Requirement] = []
    for raw in text.splitlines():
        match = _LINE.match(raw.strip())
        if not match or not match["line"] or not match["feature"].strip():
            continue
        version = _minor(match["py3"])
        if version is None:
            continue
        found.append(Requirement(match["file"], int(match["line"]), match["feature"].strip(), version))
    return found


def _minor(text: str) -> tuple[int, int] | None:
    parts = text.split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        return None  # "!3" (not in Python 3), "~3" (unknown), "3" (any)
    return int(parts[0]), int(parts[1])


# vermin has no ``__main__``; its console script calls ``vermin.main()``, which reads sys.argv.
_ENTRY = "import sys, vermin; sys.exit(vermin.main())"


def run_vermin(root: Path, files: Sequence[str], *, python: str | None = None) -> list[Requirement]:
    """The constructs of ``files`` (paths relative to ``root``) that need more than Python 3.0,
    as vermin reports them. ``# novermin`` / ``# novm`` comments in the sources exclude a line."""
    if not files:
        return []
    argv = [python or sys.executable, "-c", _ENTRY, "--no-tips", "--format", "parsable",
            "--no-make-paths-absolute", "--eval-annotations", "--processes=1", "--", *files]
    run = run_tool(argv, what="vermin", timeout=TIMEOUT_S, cwd=root)
    if run.returncode != 0 and "No module named 'vermin'" in run.errors:
        raise UnavailableError("vermin is not installed", hint="pip install 'xcompat[contracts]'")
    if run.returncode != 0 or run.truncated:
        why = "its output is over the limit" if run.truncated else f"exit {run.returncode}"
        raise ToolError(f"vermin failed ({why})", details=run.errors.splitlines()[-10:])
    return parse_parsable(run.output)
