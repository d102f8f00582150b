"""``xcompat build`` through the real CLI on small real projects: build, repair, audits,
tool failures with the failing cell and its log, cibuildwheel's derived configuration."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from xcompat import jsonio

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
PY = f"{sys.version_info.major}.{sys.version_info.minor}"

ABI3_C = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdio.h>
/* Not in the 3.10 Limited API (added in 3.13): abi3audit must flag it. */
extern const char *PyUnicode_AsUTF8(PyObject *);
static PyObject *first(PyObject *self, PyObject *arg) {
    const char *s = PyUnicode_AsUTF8(arg);
    if (s == NULL) return NULL;
    return PyLong_FromLong((long)s[0]);
}
static PyObject *hyp(PyObject *self, PyObject *args) {
    double a, b;
    char text[64];
    if (!PyArg_ParseTuple(args, "dd", &a, &b)) return NULL;
    snprintf(text, sizeof text, "%.17g", hypot(a, b)); /* a libc call: auditwheel detects libc by it */
    return PyUnicode_FromString(text);
}
static PyMethodDef methods[] = {{"first", first, METH_O, ""}, {"hyp", hyp, METH_VARARGS, ""}, {NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_tiny", NULL, -1, methods};
PyMODINIT_FUNC PyInit__tiny(void) { return PyModule_Create(&mod); }
"""


def tiny_project(root: Path, source: str = ABI3_C) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(textwrap.dedent("""
        [build-system]
        requires = ["setuptools>=70", "wheel"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "tiny"
        version = "0.1"
        requires-python = ">=3.10"
    """))
    (root / "setup.py").write_text(textwrap.dedent("""
        from setuptools import Extension, setup
        setup(
            ext_modules=[Extension("tiny._tiny", ["tiny.c"], py_limited_api=True,
                                   define_macros=[("Py_LIMITED_API", "0x030A0000")], libraries=["m"])],
            packages=["tiny"],
            options={"bdist_wheel": {"py_limited_api": "cp310"}},
        )
    """))
    (root / "tiny").mkdir(exist_ok=True)
    (root / "tiny" / "__init__.py").write_text("")
    (root / "tiny.c").write_text(source)
    return root


def xcompat(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "xcompat", *args], cwd=cwd, capture_output=True, text=True, timeout=600,
        env={**os.environ, "CI": "", "GITHUB_ACTIONS": "", **(env or {})}, check=False,
    )


HOST_POLICY = "manylinux_{}_{}".format(*__import__("platform").libc_ver()[1].split(".")[:2])

MATRIX = f"""
xcompat: 1
repo: acme/tiny
serial: 1
python: ["{PY}"]
platforms:
  linux:
    archs: [x86_64]
backends:
  cpu: {{}}
"""


@pytest.fixture(scope="module")
def tiny_build(tmp_path_factory) -> tuple[subprocess.CompletedProcess[str], Path]:
    root = tmp_path_factory.mktemp("tiny")
    tiny_project(root / "src")
    summary = root / "step-summary.md"
    proc = xcompat("build", "src", "--out", "out", "--isolation", "off", "--json", cwd=root,
                   env={"GITHUB_STEP_SUMMARY": str(summary)})
    return proc, root / "out"


def test_job_summary_lists_the_wheel(tiny_build) -> None:
    _, out = tiny_build
    text = (out.parent / "step-summary.md").read_text()
    wheel = jsonio.read_json(out / "build.json")["wheels"][0]
    assert "### xcompat build: passed" in text
    assert f"| `{wheel['file']}` | - |" in text and wheel["platform_policy"]["symbol_tag"] in text


def test_native_build_writes_a_valid_record(tiny_build) -> None:
    proc, out = tiny_build
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert document == jsonio.read_json(out / "build.json", schema="build")
    (wheel,) = document["wheels"]
    assert wheel["file"].startswith("tiny-0.1-cp310-abi3-manylinux_")
    assert (out / wheel["file"]).is_file() and (out / wheel["file"]).stat().st_size == wheel["size"]
    import hashlib

    assert hashlib.sha256((out / wheel["file"]).read_bytes()).hexdigest() == wheel["sha256"]
    assert wheel["repair"] == "auditwheel" and wheel["cell_id"] is None
    assert wheel["platform_policy"]["symbol_tag"].startswith("manylinux_")
    assert wheel["external_libs"] == [] and wheel["excluded_libs"] == []
    assert (out / wheel["log"]).is_file()
    assert "manylinux_" in proc.stderr and "abi3audit: failed" in proc.stderr


