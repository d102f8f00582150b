"""The coverage stage of ``xcompat run``: a ``--coverage`` build of the project's native code,
its tests under coverage.py, then ``xcompat coverage collect`` and ``merge``.

The instrumented build is cached under ``${XCOMPAT_CACHE:-~/.cache/xcompat}/coverage-builds``
keyed by the project's sources, Python, torch and compiler, and never written to after it is
built: each run copies it and sends its ``.gcda`` files into the copy with ``GCOV_PREFIX``,
so counts never leak from one run into the next.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from xcompat.pipeline.local import StageResult

if TYPE_CHECKING:
    from xcompat.pipeline.runner import Stages

_SKIP_DIRS = {"__pycache__", "build", "dist", ".pytest_cache", ".xcompat-out", ".git"}
_SKIP_SUFFIXES = {".so", ".pyd", ".o", ".gcda", ".gcno"}


def cache_dir() -> Path:
    return Path(os.environ.get("XCOMPAT_CACHE") or Path.home() / ".cache" / "xcompat") / "coverage-builds"


def _tool(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "absent"


def project_key(project: Path) -> str:
    from importlib import metadata

    digest = hashlib.sha256()
    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = "none"
    digest.update(f"{sys.version}|{torch_version}|{_tool(['gcc', '-dumpfullversion'])}|O0-coverage".encode())
    for path in sorted(project.rglob("*")):
        rel = path.relative_to(project)
        if not path.is_file() or set(rel.parts) & _SKIP_DIRS or path.suffix in _SKIP_SUFFIXES:
            continue
        digest.update(str(rel).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def build_with_coverage(project: Path, log_path: Path) -> Path:
    """An in-place ``--coverage -O0`` build of ``project`` (setuptools ``build_ext``), cached."""
    key = project_key(project)
    root = cache_dir() / f"{project.name}-{key}"
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{project.name}-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (root / ".built").is_file():
            return root / "src"
        shutil.rmtree(root, ignore_errors=True)
        src = root / "src"
        shutil.copytree(project, src, ignore=shutil.ignore_patterns(*_SKIP_DIRS, *(f"*{s}" for s in _SKIP_SUFFIXES)))
        env = {**os.environ, "CFLAGS": "--coverage -O0", "CXXFLAGS": "--coverage -O0", "LDFLAGS": "--coverage",
               "SAMPLE_EXT_CUDA": "0", "MAX_JOBS": os.environ.get("MAX_JOBS", "2")}
        setup = ["setup.py"] if (src / "setup.py").is_file() else ["-c", "from setuptools import setup; setup()"]
        with open(log_path, "ab") as fh:
            proc = subprocess.run([sys.executable, *setup, "build_ext", "--inplace", "--build-temp", "build/temp"],
                                  cwd=src, env=env, stdout=fh, stderr=subprocess.STDOUT, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"coverage build failed (exit {proc.returncode}); see {log_path.name}")
        (root / ".built").write_text(key)
    return root / "src"


def _package_names(project: Path) -> list[str]:
    return sorted(p.parent.name for p in project.glob("*/__init__.py") if p.parent.name not in ("tests", "test"))


def _thresholds(stages: Stages) -> list[str]:
    """coverage.overall / coverage.diff of the resolved settings (the stage does not re-read the matrix)."""
    c = stages.settings.coverage
    out: list[str] = []
    if c.overall is not None:
        out += ["--threshold-overall", str(c.overall)]
    if c.diff is not None:
        out += ["--threshold-diff", str(c.diff)]
    return out


def run_coverage(stages: Stages) -> StageResult:
    pipe = stages.pipe
    project = stages.cfg.project
    found = stages.test_targets()  # tests.pytest / tests.pytest-args, as the test stage runs them
    if isinstance(found, StageResult):
        return StageResult(name="coverage", status="skipped", detail=f"no tests to measure: {found.detail}")
    targets, pytest_args = found
    log_path = pipe.path("logs", "coverage-build.log")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        built = build_with_coverage(project, log_path)
    except RuntimeError as exc:
        return StageResult(name="coverage", status="error", detail=str(exc), log="logs/coverage-build.log")
    work = pipe.path(".coverage-work")
    copy = work / "src"
    shutil.copytree(built, copy, symlinks=True)
    cell = stages.cell_id or "local"
    data = work / f".coverage.{cell}"
    packages = _package_names(copy)
    strip = len(built.parts) - 2  # folders above "src" in the compile-time paths (parts[0] is "/")
    env = {
        "PYTHONPATH": str(copy),
        "COVERAGE_FILE": str(data),
        "GCOV_PREFIX": str(work),
        "GCOV_PREFIX_STRIP": str(strip),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    pyargs = "--pyargs" in pytest_args
    # the same tests, from the coverage build's copy of the tree (module names with --pyargs)
    where = targets if pyargs else [str(copy / Path(t).relative_to(project)) for t in targets]
    argv = [sys.executable, "-m", "coverage", "run", *(f"--source={p}" for p in packages), "-m", "pytest", "-q",
            "-p", "no:cacheprovider", "-o", "addopts=", *where, *pytest_args]
    run = pipe.run_command("coverage-tests", argv, env=env, cwd=work)
    if run.exit_code not in (0, 1) or not data.is_file():
        return StageResult(name="coverage", status="error", detail=f"tests under coverage.py: {run.detail}",
                           log=run.log)
    cell_file = pipe.path("coverage-cell.json")
    collect = pipe.run_command("coverage-collect", pipe.xcompat(
        "coverage", "collect", "--cell-id", cell, "--python-data", data, "--gcov-root", copy,
        "--source-root", project, "--map", f"{copy}=.", "--out", cell_file), outputs=[cell_file])
    if collect.status != "passed":
        return StageResult(name="coverage", status="error", detail=f"collect: {collect.detail}", log=collect.log)
    merged = pipe.path("coverage")
    merge = pipe.run_command("coverage", pipe.xcompat(
        "coverage", "merge", cell_file, "--repo", project, *_thresholds(stages), "--out-dir", merged),
        outputs=[merged / "coverage.json"])
    shutil.rmtree(work, ignore_errors=True)
    return merge
