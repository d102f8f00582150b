"""``xcompat run`` against every kind of ABI baseline a user gives it, through the real CLI on a
small C-extension project (two releases: 1.0.0 and 1.1.0, which raises Requires-Python).

A baseline that cannot work is refused before anything is built (exit 2); an sdist is built and
compared; a baseline that is missing or whose build fails makes the ABI stage "not run", which the
report shows as "not compared" without any ABI claim, red only when the matrix requires a baseline.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import time
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
MATRIX = """xcompat: 1
repo: acme/tinyabi
serial: 1
python: ["{python}"]
platforms:
  linux:
    archs: [x86_64, aarch64]
backends:
  cpu:
    required: true
tests:
  kernels: none
  pytest: [tests]
abi:
  baseline: last-release-tag
{abi_extra}"""
# Words a report may only say after an ABI diff was made.
ABI_CLAIMS = ("ABI unchanged", "No changes to the exported interface", "bump required", "release as",
              "make this a", "ABI: no change")


def _python() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def _project(root: Path, version: str, *, requires_python: str = ">=3.8", broken: bool = False,
             abi_extra: str = "", python: str | None = None) -> Path:
    project = root / f"tinyabi-{version}"
    (project / "tinyabi").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=70"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "tinyabi"\nversion = "{version}"\nrequires-python = "{requires_python}"\n\n'
        '[tool.setuptools]\npackages = ["tinyabi"]\n')
    (project / "setup.py").write_text(
        'from setuptools import Extension, setup\nsetup(ext_modules=[Extension("tinyabi._core", ["tinyabi/_core.c"])])\n')
    (project / "tinyabi" / "_core.c").write_text(C_SOURCE + ("\nthis does not compile;\n" if broken else ""))
    (project / "tinyabi" / "__init__.py").write_text("from tinyabi._core import add\n")
    (project / "tests" / "test_add.py").write_text("import tinyabi\n\n\ndef test_add():\n    assert tinyabi.add(2, 3) == 5\n")
    (project / ".xcompat").mkdir()
    (project / ".xcompat" / "matrix.yml").write_text(MATRIX.format(python=python or _python(), abi_extra=abi_extra))
    return project


def _sdist(project: Path, dest: Path) -> Path:
    """The project as an sdist: its files under ``tinyabi-VERSION/`` in a .tar.gz."""
    version = project.name.rpartition("-")[2]
    archive = dest / f"tinyabi-{version}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for path in sorted(project.rglob("*")):
            if path.is_file() and ".xcompat" not in path.parts:
                tar.add(path, arcname=f"tinyabi-{version}/{path.relative_to(project).as_posix()}")
    return archive


def _run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI" and not k.startswith(("GITHUB_", "GITLAB", "CI_"))}
    return subprocess.run([sys.executable, "-m", "xcompat", "run", *map(str, args), "--no-coverage"], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=900, check=False)


def _stages(out: Path) -> dict[str, dict]:
    return {s["name"]: s for s in json.loads((out / "run.json").read_text())["stages"]}


def _report(out: Path) -> tuple[dict, str, str]:
    return (json.loads((out / "report.json").read_text()), (out / "report.md").read_text(),
            (out / "report.html").read_text())


def _nothing_built(tmp_path: Path, out: Path) -> None:
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(f".{out.name}.partial")]  # no staging folder
    assert not list(tmp_path.rglob("*.whl")) and not list(tmp_path.rglob("build.log"))


# -- refused before the first build ----------------------------------------------------------------
def _not_an_sdist(tmp_path: Path) -> Path:
    path = tmp_path / "notes-1.0.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        data = b"just notes\n"
        info = tarfile.TarInfo("notes-1.0/README")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize(("make", "message"), [
    (lambda tmp: tmp / "no-such-release", "--baseline: no such file or folder"),
    (lambda tmp: _not_an_sdist(tmp), "no pyproject.toml or setup.py in its top folder"),
    (lambda tmp: (tmp / "empty").mkdir() or tmp / "empty", "holds no pyproject.toml, setup.py or wheel"),
    (lambda tmp: (tmp / "old.zip").write_bytes(b"PK\x05\x06" + bytes(18)) and tmp / "old.zip", "sdists are .tar.gz"),
])
def test_a_baseline_that_cannot_work_exits_2_before_building(tmp_path: Path, make, message: str) -> None:
    project = _project(tmp_path, "1.1.0")
    baseline = make(tmp_path)
    out = tmp_path / "out"
    start = time.monotonic()
    run = _run(project, "--baseline", baseline, "--out", out, cwd=tmp_path)
    elapsed = time.monotonic() - start
    assert run.returncode == 2, run.stdout + run.stderr
    errors = [line for line in run.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and message in errors[0] and str(baseline) in errors[0], run.stderr
    assert "stage " not in run.stderr  # no stage started
    _nothing_built(tmp_path, out)
    assert elapsed < 60, elapsed  # the old code built and tested first


def test_a_matrix_without_the_running_python_exits_2_before_building(tmp_path: Path) -> None:
    other = "3.10" if _python() != "3.10" else "3.12"
    project = _project(tmp_path, "1.1.0", python=other)
    out = tmp_path / "out"
    start = time.monotonic()
    run = _run(project, "--out", out, cwd=tmp_path)
    elapsed = time.monotonic() - start
    assert run.returncode == 2, run.stdout + run.stderr
    errors = [line for line in run.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, run.stderr
    assert f"no cell for the running Python {_python()} (its Pythons: {other})" in errors[0]
    assert "stage " not in run.stderr
    _nothing_built(tmp_path, out)
    assert elapsed < 60, elapsed


# -- an sdist is a baseline ------------------------------------------------------------------------
def test_an_sdist_baseline_is_built_and_compared(tmp_path: Path) -> None:
    sdist = _sdist(_project(tmp_path / "old", "1.0.0"), tmp_path)
    project = _project(tmp_path, "1.1.0", requires_python=">=3.10")
    out = tmp_path / "out"
    run = _run(project, "--baseline", sdist, "--out", out, cwd=tmp_path)
    stages = _stages(out)
    assert stages["baseline"]["status"] == "passed", run.stdout + run.stderr
    assert f"the sdist {sdist.name}: built tinyabi-1.0.0-" in stages["baseline"]["detail"]
    abi = json.loads((out / "abi.json").read_text())
    assert (abi["old"]["version"], abi["new"]["version"]) == ("1.0.0", "1.1.0")
    assert ("requires_python_narrowed", "major") in {(f["kind"], f["required_bump"]) for f in abi["findings"]}
    assert [p.name[:14] for p in (out / "baseline").iterdir()] == ["tinyabi-1.0.0-"]
    report, md, _ = _report(out)
    assert report["abi"]["compared"] is True and report["abi"]["required_bump"] == "major"
    # the baseline's build is the baseline's own row, not a second "build" result
    other = [(r["kind"], r["status"]) for r in report["other"]]
    assert other.count(("build", "passed")) == 1 and ("baseline", "passed") in other, other
    assert "| baseline | — | ✅ passed | the sdist " in md
    assert run.returncode == 1  # 1.0.0 -> 1.1.0 is minor; dropping Pythons needs a major bump
    assert "release as 2.0.0" in md


# -- no baseline: the ABI is not compared, and the report says only that ---------------------------
def _assert_no_abi_claim(out: Path) -> tuple[dict, str]:
    report, md, html = _report(out)
    assert report["abi"]["compared"] is False and report["abi"]["findings"] == []
    assert "ABI: not compared" in report["headline"]
    for text in (md, html):
        assert "not compared" in text
        for claim in ABI_CLAIMS:
            assert claim not in text, claim
    return report, md


def test_no_release_tag_is_not_compared_and_claims_nothing(tmp_path: Path) -> None:
    project = _project(tmp_path, "1.1.0")
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    out = tmp_path / "out"
    run = _run(project, "--out", out, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    stages = _stages(out)
    assert stages["abi"]["status"] == "skipped"
    assert stages["abi"]["detail"].startswith("not run: abi.baseline last-release-tag: no release tag")
    report, md = _assert_no_abi_claim(out)
    assert report["conclusion"] == "success"
    assert "no release tag" in md


def test_a_failing_baseline_build_is_not_compared_and_red_only_when_required(tmp_path: Path) -> None:
    broken = _project(tmp_path / "old", "1.0.0", broken=True)
    project = _project(tmp_path, "1.1.0")
    out = tmp_path / "out"
    run = _run(project, "--baseline", broken, "--out", out, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    stages = _stages(out)
    assert stages["build"]["status"] == "passed" and stages["baseline"]["status"] == "error"
    assert stages["abi"]["status"] == "skipped"
    assert stages["abi"]["detail"].startswith(f"not run: the project {broken}: the baseline's build failed: exit ")
    report, md = _assert_no_abi_claim(out)
    assert report["conclusion"] == "success"
    # the baseline's failure is the baseline's, never the project's build failing
    other = {r["kind"]: r for r in report["other"]}
    assert other["baseline"]["status"] == "skipped" and "the baseline's build failed" in other["baseline"]["summary"]
    assert [r["status"] for r in report["other"] if r["kind"] == "build"] == ["passed"]
    assert not [f for f in report["failures"] if f["kind"] == "build"]
    assert "**build failed" not in md and "0 wheel(s)" not in md
    assert not (out / "baseline" / "build.json").exists()

    # the same run with a matrix that requires a baseline: red, and the problem says why
    (project / ".xcompat" / "matrix.yml").write_text(
        MATRIX.format(python=_python(), abi_extra="  baseline-required: true\n"))
    run = _run(project, "--baseline", broken, "--out", out, cwd=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert _stages(out)["abi"]["status"] == "failed"
    report, md = _assert_no_abi_claim(out)
    assert report["conclusion"] == "failure"
    lead = md.split("### Matrix")[0]
    assert "**ABI not compared**: the project " in lead and "the baseline's build failed" in lead
    assert "**build failed" not in lead and not [f for f in report["failures"] if f["kind"] == "build"]