def test_abi3_audit_flags_a_function_newer_than_the_abi3_floor(tiny_build) -> None:
    _, out = tiny_build
    abi3 = jsonio.read_json(out / "build.json")["wheels"][0]["abi3"]
    assert abi3["scope"] == "wheel" and abi3["status"] == "failed"
    (obj,) = abi3["objects"]
    assert obj["name"] == "_tiny.abi3.so" and obj["baseline"] == "3.10"
    # Depending on abi3audit's symbol tables: outside the stable ABI, or in it only from 3.13.
    flagged = set(obj["non_abi3_symbols"]) | set(obj["future_abi3_objects"])
    assert "PyUnicode_AsUTF8" in flagged
    assert not obj["is_abi3"] or not obj["compatible"]


def test_policy_symbols_name_the_glibc_functions(tiny_build) -> None:
    _, out = tiny_build
    policy = jsonio.read_json(out / "build.json")["wheels"][0]["platform_policy"]
    names = {s["name"] for entry in policy["set_by"] for s in entry["symbols"]}
    versions = {entry["version"] for entry in policy["set_by"]}
    assert names and all(v.startswith("GLIBC_") for v in versions)
    glibc = max(tuple(int(x) for x in v.split("_")[1].split("."))
                for versions_of_lib in policy["versioned_symbols"].values()
                for v in versions_of_lib if v.startswith("GLIBC_"))
    assert f"GLIBC_{'.'.join(map(str, glibc))}" in versions


def test_auditwheel_text_fallback_agrees_with_json(tiny_build) -> None:
    from xcompat.builder.audit import auditwheel_show
    from xcompat.builder.tools import tool_env

    _, out = tiny_build
    wheel = next(out.glob("*.whl"))
    env = tool_env()
    from_json = auditwheel_show(wheel, env=env, json_output=True)
    from_text = auditwheel_show(wheel, env=env, json_output=False)
    assert from_json["source"] == "auditwheel-json" and from_text["source"] == "auditwheel-text"
    for key in ("overall_tag", "sym_tag", "versioned_symbols", "external_libs"):
        assert from_json[key] == from_text[key], key


def test_failing_build_names_the_cell_and_shows_the_compiler_error(tmp_path: Path) -> None:
    tiny_project(tmp_path / "src", source="int broken( { return 0; }\n")
    (tmp_path / "matrix.yml").write_text(MATRIX)
    proc = xcompat("build", "src", "--out", "out", "--matrix", "matrix.yml", "--isolation", "off", cwd=tmp_path,
                   env={"GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")})
    assert proc.returncode == 4, proc.stderr
    cell = f"py{PY}-linux-x86_64-cpu"
    assert f"python -m build failed for cell {cell}" in proc.stderr
    assert "tiny.c" in proc.stderr and "error" in proc.stderr  # the compiler's message, from the log tail
    assert "Traceback" not in proc.stderr.split("error:")[0]
    record = jsonio.read_json(tmp_path / "out" / "build.json", schema="build")
    assert record["status"] == "failed" and record["cell_id"] == cell
    assert record["errors"][0]["cell_id"] == cell and record["errors"][0]["log_tail"]
    assert not list((tmp_path / "out").glob("*.whl"))
    summary = (tmp_path / "summary.md").read_text()
    assert "### xcompat build: failed" in summary and f"**{cell}**" in summary and "tiny.c" in summary


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["build", "missing-folder"], 2, "project folder not found"),
        (["build", ".", "--backend", "cibuildwheel"], 2, "needs --matrix"),
        (["build", ".", "--matrix", "nope.yml"], 2, "matrix file not found"),
        (["build", ".", "--matrix", "matrix.yml", "--cell", "py2.7-linux"], 2, "is not a cell of the plan"),
        (["build", ".", "--matrix", "matrix.yml", "--device", "rocm"], 2, "no cell of the plan is built"),
    ],
)
def test_usage_errors(tmp_path: Path, args: list[str], code: int, message: str) -> None:
    tiny_project(tmp_path)
    (tmp_path / "matrix.yml").write_text(MATRIX)
    proc = xcompat(*args, cwd=tmp_path)
    assert proc.returncode == code, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "wheelhouse").exists()


def test_cibuildwheel_without_container_engine_is_unavailable(tmp_path: Path) -> None:
    from xcompat.builder.cibw import container_engine
    from xcompat.builder.tools import tool_env

    if container_engine(tool_env()) is not None:
        pytest.skip("a container engine is running here: the containerised build would run")
    tiny_project(tmp_path)
    (tmp_path / "matrix.yml").write_text(MATRIX)
    proc = xcompat("build", ".", "--backend", "cibuildwheel", "--matrix", "matrix.yml", cwd=tmp_path)
    assert proc.returncode == 5
    assert "container engine" in proc.stderr and "--backend native" in proc.stderr


