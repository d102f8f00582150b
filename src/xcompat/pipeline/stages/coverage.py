"""The coverage stage of ``xcompat run``: a ``--coverage`` build of the project's native code,
its tests through ``xcompat test`` under coverage.py, then ``xcompat coverage collect`` and
``merge``.

The tests run exactly as the test stage runs them (the signed ``tests.timeout``,
``tests.isolation`` and pytest arguments), so a hanging test is a timeout here too instead of
a stage that never ends, and a crash ends one test process, not the stage. They run against
the instrumented build instead of the wheel; the verdict on the tests is the test stage's
alone, and a test whose outcome differs here is named as a warning of the coverage result.

What is measured: the project's packages (under ``src/`` for a src layout, else next to
``setup.py``/``pyproject.toml``) and its C/C++/Cython sources; test files (``tests``/``test``
folders, ``test_*.py``, ``*_test.py``, ``conftest.py`` and what ``tests.pytest`` names) are
left out.

Coverage is informational unless the signed matrix sets thresholds (``coverage.overall`` or
``coverage.diff``): then it is required. So a stage that cannot measure (the tools are not
installed, the instrumented build failed, no tests ran) is ``skipped`` with the reason, and
``failed`` with the same reason when thresholds are set.

The instrumented build is made as the run's build is: in the same private copy of the sources
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xcompat import jsonio
from xcompat.isolate.measured import NATIVE_VARIABLE
from xcompat.pipeline.context import RunContext
from xcompat.pipeline.coverage_build import build_with_coverage
from xcompat.pipeline.coverage_layout import (
    INSTALL_HINT,
    Layout,
    coverage_rc,
    missing_tools,
    omitted_test_files,
    project_layout,
)
from xcompat.pipeline.coverage_outcomes import anchors_of, collection_failure, outcome_differences
from xcompat.pipeline.local import StageResult, load_json
from xcompat.pipeline.stages.test import pytest_targets


class _Unmeasured(Exception):
    """Coverage could not be measured; the message says why and what to do."""

    def __init__(self, reason: str, log: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.log = log


@dataclass(frozen=True)
class CoverageStage:
    name: str = "coverage"
    runs_when_halted: bool = False

    def run(self, context: RunContext) -> StageResult:
        from xcompat.results.required import coverage_requirement

        if not context.cfg.coverage:
            return StageResult(name="coverage", status="skipped", detail="--no-coverage")
        requirement = coverage_requirement(context.settings)
        work = context.pipe.path(".coverage-work")
        try:
            return _measure(context, work)
        except _Unmeasured as exc:
            if requirement.required:
                return StageResult(name="coverage", status="failed", log=exc.log,
                                   detail=f"{exc.reason}; coverage is required: {requirement.reason}")
            return StageResult(name="coverage", status="skipped", detail=exc.reason, log=exc.log)
        finally:
            shutil.rmtree(work, ignore_errors=True)


@dataclass(frozen=True, kw_only=True)
class _Measured:
    """The tests of the run, under coverage, in a copy of the instrumented build."""

    layout: Layout
    targets: list[str]
    pytest_args: list[str]
    copy: Path  # the copy the tests ran in (its native code writes its counts there)
    data: Path  # coverage.py's combined data file
    rc: Path | None  # coverage.py's configuration (None: no Python measured)
    summary: Any  # the tests' summary under coverage
    warnings: list[str]  # each test whose outcome differs from the test stage's


def _measure(context: RunContext, work: Path) -> StageResult:
    measured = _run_tests(context, work, *_what_to_measure(context))
    cell_file = _collect(context, work, measured)
    return _merge(context, cell_file, measured)


def _what_to_measure(context: RunContext) -> tuple[list[str], list[str], Layout]:
    """The tests (as the test stage runs them) and the layout, or why nothing can be measured."""
    found = pytest_targets(context)  # tests.pytest / tests.pytest-args, as the test stage runs them
    if isinstance(found, StageResult):
        raise _Unmeasured(f"not measured: no tests to run ({found.detail})")
    targets, pytest_args = found
    layout = project_layout(context.cfg.project)
    if not layout.python and not layout.native:
        raise _Unmeasured("not measured: no Python package (under src/ or the project folder) and no C, C++ "
                          "or Cython source was found")
    missing = missing_tools(layout)
    if missing:
        raise _Unmeasured(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed "
                          f"({INSTALL_HINT})")
    return targets, pytest_args, layout


def _instrumented_copy(context: RunContext, work: Path, layout: Layout) -> tuple[Path, Path]:
    """(the cached instrumented build, this run's copy of it under ``work``)."""
    log_path = context.pipe.path("logs", "coverage-build.log")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        built = build_with_coverage(context.cfg.project, log_path, native=layout.native,
                                    device=context.cell_backend())
    except RuntimeError as exc:
        raise _Unmeasured(f"not measured: {exc}", log="logs/coverage-build.log") from None
    copy = work / "src"
    shutil.copytree(built, copy, symlinks=True)
    return built, copy


def _environment(work: Path, built: Path, copy: Path, import_root: Path, layout: Layout) -> dict[str, str]:
    existing = os.environ.get("PYTHONPATH")
    addopts = os.environ.get("PYTEST_ADDOPTS")
    env: dict[str, str] = {
        # prepended: xcompat itself may be importable only through the caller's PYTHONPATH
        "PYTHONPATH": str(import_root) + (os.pathsep + existing if existing else ""),
        "PYTHONDONTWRITEBYTECODE": "1",
        # pytest's plugins as in the test stage, which turns the cache plugin off
        "PYTEST_ADDOPTS": (addopts + " " if addopts else "") + "-p no:cacheprovider",
    }
    if layout.native:
        strip = len(built.parts) - 2  # folders above "src" in the compile-time paths (parts[0] is "/")
        env.update({"GCOV_PREFIX": str(work), "GCOV_PREFIX_STRIP": str(strip), NATIVE_VARIABLE: str(copy)})
    return env


def _run_tests(context: RunContext, work: Path, targets: list[str], pytest_args: list[str],
               layout: Layout) -> _Measured:
    """``xcompat test`` of the run's tests in the instrumented copy, under coverage.py."""
    project = context.cfg.project
    built, copy = _instrumented_copy(context, work, layout)
    import_root = copy / layout.root if layout.root else copy
    pyargs = "--pyargs" in pytest_args
    # the same tests, from the coverage build's copy of the tree (module names with --pyargs)
    where = targets if pyargs else [str(copy / Path(t).relative_to(project)) for t in targets]
    named = [import_root.joinpath(*t.split(".")) for t in targets] if pyargs else [Path(w) for w in where]
    data = work / "data" / ".coverage"
    data.parent.mkdir()
    env = _environment(work, built, copy, import_root, layout)
    runner: list[str] = [sys.executable]
    rc = None
    if layout.python:
        rc = coverage_rc(work / "coveragerc", data_file=data, layout=layout,
                         omit=omitted_test_files(import_root, layout, named))
        runner += ["-m", "coverage", "run", f"--rcfile={rc}"]
        env["COVERAGE_PROCESS_START"] = str(rc)  # spawned test processes (macOS) start measuring too
    t = context.settings.tests
    outcomes = work / "tests.json"
    argv = [*runner, "-m", "xcompat", "test", *where, "--isolate", t.isolation, "--timeout", str(t.timeout),
            "--json", str(outcomes)]
    if context.cell_id:
        argv += ["--cell-id", context.cell_id]
    if pytest_args:
        argv += ["--", *pytest_args]
    run = context.pipe.run_command("coverage-tests", argv, env=env, cwd=work)
    if run.exit_code not in (0, 1) or not outcomes.is_file():
        raise _Unmeasured(f"not measured: the tests did not run under coverage ({run.detail})", log=run.log)
    measured_run = load_json(outcomes)
    uncollected = collection_failure(measured_run)
    if uncollected:
        # An import that fails only here (the instrumented build, the package imported from the
        # source tree) leaves nothing measured worth a percentage.
        raise _Unmeasured(f"not measured: the tests could not be collected under coverage ({uncollected})",
                          log=run.log)
    warnings = outcome_differences(load_json(context.result_path("test")), measured_run,
                                   anchors=anchors_of(targets) if pyargs else ())
    return _Measured(layout=layout, targets=targets, pytest_args=pytest_args, copy=copy, data=data, rc=rc,
                     summary=measured_run.get("summary") if isinstance(measured_run, dict) else None,
                     warnings=warnings)


def _collect(context: RunContext, work: Path, measured: _Measured) -> Path:
    """``xcompat coverage collect`` of the cell: an input of the merge, not a result (the merged
    coverage.json is the stage's one result), in a hidden folder, which results are never read from."""
    pipe = context.pipe
    inputs: list[str] = []
    if measured.rc is not None:
        combine = pipe.run_command("coverage-combine", [
            sys.executable, "-m", "coverage", "combine", f"--rcfile={measured.rc}", "-q"], cwd=work)
        if combine.status != "passed" or not measured.data.is_file():
            raise _Unmeasured(f"not measured: no coverage.py data to combine ({combine.detail})", log=combine.log)
        inputs += ["--python-data", str(measured.data)]
    if measured.layout.native:
        inputs += ["--gcov-root", str(measured.copy)]
    cell_file = pipe.path(".inputs", "coverage-cell.json")
    collect = pipe.run_command("coverage-collect", pipe.xcompat(
        "coverage", "collect", "--cell-id", context.cell_id or "local", *inputs, "--source-root",
        context.cfg.project, "--map", f"{measured.copy}=.", "--out", cell_file), outputs=[cell_file])
    if collect.status != "passed":
        raise _Unmeasured(f"not measured: collecting the data failed ({collect.detail})", log=collect.log)
    if measured.warnings:
        document = jsonio.read_json(cell_file, schema="coverage-cell")
        document["warnings"] = [*document.get("warnings", []), *measured.warnings]
        jsonio.write_json(cell_file, document, schema="coverage-cell")
    return cell_file


def _thresholds(context: RunContext) -> list[str]:
    """coverage.overall / coverage.diff of the resolved settings (the stage does not re-read the matrix)."""
    c = context.settings.coverage
    out: list[str] = []
    if c.overall is not None:
        out += ["--threshold-overall", str(c.overall)]
    if c.diff is not None:
        out += ["--threshold-diff", str(c.diff)]
    return out


def _merge(context: RunContext, cell_file: Path, measured: _Measured) -> StageResult:
    """``xcompat coverage merge`` into the folder of the stage's result, with the signed thresholds."""
    result = context.result_path("coverage")
    merge = context.pipe.run_command("coverage", context.pipe.xcompat(
        "coverage", "merge", cell_file, "--repo", context.cfg.project, *_thresholds(context),
        "--out-dir", result.parent), outputs=[result])
    if merge.status not in ("passed", "failed") or not result.is_file():
        raise _Unmeasured(f"not measured: merging the data failed ({merge.detail})", log=merge.log)
    if merge.status == "passed":
        # The run's summary line: how the tests went here (a timeout is one here too), and
        # whether any went otherwise than in the test stage.
        merge.detail = f"tests under coverage: {measured.summary}" if measured.summary else ""
        if measured.warnings:
            merge.detail += (f"; {len(measured.warnings)} warning(s) in coverage/coverage.md, "
                             f"first: {measured.warnings[0]}")
    return merge


STAGE = CoverageStage()
