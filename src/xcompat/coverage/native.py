"""Native (C/C++/CUDA host) coverage through gcovr's JSON output.

gcovr runs gcov over the ``.gcda``/``.gcno`` files of a build tree and writes one JSON
document; we never parse gcov's text output ourselves. gcovr's ``--root`` is the project
the build folder belongs to (:func:`gcovr_root`), so it keeps that project's files and
leaves system and third-party headers out; :class:`~xcompat.coverage.paths.PathMapper`
then maps the project's files (in a pip build copy, a container's ``/project`` or the
checkout) to repository paths.
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


# Files that mark the top of a project a build folder belongs to.
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "CMakeLists.txt", "meson.build", ".git")


def gcovr_root(build_dir: Path, source_root: Path) -> Path:
    """The ``--root`` for gcovr: the project the build folder belongs to.

    That is the source root when the build folder is inside it (in-place builds, a
    container's ``/project``), else the nearest folder above the build folder with a project
    marker (pip's ``/tmp/pip-req-build-*`` copy), else the build folder itself. gcovr reports
    only files under its root: system and third-party headers stay out, and (gcovr 8) files
    outside the root whose directory has to be reached through ``..`` can send its
    directory tree into endless recursion, so they must stay out anyway.
    """
    try:
        build_dir.relative_to(source_root)
        return source_root
    except ValueError:
        pass
    for folder in (build_dir, *build_dir.parents):
        if folder == Path(folder.anchor):
            break
        if any((folder / marker).exists() for marker in PROJECT_MARKERS):
            return folder
    return build_dir


def run_gcovr(
    build_dir: Path, *, root: Path | None = None, gcov_executable: str | None = None, jobs: int = 1
) -> dict[str, Any]:
    """Run gcovr over ``build_dir`` and return its JSON document (names relative to ``root`` or absolute)."""
    if not build_dir.is_dir():
        raise InputError("gcov build folder not found", file=build_dir)
    root = root or build_dir
    with tempfile.TemporaryDirectory(prefix="xcompat-gcovr-") as tmp:
        out = Path(tmp) / "gcovr.json"
        cmd = [
            *gcovr_command(),
            "--root",
            str(root),
            "--json",
            str(out),
            # nvcc compiles a temporary host stub (/tmp/tmpxft_*.cudafe1.stub.c) that is gone
            # by now; its lines are not the project's anyway. Not no_working_dir_found: with
            # it gcovr 8 keeps the output of a failed working-directory guess and crashes.
            "--gcov-ignore-errors=source_not_found",
            "-j",
            str(max(1, jobs)),
            str(build_dir),
        ]
        if gcov_executable:
            cmd[1:1] = ["--gcov-executable", gcov_executable]
        proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not out.is_file():
            text = proc.stderr or proc.stdout
            tail = [ln for ln in text.strip().splitlines() if ln.strip() and not ln.strip().startswith("^")][
                -8:
            ]
            hint = None
            if "could not find source file" in text or "working directory" in text:
                hint = (
                    "gcov needs the sources at the paths they were compiled from: build in place "
                    "(build_ext --inplace, pip install --no-build-isolation -e .) or keep the build folder"
                )
            raise ToolError(
                f"gcovr failed with exit code {proc.returncode} on {build_dir}", hint=hint, details=tail
            )
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