def test_container_settings_from_the_environment(tmp_path: Path) -> None:
    tiny_project(tmp_path)
    (tmp_path / "matrix.yml").write_text(MATRIX)
    env = {"XCOMPAT_CPU_BUILDER_IMAGE": "local/builder:1", "XCOMPAT_CONTAINER_ARGS": "--network=host -e 'A=b c'"}
    proc = xcompat("build", ".", "--backend", "cibuildwheel", "--matrix", "matrix.yml", "--print-config",
                   cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    (run,) = json.loads(proc.stdout)["runs"]
    assert run["env"]["CIBW_MANYLINUX_X86_64_IMAGE"] == "local/builder:1"
    assert run["env"]["CIBW_CONTAINER_ENGINE"] == "docker; create_args: --network=host -e 'A=b c'"
    bad = xcompat("build", ".", "--backend", "cibuildwheel", "--matrix", "matrix.yml", "--print-config",
                  cwd=tmp_path, env={"XCOMPAT_CONTAINER_ARGS": "-v '/unterminated"})
    assert bad.returncode == 2 and not bad.stdout
    assert "XCOMPAT_CONTAINER_ARGS" in bad.stderr and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) <= 2


def test_print_config_is_confirmed_by_cibuildwheel(tmp_path: Path) -> None:
    matrix = REPO / "examples" / "sample-ext" / ".xcompat" / "matrix.yml"
    if not matrix.is_file():
        pytest.skip("the sample matrix is not in this checkout")
    proc = xcompat("build", str(REPO / "examples" / "sample-ext"), "--backend", "cibuildwheel", "--matrix",
                   str(matrix), "--device", "cpu", "--device", "cuda", "--print-config", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    runs = json.loads(proc.stdout)["runs"]
    assert runs and all(r["platform"] == "linux" for r in runs)
    for run in runs:
        # Everything derived is something cibuildwheel agrees to build, except what it reports unsupported.
        confirmed = [i for i in run["identifiers"] if i not in run["unsupported"]]
        assert confirmed, run
        assert all(i.endswith(("_x86_64", "_aarch64")) for i in run["identifiers"])
    cuda = [r for r in runs if r["flavour"].startswith("cuda")]
    assert cuda and all(r["env"]["CIBW_CONTAINER_ENGINE"] == "docker; create_args: --gpus all" for r in cuda)
    assert all("TORCH_CUDA_ARCH_LIST=" in r["env"]["CIBW_ENVIRONMENT_LINUX"] for r in cuda)


def test_matrix_cells_this_runner_cannot_serve_are_skipped_with_a_reason(tmp_path: Path) -> None:
    from importlib.metadata import version

    torch_mm = ".".join(version("torch").split(".")[:2])
    root = tiny_project(tmp_path / "src")
    text = (root / "pyproject.toml").read_text().replace('"wheel"]', '"wheel", "torch"]')
    (root / "pyproject.toml").write_text(text)
    other_py = "3.12" if PY != "3.12" else "3.13"
    matrix = MATRIX.replace(f'python: ["{PY}"]', f'python: ["{PY}", "{other_py}"]')
    # The policy this machine's glibc meets (a native build cannot reach older ones).
    matrix = matrix.replace("archs: [x86_64]", f"archs: [x86_64]\n    policy: {HOST_POLICY}")
    (tmp_path / "matrix.yml").write_text(matrix + f'frameworks:\n  torch: ["1.0", "{torch_mm}"]\n')
    proc = xcompat("build", "src", "--out", "out", "--matrix", "matrix.yml", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    rows = {row["id"]: row for row in record["cells"]}
    built = [r for r in rows.values() if r["status"] == "passed"]
    assert [r["id"] for r in built] == [f"py{PY}-linux-x86_64-cpu-torch{torch_mm}"]
    assert "wants 1.0" in rows[f"py{PY}-linux-x86_64-cpu-torch1.0"]["reason"]
    skipped_other = [r for r in rows.values() if r["id"].startswith(f"py{other_py}-")]
    assert skipped_other and all(r["status"] == "skipped" for r in skipped_other) or shutil.which(f"python{other_py}")
    assert record["wheels"][0]["cell_id"] == built[0]["id"]
    assert record["status"] == "passed" and "skipped" in record["summary"]


def test_native_build_refused_by_an_older_policy_says_what_to_do(tmp_path: Path) -> None:
    tiny_project(tmp_path / "src")
    matrix = MATRIX.replace("archs: [x86_64]", "archs: [x86_64]\n    policy: manylinux_2_17")
    (tmp_path / "matrix.yml").write_text(matrix)
    proc = xcompat("build", "src", "--out", "out", "--matrix", "matrix.yml", "--isolation", "off", cwd=tmp_path)
    assert proc.returncode == 4, proc.stderr
    assert "auditwheel repair failed for cell" in proc.stderr
    assert "needs a newer glibc than manylinux_2_17_x86_64" in proc.stderr
    assert "--backend cibuildwheel" in proc.stderr
    assert "too-recent versioned symbols" in proc.stderr  # auditwheel's own words, from the log tail
