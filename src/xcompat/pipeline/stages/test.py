"""The test stage: the project's own tests against the installed wheel, each isolated, by ``xcompat test``.

The tests run from the project's folder, as its developers run pytest: paths in tracebacks
are the project's own (tests/test_x.py:12), and the report's rerun command works there as
printed. The folder is not on sys.path, so the installed wheel is what the tests import.
In-package tests (``--pyargs``) are the installed copies: they run from the install folder,
named from there, not from the staging folder whose name is gone once the run is in place.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from xcompat.pipeline.context import RunContext
from xcompat.pipeline.local import StageResult


@dataclass(frozen=True)
class TestsStage:
    name: str = "test"
    runs_when_halted: bool = False

    def run(self, context: RunContext) -> StageResult:
        p = context.pipe
        found = pytest_targets(context)
        if isinstance(found, StageResult):
            return found
        targets, pytest_args = found
        site = install_site(context)
        if site is None:
            return StageResult(name="test", status="failed", detail="no wheel to test (the build failed)")
        t = context.settings.tests
        result, junit = context.result_path("test"), p.path("junit.xml")
        argv: list[str | os.PathLike[str]] = [
            "test", *targets, "--isolate", t.isolation, "--json", result, "--junit", junit,
            "--timeout", str(t.timeout)]
        if context.cell_id:
            argv += ["--cell-id", context.cell_id]
        pyargs = "--pyargs" in pytest_args
        cwd = site if pyargs else context.cfg.project
        if pyargs:
            pytest_args = ["--rootdir", str(site), *pytest_args]
        if pytest_args:
            argv += ["--", *pytest_args]
        context.rerun = rerun_template(p.final, context.cfg.project, pyargs=pyargs,
                                       pytest_args=[a for a in t.pytest_args if a != "--pyargs"])
        if context.cfg.lane is not None:  # an emulated lane: the same command, in the lane's root
            from xcompat.pipeline.lanes import run_tests

            return run_tests(context, p.xcompat(*argv, safe_path=True), env=env_with_site(site), cwd=cwd,
                             outputs=[result, junit])
        return p.run_command("test", p.xcompat(*argv, safe_path=True), env=env_with_site(site),
                             cwd=cwd, outputs=[result, junit])


def pytest_targets(context: RunContext) -> tuple[list[str], list[str]] | StageResult:
    """(targets, pytest args) from ``tests.pytest`` / ``tests.pytest-args``, or why not."""
    t = context.settings.tests
    if not t.pytest_paths:
        return StageResult(name="test", status="skipped", detail="not required: tests.pytest is empty")
    args = list(t.pytest_args)
    if "--pyargs" in args:
        # module names, imported from the installed wheel
        return list(t.pytest_paths), args
    targets = []
    for rel in t.pytest_paths:
        path = (context.cfg.project / rel).resolve()
        if not path.exists():
            return StageResult(
                name="test", status="failed",
                detail=f"tests.pytest names {rel}, and {path} does not exist (tests inside the package: "
                "tests.pytest: [PKG.tests] with tests.pytest-args: [--pyargs]; see xcompat matrix init)")
        targets.append(str(path))
    return targets, args


def install_site(context: RunContext) -> Path | None:
    """The run's wheels importable from one folder (``.site``), unpacked as pip lays them out,
    without pip's start-up; pip for a wheel with scripts or data files, and for one that cannot
    be unpacked (pip's error is then the install's). None: no wheel, or pip failed."""
    import shutil
    import zipfile

    from xcompat.errors import XcompatError
    from xcompat.pipeline.install import unpack_wheels

    if context.site is not None or not context.wheels:
        return context.site
    site = context.pipe.path(".site")
    try:
        written = unpack_wheels(context.wheels, site)
    except (XcompatError, zipfile.BadZipFile, OSError):
        shutil.rmtree(site, ignore_errors=True)
        written = None
    if written is not None:
        log = context.pipe.path("logs", "install.log")
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(f"xcompat: unpacked {', '.join(w.name for w in context.wheels)} into .site "
                       f"({len(written)} files), as pip install --target lays them out\n", encoding="utf-8")
        context.site = site
        return site
    res = context.pipe.run_command("install", [
        sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target", str(site),
        *(str(w) for w in context.wheels)])
    if res.status != "passed":
        return None
    context.site = site
    return site


def env_with_site(site: Path) -> dict[str, str]:
    existing = os.environ.get("PYTHONPATH")
    addopts = os.environ.get("PYTEST_ADDOPTS")
    # The tests are imported from the project's folder, which the run never writes: no
    # bytecode (__pycache__) and no pytest cache (.pytest_cache) next to them.
    return {"PYTHONPATH": str(site) + (os.pathsep + existing if existing else ""),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTEST_ADDOPTS": (addopts + " " if addopts else "") + "-p no:cacheprovider"}


def rerun_template(out: Path, project: Path, *, pyargs: bool, pytest_args: Sequence[str]) -> str:
    """The shell command, run in the project's folder, that reruns one test ("{test}") against the
    wheel the run installed (kept under the output folder), alone in its own process."""
    site = out / ".site"
    try:
        shown = str(site.relative_to(project))
    except ValueError:
        shown = str(site)
    extra = (" -- " + " ".join(shlex.quote(a) for a in pytest_args)) if pytest_args else ""
    if pyargs:
        return f"cd {shlex.quote(shown)} && PYTHONPATH=. xcompat test --isolate test {{test}}{extra}"
    return f"PYTHONPATH={shlex.quote(shown)} xcompat test --isolate test {{test}}{extra}"


STAGE = TestsStage()
