"""Small projects as users keep them: a git checkout with build leftovers, a setup.py-only
torch extension; and what a test needs to check that xcompat left such a checkout as it was.

    project = c_extension(tmp_path / "tinyc")     # setuptools C extension with a test, in git
    stale_coverage_build(project)                 # build/ holding a gcov-instrumented -O0 module
    before = tree_hashes(project)                 # every file, .git included
    ...
    assert tree_hashes(project, skip={".xcompat-out"}) == before
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

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

CPP_SOURCE = """#include <Python.h>
static PyObject *twice(PyObject *, PyObject *arg) {
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred()) return nullptr;
    return PyLong_FromLong(2 * v);
}
static PyMethodDef methods[] = {{"twice", twice, METH_O, "twice"}, {nullptr, nullptr, 0, nullptr}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_cpu", nullptr, -1, methods};
PyMODINIT_FUNC PyInit__cpu(void) { return PyModule_Create(&mod); }
"""

# A torch extension's setup.py as such projects write it: torch imported at build time, no
# pyproject.toml, and (with_cuda) a CUDA extension added when a toolkit is found the way
# torch.utils.cpp_extension finds one (CUDA_HOME/CUDA_PATH, else the nvcc on PATH).
TORCH_SETUP = '''
import os
import shutil

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension


def cuda_home():
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    nvcc = shutil.which("nvcc")
    if home is None and nvcc is not None:
        home = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    return home


ext_modules = [CppExtension("tops._cpu", ["csrc/cpu.cpp"])]
if WITH_CUDA and cuda_home():
    ext_modules.append(CUDAExtension("tops._cuda", ["csrc/cuda.cu"]))

setup(name="tops", version="VERSION", packages=["tops"], ext_modules=ext_modules,
      cmdclass={"build_ext": BuildExtension})
'''

MATRIX = """xcompat: 1
repo: acme/{name}
serial: 1
python: ["{py}"]
platforms:
  linux:
    archs: [x86_64]
backends:
  cpu:
    required: true
tests:
  pytest: ["tests"]
  kernels: none
abi:
  baseline: last-release-tag
"""

IGNORES = "build/\ndist/\n*.egg-info/\n"


def git(project: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org"}
    return subprocess.run(["git", "-C", str(project), *args], check=True, capture_output=True, text=True,
                          env=env).stdout


def _matrix(project: Path, name: str) -> None:
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    (project / ".xcompat").mkdir(parents=True, exist_ok=True)
    (project / ".xcompat" / "matrix.yml").write_text(MATRIX.format(name=name, py=py))


def c_extension(project: Path) -> Path:
    """A setuptools C extension with one test and a matrix, committed to git."""
    (project / "tinyc").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "pyproject.toml").write_text(textwrap.dedent("""
        [build-system]
        requires = ["setuptools>=70"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "tinyc"
        version = "1.0.0"
        requires-python = ">=3.10"
    """))
    (project / "setup.py").write_text(
        'from setuptools import Extension, setup\n'
        'setup(packages=["tinyc"], ext_modules=[Extension("tinyc._core", ["tinyc/_core.c"])])\n')
    (project / "tinyc" / "__init__.py").write_text("from tinyc._core import add\n")
    (project / "tinyc" / "_core.c").write_text(C_SOURCE)
    (project / "tests" / "test_add.py").write_text("import tinyc\n\n\ndef test_add():\n    assert tinyc.add(2, 3) == 5\n")
    (project / ".gitignore").write_text(IGNORES)
    _matrix(project, "tinyc")
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "1.0.0")
    return project


def torch_extension(project: Path, *, with_cuda: bool = False, version: str = "1.0.0") -> Path:
    """A setup.py-only torch extension (torch.utils.cpp_extension), with one test and a matrix."""
    (project / "tops").mkdir(parents=True)
    (project / "csrc").mkdir()
    (project / "tests").mkdir()
    setup = TORCH_SETUP.replace("WITH_CUDA", str(with_cuda)).replace("VERSION", version)
    (project / "setup.py").write_text(setup.lstrip())
    (project / "csrc" / "cpu.cpp").write_text(CPP_SOURCE)
    (project / "csrc" / "cuda.cu").write_text("__global__ void twice(float *x) { x[threadIdx.x] *= 2.0f; }\n")
    (project / "tops" / "__init__.py").write_text("from tops._cpu import twice\n")
    (project / "tests" / "test_tops.py").write_text("import tops\n\n\ndef test_twice():\n    assert tops.twice(21) == 42\n")
    (project / ".gitignore").write_text(IGNORES)
    _matrix(project, "tops")
    return project


def stale_coverage_build(project: Path, scratch: Path) -> Path:
    """Build ``project`` once in place with ``CFLAGS=--coverage -O0``, as a developer measuring
    coverage does: ``build/`` then holds a gcov-instrumented module. Returns that module."""
    env = {**os.environ, "CFLAGS": "--coverage -O0", "CXXFLAGS": "--coverage -O0", "LDFLAGS": "--coverage"}
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(scratch), "."],
                   cwd=project, env=env, check=True, capture_output=True)
    (module,) = (project / "build").glob("lib.*/*/*.so")
    return module


def stale_checkout_at(root: Path) -> Path:
    """``c_extension`` with what a user measuring coverage leaves: an instrumented module in
    ``build/`` and egg-info beside the sources."""
    project = c_extension(root / "tinyc")
    stale = stale_coverage_build(project, root / "stale-wheels")
    assert gcov_symbols(stale), "the in-place coverage build made no instrumented module"
    assert list(project.glob("*.egg-info/SOURCES.txt"))
    return project


def assert_not_instrumented(wheels: list[Path], scratch: Path) -> None:
    """No extension module of ``wheels`` has gcov symbols or names a ``.gcda`` file."""
    assert wheels
    for wheel in wheels:
        modules = wheel_modules(wheel, scratch / wheel.stem)
        assert modules, wheel
        for module in modules:
            assert gcov_symbols(module) == [], f"{wheel.name}: {module.name} is gcov-instrumented"
            assert b".gcda" not in module.read_bytes(), f"{module.name} names a .gcda file"


def tree_hashes(root: Path, skip: frozenset[str] | set[str] = frozenset()) -> dict[str, str]:
    """sha256 of every file below ``root`` (links as their target text), top-level names in
    ``skip`` left out."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if here == root:
            dirnames[:] = [d for d in dirnames if d not in skip]
            filenames = [f for f in filenames if f not in skip]
        for name in filenames:
            path = here / name
            data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            out[str(path.relative_to(root))] = hashlib.sha256(data).hexdigest()
        for name in dirnames:
            out.setdefault(str((here / name).relative_to(root)) + "/", "folder")
    return out


def gcov_symbols(binary: Path) -> list[str]:
    """The ``__gcov_`` symbols ``nm`` lists in ``binary`` (its symbol table, not only the dynamic one)."""
    nm = shutil.which("nm")
    assert nm is not None, "nm (binutils) is needed to read symbol tables"
    out = subprocess.run([nm, "-a", str(binary)], capture_output=True, text=True, check=True).stdout
    return [line.split()[-1] for line in out.splitlines() if "__gcov_" in line]


def wheel_modules(wheel: Path, dest: Path) -> list[Path]:
    """The extension modules of ``wheel``, unpacked into ``dest``."""
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(dest)
    return sorted(p for p in dest.rglob("*.so") if ".libs" not in p.parts[-2])


def find_nvcc() -> str | None:
    """A real CUDA toolkit's nvcc (``bin/nvcc`` beside ``include/cuda.h``): the one on PATH when
    it lies in a toolkit, else one in /usr/local/cuda*/bin; else whatever nvcc is on PATH."""
    on_path = shutil.which("nvcc")
    candidates = [Path(on_path).resolve()] if on_path else []
    candidates += sorted(Path("/usr/local").glob("cuda*/bin/nvcc"), reverse=True)
    for nvcc in candidates:
        if nvcc.is_file() and (nvcc.parent.parent / "include" / "cuda.h").is_file():
            return str(nvcc)
    return on_path


def nvcc_path_env() -> dict[str, str] | None:
    """``{"PATH": ...}`` with a real toolkit's nvcc first, or None when there is none here."""
    nvcc = find_nvcc()
    if nvcc is None:
        return None
    return {"PATH": os.path.dirname(nvcc) + os.pathsep + os.environ.get("PATH", "")}


def wheel_variants(wheel_folder: Path, scratch: Path) -> list[str]:
    """The extension modules of the one wheel in ``wheel_folder``, by name (``_cpu``, ``_cuda``)."""
    (wheel,) = sorted(wheel_folder.glob("*.whl"))
    return sorted(m.name.split(".")[0] for m in wheel_modules(wheel, scratch))


def xcompat(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "CI" and not k.startswith(("GITHUB_", "GITLAB", "CI_"))}
    return subprocess.run([sys.executable, "-m", "xcompat", *args], cwd=cwd, env={**base, **(env or {})},
                          capture_output=True, text=True, timeout=900, check=False)
