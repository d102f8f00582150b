"""``xcompat run`` on a real C-extension project that keeps its tests inside the package and does not
use torch: `matrix init` finds the tests, they run against the installed wheel (not the source tree),
kernels are skipped with the reason, and a failing test turns the report and the exit code red."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

C_SOURCE = """#include <Python.h>
static PyObject *add(PyObject *self, PyObject *args) {
    long a, b;
    if (!PyArg_ParseTuple(args, "ll", &a, &b)) return NULL;
    return PyLong_FromLong(a + b);
}
static PyMethodDef methods[] = {{"add", add, METH_VARARGS, "add"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_core", NULL, -1, methods};
PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&mod); }
"""

TESTS = '''import tinyext


def test_add():
    assert tinyext.add(2, 3) == 5


def test_imports_the_installed_wheel_not_the_source_tree():
    # the compiled module exists only in the wheel: the source tree has just _core.c
    assert tinyext._core.__file__.endswith(".so")
    assert "{project}" not in tinyext.__file__
'''


def _project(root: Path) -> Path:
    project = root / "tinyext-src"
    (project / "tinyext" / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=70"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "tinyext"\nversion = "1.0.0"\nrequires-python = ">=3.10"\ndependencies = ["packaging"]\n\n'
        '[tool.setuptools]\npackages = ["tinyext", "tinyext.tests"]\n')
    (project / "setup.py").write_text(
        'from setuptools import Extension, setup\nsetup(ext_modules=[Extension("tinyext._core", ["tinyext/_core.c"])])\n')
    (project / "tinyext" / "_core.c").write_text(C_SOURCE)
    (project / "tinyext" / "__init__.py").write_text("from tinyext import _core\nfrom tinyext._core import add\n")
    (project / "tinyext" / "tests" / "__init__.py").write_text("")
    (project / "tinyext" / "tests" / "test_core.py").write_text(TESTS.replace("{project}", str(project)))
    return project


def _xcompat(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI" and not k.startswith(("GITHUB_", "GITLAB", "CI_"))}
    return subprocess.run([sys.executable, "-m", "xcompat", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)


def test_in_package_tests_without_torch_green_then_red(tmp_path: Path) -> None:
    project = _project(tmp_path)
    init = _xcompat("matrix", "init", str(project), "--repo", "acme/tinyext", cwd=tmp_path)
    assert init.returncode == 0, init.stderr
    matrix = (project / ".xcompat" / "matrix.yml").read_text()
    assert 'pytest: ["tinyext.tests"]' in matrix and '"--pyargs"' in matrix and "kernels: none" in matrix

    out = tmp_path / "out"
    run = _xcompat("run", str(project), "--out", str(out), "--no-coverage", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "is not signed" in run.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["conclusion"] == "success"
    (cell,) = report["cells"]
    assert cell["tests"] == {"passed": 2, "failed": 0, "skipped": 0, "not_run": 0}
    kernels = next(s for s in cell["stages"] if s["kind"] == "kernels")
    assert kernels["status"] == "skipped" and "tests.kernels: none" in kernels["summary"]
    assert any("unsigned" in n for n in report["notes"])
    # the report command reads the run's folder and gives the same verdict
    again = _xcompat("report", str(out), "--format", "json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["conclusion"] == "success"

    # a planted failing test: red report, exit 1, the test named in report.md
    with open(project / "tinyext" / "tests" / "test_core.py", "a") as fh:
        fh.write("\n\ndef test_planted_failure():\n    assert tinyext.add(1, 1) == 3\n")
    run = _xcompat("run", str(project), "--out", str(out), "--no-coverage", cwd=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert json.loads((out / "report.json").read_text())["conclusion"] == "failure"
    assert "test_planted_failure" in (out / "report.md").read_text()
    assert _xcompat("report", str(out), cwd=tmp_path).returncode == 1


def _git(project: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org"}
    subprocess.run(["git", "-C", str(project), *args], check=True, capture_output=True, env=env)


def test_abi_baseline_is_the_last_release_tag_from_git(tmp_path: Path) -> None:
    """No --baseline: abi.baseline last-release-tag is found in git, exported, built and diffed against."""
    project = _project(tmp_path)
    assert _xcompat("matrix", "init", str(project), "--repo", "acme/tinyext", cwd=tmp_path).returncode == 0
    _git(project, "init", "-q", "-b", "main")
    _git(project, "add", "-A")
    _git(project, "commit", "-q", "-m", "1.0.0")
    _git(project, "tag", "v1.0.0")
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('version = "1.0.0"', 'version = "1.1.0"')
                         .replace('requires-python = ">=3.10"', 'requires-python = ">=3.11"'))
    _git(project, "commit", "-q", "-am", "1.1.0")
    out = tmp_path / "out"
    run = _xcompat("run", str(project), "--out", str(out), "--no-coverage", cwd=tmp_path)
    stages = {s["name"]: s for s in json.loads((out / "run.json").read_text())["stages"]}
    assert stages["baseline"]["status"] == "passed", run.stdout + run.stderr
    assert "the last release tag v1.0.0" in stages["baseline"]["detail"]
    abi = json.loads((out / "abi.json").read_text())
    assert abi["old"]["version"] == "1.0.0" and abi["new"]["version"] == "1.1.0"
    # narrowing Requires-Python is a finding the matrix's default policy knows
    assert "requires_python_narrowed" in {f["kind"] for f in abi["findings"]}
