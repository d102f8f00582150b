"""Shared fixtures for the coverage tests: a tiny Python + C extension project, built with
gcov instrumentation the way a wheel build does it (compiled in a separate build copy, then
installed into a site-packages folder), and synthetic cell artifacts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path
from typing import Any

TINY_FILES: dict[str, str] = {
    "pyproject.toml": '[project]\nname = "tinypkg"\nversion = "0.1"\n',
    "src/tinypkg/__init__.py": "from tinypkg.mathops import clamp, describe\n",
    "src/tinypkg/mathops.py": textwrap.dedent(
        """\
        def clamp(x, lo, hi):
            if x < lo:
                return lo
            if x > hi:
                return hi
            return x


        def describe(x):
            if x == 0:
                return "zero"
            elif x > 0:
                return "positive"
            return "negative"


        def never_called():
            a = 1
            b = 2
            return a + b
        """
    ),
    "src/tinypkg/_native.c": textwrap.dedent(
        """\
        #define PY_SSIZE_T_CLEAN
        #include <Python.h>

        static long add_impl(long a, long b) {
            return a + b;
        }

        static long unused_impl(long a) {
            if (a > 10)
                return a * 2;
            return a - 1;
        }

        static PyObject *add(PyObject *self, PyObject *args) {
            long a, b;
            if (!PyArg_ParseTuple(args, "ll", &a, &b))
                return NULL;
            return PyLong_FromLong(add_impl(a, b));
        }

        static PyObject *unused(PyObject *self, PyObject *args) {
            long a;
            if (!PyArg_ParseTuple(args, "l", &a))
                return NULL;
            return PyLong_FromLong(unused_impl(a));
        }

        static PyMethodDef methods[] = {
            {"add", add, METH_VARARGS, "add two integers"},
            {"unused", unused, METH_VARARGS, "not called by the tests"},
            {NULL, NULL, 0, NULL},
        };

        static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods};

        PyMODINIT_FUNC PyInit__native(void) {
            return PyModule_Create(&module);
        }
        """
    ),
    "tests/cell_a.py": "import tinypkg, tinypkg._native as n\nassert tinypkg.clamp(5, 0, 3) == 3\nassert n.add(2, 3) == 5\n",
    "tests/cell_b.py": "import tinypkg\nassert tinypkg.clamp(-1, 0, 3) == 0\nassert tinypkg.describe(0) == 'zero'\n",
}


def write_tiny_project(root: Path) -> Path:
    for rel, text in TINY_FILES.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


def build_tiny_cell(project: Path, work: Path, cell: str) -> dict[str, Path]:
    """Build ``tinypkg`` the way a wheel build would and run one cell's driver under coverage.

    The C file is compiled in a separate build copy (like pip's ``/tmp/pip-req-build-*``), the
    package is installed into ``work/site-packages``, and the driver script runs with
    coverage.py measuring the installed copy. Returns the data file and build folder.
    """
    build_copy = work / "pip-req-build-tinypkg"
    shutil.copytree(project / "src", build_copy / "src")
    shutil.copy2(project / "pyproject.toml", build_copy / "pyproject.toml")
    objdir = build_copy / "build" / "temp"
    objdir.mkdir(parents=True)
    site = work / "site-packages"
    shutil.copytree(project / "src" / "tinypkg", site / "tinypkg", ignore=shutil.ignore_patterns("*.c"))
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    include = sysconfig.get_paths()["include"]
    source = build_copy / "src" / "tinypkg" / "_native.c"
    obj = objdir / "_native.o"
    subprocess.run(
        ["gcc", "-O0", "--coverage", "-fPIC", f"-I{include}", "-c", str(source), "-o", str(obj)],
        check=True,
        cwd=objdir,
    )
    subprocess.run(
        ["gcc", "-shared", "--coverage", str(obj), "-o", str(site / "tinypkg" / f"_native{suffix}")],
        check=True,
    )
    data = work / f".coverage.{cell}"
    env = {**os.environ, "PYTHONPATH": str(site), "COVERAGE_FILE": str(data)}
    subprocess.run(
        [sys.executable, "-m", "coverage", "run", "--source=tinypkg", str(project / "tests" / f"{cell}.py")],
        check=True,
        env=env,
        cwd=work,
    )
    return {"data": data, "build": objdir, "site": site}


def synthetic_artifact(
    cell_id: str | None,
    files: dict[str, tuple[list[int], list[int]]],
    *,
    language: dict[str, str] | None = None,
) -> dict[str, Any]:
    from xcompat.coverage.languages import language_of

    return {
        "version": 1,
        "kind": "coverage",
        "cell_id": cell_id,
        "status": "passed",
        "summary": "synthetic",
        "source_root": "/repo",
        "tools": {},
        "files": {
            path: {
                "language": (language or {}).get(path, language_of(path)),
                "origin": "coverage.py" if path.endswith(".py") else "gcovr",
                "lines": lines,
                "hits": hits,
            }
            for path, (lines, hits) in files.items()
        },
        "unmapped": [],
        "unmapped_total": 0,
        "warnings": [],
        "errors": [],
    }


def write_artifact(path: Path, document: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _cli_env(env: dict[str, str] | None) -> dict[str, str]:
    full_env = {**os.environ, **(env or {})}
    for key in ("GITHUB_ACTIONS", "GITLAB_CI", "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"):
        if env is None or key not in env:
            full_env.pop(key, None)
    return full_env


def run_xcompat(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "xcompat", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=_cli_env(env),
        check=False,
    )


def run_xcompat_in_process(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """:func:`run_xcompat` through ``cli.main`` in this process."""
    from tests.helpers.cli import xcompat_in_process

    return xcompat_in_process(*args, cwd=cwd, env=_cli_env(env))


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout


# -- the bundled sample project, built with gcov instrumentation ---------------------------


def cache_root() -> Path:
    return Path(os.environ.get("XCOMPAT_TEST_CACHE", Path.home() / ".cache" / "xcompat-tests"))


def build_sample_with_coverage(project: Path) -> Path:
    """The sample project's C and C++ extensions built in place with ``--coverage``, through
    the same cached build ``xcompat run`` uses (``xcompat.pipeline.coverage_build``), with
    CUDA left out. Returns the built copy, which is never written to after the build: test
    runs redirect their ``.gcda`` files with ``GCOV_PREFIX`` (see :func:`run_sample_tests`).
    """
    from xcompat.pipeline.coverage_build import build_with_coverage

    log = cache_root() / f"coverage-build-{project.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes(b"")
    try:
        src = build_with_coverage(project, log)
    except RuntimeError as exc:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        raise RuntimeError(f"{exc}:\n{tail}") from None
    if not list(src.rglob("*.gcno")):
        raise RuntimeError(f"coverage build of {project} produced no .gcno files (flags not applied?)")
    return src


def run_sample_tests(built: Path, work: Path, tests: list[str], *, cell: str) -> dict[str, Any]:
    """Run some of the sample project's tests under coverage.py in a relocated copy of the build.

    The cached build is copied to ``work/src`` (sources, ``.gcno`` files and extensions),
    and ``GCOV_PREFIX``/``GCOV_PREFIX_STRIP`` send the ``.gcda`` files there too, the way
    a build moved into a container or onto another runner writes its data. The cache stays
    untouched and each cell has its own native data.
    """
    copy = work / "src"
    shutil.copytree(built, copy, symlinks=True)
    strip = len(built.parts) - 2  # folders above "src" in the compile-time paths (parts[0] is "/")
    data = work / f".coverage.{cell}"
    env = {
        **os.environ,
        "PYTHONPATH": str(copy),
        "COVERAGE_FILE": str(data),
        "GCOV_PREFIX": str(work),
        "GCOV_PREFIX_STRIP": str(strip),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "coverage",
            "run",
            "--source=sample_ext",
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            "--import-mode=importlib",
            *[str(copy / t) for t in tests],
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    # 0: all passed, 1: some of the sample's own tests failed (their coverage still counts);
    # anything else (crash, usage error, no tests) means there is no data worth checking.
    if proc.returncode not in (0, 1) or not data.is_file():
        raise RuntimeError(
            f"sample tests did not run in cell {cell} (exit {proc.returncode}):\n"
            f"{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}"
        )
    if not list(copy.rglob("*.gcda")):
        raise RuntimeError(f"no .gcda files under {copy}: GCOV_PREFIX redirection did not work")
    return {
        "data": data,
        "gcov_root": copy / "build",
        "pytest_exit": proc.returncode,
        "pytest_tail": proc.stdout[-800:],
    }
