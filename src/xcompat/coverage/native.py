"""Native (C/C++/CUDA host) coverage through gcovr's JSON output.

gcovr runs gcov over the ``.gcda``/``.gcno`` files of a build tree and writes one JSON
document; we never parse gcov's text output ourselves. gcovr is run with ``--filter /`` so
that it keeps files outside its ``--root`` (pip builds in ``/tmp/pip-req-build-*``,
containers build in ``/project``); :class:`~xcompat.coverage.paths.PathMapper` then keeps
the files that belong to the repository and drops system and third-party headers.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xcompat.errors import InputError, ToolError, UnavailableError


@dataclass(frozen=True)
class MeasuredNativeFile:
    recorded: str  # as gcovr wrote it: relative to its --root, or absolute
    lines: dict[int, int]  # line -> execution count (lines marked excluded are left out)


def gcovr_command() -> list[str]:
    exe = shutil.which("gcovr")
    if exe:
        return [exe]
    if importlib.util.find_spec("gcovr") is not None:
        return [sys.executable, "-m", "gcovr"]
    raise UnavailableError("gcovr is not installed", hint="pip install 'xcompat[coverage]'")


def gcovr_version() -> str:
    try:
        proc = subprocess.run([*gcovr_command(), "--version"], capture_output=True, text=True, check=False)
    except (UnavailableError, OSError):
        return ""
    first = proc.stdout.strip().splitlines()[:1]
    return first[0].split()[-1] if first else ""


def run_gcovr(build_dir: Path, *, gcov_executable: str | None = None, jobs: int = 1) -> dict[str, Any]:
    """Run gcovr over ``build_dir`` and return its JSON document."""
    if not build_dir.is_dir():
        raise InputError("gcov build folder not found", file=build_dir)
    with tempfile.TemporaryDirectory(prefix="xcompat-gcovr-") as tmp:
        out = Path(tmp) / "gcovr.json"
        cmd = [
            *gcovr_command(),
            "--root", str(build_dir),
            "--filter", "/",  # keep files outside --root; the path mapper decides what belongs
            "--json", str(out),
            # A source deleted after the build (pip's temporary build copy) leaves its lines
            # empty instead of failing the whole run; collect reports it as a warning.
            "--gcov-ignore-errors=source_not_found",
            "--gcov-ignore-errors=no_working_dir_found",
            "-j", str(max(1, jobs)),
            str(build_dir),
        ]
        if gcov_executable:
            cmd[1:1] = ["--gcov-executable", gcov_executable]
        proc = subprocess.run(cmd, cwd=build_dir, capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not out.is_file():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-8:]
            raise ToolError(f"gcovr failed with exit code {proc.returncode} on {build_dir}", details=tail)
        return read_gcovr_json(out)


def read_gcovr_json(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"gcovr JSON is unreadable: {exc}", file=path) from None
    if not isinstance(document, dict) or not isinstance(document.get("files"), list):
        raise InputError("not a gcovr JSON document (no 'files' list)", file=path)
    return document


def native_files(document: dict[str, Any], *, source: str = "<gcovr>") -> Iterator[MeasuredNativeFile]:
    """Line counts per file of a gcovr JSON document (format 0.x, gcovr 7 and 8)."""
    for i, entry in enumerate(document["files"]):
        try:
            name = entry["file"]
            counts: dict[int, int] = {}
            for line in entry.get("lines", ()):
                if line.get("gcovr/excluded") or line.get("gcovr/noncode"):
                    continue
                n = int(line["line_number"])
                # Template instances and inlined copies give several records for one line.
                counts[n] = counts.get(n, 0) + int(line["count"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"gcovr JSON files[{i}] is malformed ({exc!r})", file=source) from None
        yield MeasuredNativeFile(recorded=str(name), lines=counts)
