"""The runtime-libraries stage: the shared objects the cell's processes map once they imported the wheel.

What is captured: a fresh interpreter of the cell (the run's Python, its environment) that
imports the wheel's top-level packages and modules (what its users import) from the folder the
test stage installed it in, then reads its own ``/proc/self/maps`` (``xcompat contracts
libraries``); joined by what each test process of the test stage mapped when it ended (the
test result's ``mapped_libraries``), so a library that only a test loads (through ``ctypes`` or
a lazy import) is in it too. ``sources`` in the result says which of the two were read. Linux
only; elsewhere the stage is skipped.

Against the baseline: when the run has a baseline wheel for this Python, it is imported the
same way in a fresh process (its tests are not run) and the result lists what changed among the
imported libraries (``changes``: added, removed, another build or owner) and how many findings the baseline's
import does not have (``new_findings``): under ``contracts.runtime-libraries: gate`` only those
make the cell red, so a duplicate runtime that the environment already had at the last
release is shown, not blamed on the change. A finding only the test processes show has
nothing to compare with (the baseline's tests are not run): it counts as new.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xcompat import jsonio
from xcompat.interpreters.fit import installable_wheel
from xcompat.pipeline.context import RunContext
from xcompat.pipeline.local import StageResult
from xcompat.pipeline.stages.test import install_site
from xcompat.results.contracts import LIBRARIES

BASELINE_DIR = ".contracts-baseline"  # hidden: the report never reads it as a result
_EXTENSIONS = (".so", ".pyd")


def modules_of(files: Iterable[str]) -> list[str]:
    """The top-level packages and modules among a wheel's ``files`` (paths relative to where it
    is installed, ``/``-separated): what its users import. A compiled module inside a package
    is not imported on its own: its package may have to load a framework first (torch's
    libraries for a torch extension), and a module it imports lazily is not mapped."""
    top = set()
    for name in files:
        parts = name.split("/")
        leaf = parts[-1]
        if parts[0].endswith((".dist-info", ".data")) or not all(p.isidentifier() for p in parts[:-1]):
            continue
        stem = leaf.split(".")[0]
        if len(parts) == 2 and leaf == "__init__.py":
            top.add(parts[0])
        elif len(parts) == 1 and leaf.endswith((".py", *_EXTENSIONS)) and stem.isidentifier():
            top.add(stem)
    return sorted(top)


def importable(site: Path) -> list[str]:
    """:func:`modules_of` the files of the folder a wheel is installed in."""
    return modules_of(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file())


def _probe_argv(modules: Sequence[str], site: Path, out: Path, cell: str | None, project: str | None,
                baseline: Path | None = None, tests: Path | None = None) -> list[str | os.PathLike[str]]:
    argv: list[str | os.PathLike[str]] = ["contracts", "libraries", "--path", site, "-o", out]
    if tests is not None:
        argv += ["--tests-result", tests]
    for module in modules:
        argv += ["--import", module]
    if project:
        argv += ["--project", project]
    if cell:
        argv += ["--cell", cell]
    if baseline is not None:
        argv += ["--baseline", baseline]
    return argv


def _project_name(wheels: Sequence[Path]) -> str | None:
    from packaging.utils import parse_wheel_filename

    try:
        return str(parse_wheel_filename(wheels[0].name)[0]) if wheels else None
    except ValueError:
        return None


def baseline_snapshot(context: RunContext) -> tuple[Path | None, str]:
    """The baseline wheel's import snapshot, or None, and what it is (or why there is none)."""
    base = context.baseline_path
    if base is None:
        return None, f"not compared with a baseline: {context.baseline_missing or 'no baseline'}"
    wheel = installable_wheel(base)
    if wheel is None:
        return None, f"not compared with a baseline: {base.name} holds no wheel for this Python"
    from xcompat.contracts.wheel_site import unpack_wheel
    from xcompat.errors import XcompatError

    p = context.pipe
    folder = p.path(BASELINE_DIR)
    shutil.rmtree(folder, ignore_errors=True)
    try:
        unpack_wheel(wheel, folder / "site")
    except (XcompatError, OSError) as exc:
        return None, f"not compared with a baseline: {wheel.name} could not be unpacked: {exc}"
    out = folder / "runtime-libraries.json"
    argv = _probe_argv(importable(folder / "site"), folder / "site", out, None, _project_name([wheel]))
    done = p.run_command("contracts-baseline-libraries", p.xcompat(*argv), cwd=folder, outputs=[out])
    if done.status != "passed" or not out.is_file():
        return None, f"not compared with a baseline: importing {wheel.name} failed (logs/{done.name}.log)"
    return out, f"compared with the baseline's import ({wheel.name})"


def _identity(finding: Mapping[str, Any]) -> tuple[str, str]:
    """What makes two findings the same one in two snapshots (their paths differ by folder)."""
    if finding.get("code") == "duplicate-runtime":
        return "duplicate-runtime", str(finding.get("family"))
    path = str(finding.get("path") or finding.get("paths") or "")  # one library: by its file's name
    return str(finding.get("code")), str(finding.get("soname") or os.path.basename(path))


def count_new(document: Mapping[str, Any], baseline: Mapping[str, Any]) -> int:
    """How many of ``document``'s findings the baseline's snapshot does not have."""
    known = {_identity(f) for f in baseline.get("findings", []) if isinstance(f, dict)}
    return sum(1 for f in document.get("findings", []) if isinstance(f, dict) and _identity(f) not in known)


@dataclass(frozen=True)
class RuntimeLibrariesStage:
    name: str = LIBRARIES.kind
    runs_when_halted: bool = False

    def run(self, context: RunContext) -> StageResult:
        if not sys.platform.startswith("linux") or not os.path.isdir("/proc/self"):
            return StageResult(name=self.name, status="skipped",
                               detail="not run: reading a process's libraries needs Linux's /proc")
        site = install_site(context)
        if site is None:
            return StageResult(name=self.name, status="skipped", detail="not run: no wheel (the build failed)")
        modules = importable(site)
        if not modules:
            return StageResult(name=self.name, status="skipped", detail="not run: the wheel has no module")
        p = context.pipe
        result = context.result_path(self.name)
        result.parent.mkdir(parents=True, exist_ok=True)
        base, against = baseline_snapshot(context)
        # the test stage's result, when it wrote one: its test processes' libraries join the import's
        tests = context.result_path("test") if context.result_path("test").is_file() else None
        argv = _probe_argv(modules, site, result, context.cell_id, _project_name(context.wheels), base, tests)
        done = p.run_command(self.name, p.xcompat(*argv), cwd=result.parent, outputs=[result])
        if done.status == "passed" and result.is_file():
            doc = jsonio.read_json(result, schema=LIBRARIES.kind)
            doc["baseline"] = against
            if tests is None:
                doc["sources"] = [*doc.get("sources", [])[:1], {
                    "name": "tests", "read": False, "detail": "not read: the test stage wrote no result in this run"}]
            if base is not None:
                doc["new_findings"] = count_new(doc, jsonio.read_json(base, schema=LIBRARIES.kind))
            jsonio.write_json(result, doc, schema=LIBRARIES.kind)
            read = [s.get("detail") for s in doc.get("sources", []) if s.get("name") == "tests" and s.get("read")]
            done.detail = f"{doc.get('summary')}; {against}" + (f"; with {read[0]}" if read else "; import only")
        return done


STAGE = RuntimeLibrariesStage()
