"""Build small native fixtures for the ABI tests: shared libraries, extension modules,
CUDA fat binaries and wheels. Every build is cached by the hash of its inputs under
``${XCOMPAT_TEST_CACHE:-~/.cache/xcompat-tests}/abi`` so a test run compiles each once."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sysconfig
import zipfile
from pathlib import Path

CACHE = Path(os.environ.get("XCOMPAT_TEST_CACHE") or Path.home() / ".cache" / "xcompat-tests") / "abi"

# --- a C/C++ library, two versions ------------------------------------------------------------
DEMO_V1 = r"""
#include <string.h>
#include <stdio.h>
extern "C" {
int demo_table[4] = {1, 2, 3, 4};
int demo_add(int a, int b) { return a + b; }
int legacy(void) { return 42; }
int moved_fn(void) { return 1; }
}
struct Shape { virtual ~Shape(); virtual double area() const; };
Shape::~Shape() {}
double Shape::area() const { return 0; }
"""

DEMO_V2 = r"""
#include <string.h>
#include <stdio.h>
#include <sys/random.h>
#include <filesystem>
extern "C" {
int demo_table[8] = {1, 2, 3, 4, 5, 6, 7, 8};
int demo_add(int a, int b) { return a + b; }
int added_fn(void) { char b[4]; return (int)getrandom(b, sizeof b, 0); }
int moved_fn(void) { return 2; }
}
long demo_cwd_len() { return (long)std::filesystem::current_path().native().size(); }
struct Shape { virtual ~Shape(); virtual double perimeter() const; virtual double area() const; };
Shape::~Shape() {}
double Shape::perimeter() const { return 1; }
double Shape::area() const { return 0; }
"""

SCRIPT_V1 = "DEMO_1.0 { global: demo_*; legacy; moved_fn; _ZTV5Shape; _ZTI5Shape; _ZTS5Shape; _ZN5Shape*; local: *; };\n"
SCRIPT_V2 = (
    "DEMO_1.0 { global: demo_table; demo_add; _ZTV5Shape; _ZTI5Shape; _ZTS5Shape; _ZN5Shape*; local: *; };\n"
    "DEMO_2.0 { global: added_fn; moved_fn; _Z12demo_cwd_lenv; } DEMO_1.0;\n"
)

# --- a CPython extension module with internal C++ symbols (noise) -----------------------------
EXT_V1 = r"""
#include <Python.h>
#include <vector>
namespace impl { int helper(int x) { return x * 2; } int only_in_v1(int x) { return x; } }
std::vector<int> leak_v1() { return std::vector<int>(3); }
extern "C" int demo_c_api_v1(int x) { return impl::helper(x); }
static PyObject* twice(PyObject*, PyObject* arg) { return PyLong_FromLong(impl::helper((int)PyLong_AsLong(arg))); }
static PyMethodDef methods[] = {{"twice", twice, METH_O, nullptr}, {nullptr, nullptr, 0, nullptr}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_demo", nullptr, -1, methods};
PyMODINIT_FUNC PyInit__demo(void) { return PyModule_Create(&mod); }
"""
EXT_V2 = EXT_V1.replace("int only_in_v1(int x) { return x; }", "int only_in_v2(int x) { return -x; }").replace(
    "std::vector<int> leak_v1() { return std::vector<int>(3); }", "std::vector<long> leak_v2() { return std::vector<long>(3); }"
)

# --- a CUDA library built for two architectures, then one ------------------------------------
CUDA_SRC = r"""
__global__ void addone(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.f; }
extern "C" void launch_addone(float* x, int n) { addone<<<(n + 255) / 256, 256>>>(x, n); }
"""

# --- an extension calling a torch function whose signature changed in torch 2.14 ------------
# at::toDLPackNonOwning(const Tensor&, DLTensor*) gained a third (bool) parameter in 2.14.
TORCH_EXT = r"""
#include <Python.h>
struct DLTensor;
namespace at { class Tensor; void toDLPackNonOwning(const Tensor&, DLTensor*); }
namespace c10 { struct Error; }
extern "C" void* xcompat_keep_symbol(void) { return (void*)&at::toDLPackNonOwning; }
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_torchdemo", nullptr, -1, nullptr};
PyMODINIT_FUNC PyInit__torchdemo(void) { return PyModule_Create(&mod); }
"""


def _key(*parts: object) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(repr(p).encode())
    return h.hexdigest()[:16]


def _cached(name: str, key: str) -> Path:
    d = CACHE / f"{name}-{key}"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _run(cmd: list[str], cwd: Path) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")


def build_demo_library(version: str, *, debug: bool = False) -> Path:
    """``libdemo.so`` v1 or v2 (see DEMO_V1 / DEMO_V2 for what changes); ``debug`` adds -g."""
    src, script, soname = {"v1": (DEMO_V1, SCRIPT_V1, "libdemo.so.1"), "v2": (DEMO_V2, SCRIPT_V2, "libdemo.so.2")}[version]
    extra = ["-Wl,--no-as-needed", "-lrt"] if version == "v2" else []
    extra += ["-g"] if debug else []
    d = _cached(f"demo-{version}{'-g' if debug else ''}", _key(src, script, soname, extra))
    out = d / "libdemo.so"
    if not out.exists():
        (d / "demo.cpp").write_text(src)
        (d / "demo.map").write_text(script)
        _run(["g++", "-std=c++17", "-O1", "-shared", "-fPIC", "-o", "libdemo.so.tmp", "demo.cpp",
              f"-Wl,-soname,{soname}", "-Wl,--version-script=demo.map", *extra], d)
        os.replace(d / "libdemo.so.tmp", out)
    return out


def build_extension(version: str) -> Path:
    src = {"v1": EXT_V1, "v2": EXT_V2}[version]
    inc = sysconfig.get_paths()["include"]
    d = _cached(f"ext-{version}", _key(src, inc))
    out = d / "_demo.cpython-311-x86_64-linux-gnu.so"
    if not out.exists():
        (d / "ext.cpp").write_text(src)
        _run(["g++", "-std=c++17", "-O1", "-shared", "-fPIC", f"-I{inc}", "-o", "ext.tmp", "ext.cpp"], d)
        os.replace(d / "ext.tmp", out)
    return out


def build_cuda_library(archs: tuple[str, ...]) -> Path | None:
    """A CUDA shared library with cubins for ``archs`` (e.g. ("80", "90")); None without nvcc."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None
    d = _cached("cuda-" + "-".join(archs), _key(CUDA_SRC, archs))
    out = d / "libaddone.so"
    if not out.exists():
        (d / "k.cu").write_text(CUDA_SRC)
        gencode = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs]
        _run([nvcc, "-shared", "-Xcompiler", "-fPIC", *gencode, "k.cu", "-o", "lib.tmp"], d)
        os.replace(d / "lib.tmp", out)
    return out


def build_torch_extension(torch_lib: Path) -> Path:
    inc = sysconfig.get_paths()["include"]
    d = _cached("torchext", _key(TORCH_EXT, inc, str(torch_lib)))
    out = d / "_torchdemo.cpython-311-x86_64-linux-gnu.so"
    if not out.exists():
        (d / "ext.cpp").write_text(TORCH_EXT)
        _run(["g++", "-std=c++17", "-O1", "-shared", "-fPIC", f"-I{inc}", "-o", "ext.tmp", "ext.cpp",
              f"-L{torch_lib}", "-Wl,--no-as-needed", "-ltorch_cpu", "-lc10", f"-Wl,-rpath,{torch_lib}"], d)
        os.replace(d / "ext.tmp", out)
    return out


def make_wheel(
    dest: Path,
    *,
    name: str = "demo",
    version: str = "1.0.0",
    tag: str = "cp311-cp311-manylinux_2_17_x86_64",
    files: dict[str, Path | str | bytes],
    requires_python: str | None = None,
    requires_dist: tuple[str, ...] = (),
) -> Path:
    """Write a minimal, valid wheel holding ``files`` (arcname -> path, text or bytes)."""
    dest.mkdir(parents=True, exist_ok=True)
    dist = f"{name}-{version}.dist-info"
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if requires_python:
        meta.append(f"Requires-Python: {requires_python}")
    meta += [f"Requires-Dist: {r}" for r in requires_dist]
    tags = tag.split("-")
    wheel_tags = [f"Tag: {tags[0]}-{tags[1]}-{p}" for p in tags[2].split(".")]
    contents: dict[str, bytes] = {}
    for arc, src in files.items():
        contents[arc] = src.read_bytes() if isinstance(src, Path) else src.encode() if isinstance(src, str) else src
    contents[f"{dist}/METADATA"] = ("\n".join(meta) + "\n").encode()
    contents[f"{dist}/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: xcompat-tests\nRoot-Is-Purelib: false\n"
                                 + "\n".join(wheel_tags) + "\n").encode()
    record = []
    for arc, data in contents.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{arc},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    contents[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = dest / f"{name}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for arc, data in contents.items():
            info = zipfile.ZipInfo(arc, date_time=(2024, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if arc.endswith(".so") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return path


PY_V1 = '''
"""Demo package."""
__all__ = ["scale", "gone", "Box"]

def scale(x, factor=2):
    return x * factor

def gone(x):
    return x

class Box:
    def __init__(self, size):
        self.size = size

    def grow(self, by):
        return self.size + by
'''

PY_V2 = '''
"""Demo package."""
__all__ = ["scale", "fresh", "Box"]

def scale(x, factor, *, clamp=False):
    return x * factor

def fresh(x):
    return x

class Box:
    def __init__(self, size):
        self.size = size

    def grow(self, by, twice=False):
        return self.size + by
'''

OPS_V1 = '''
import torch
_lib = torch.library.Library("xcdemo", "DEF")
_lib.define("scale(Tensor x, float f) -> Tensor")
_lib.define("gone(Tensor x) -> Tensor")
'''

OPS_V2 = '''
import torch
_lib = torch.library.Library("xcdemo", "DEF")
_lib.define("scale(Tensor x, float f, bool inplace=False) -> Tensor")
_lib.define("fresh(Tensor x) -> Tensor")
'''


def write_policy(path: Path, mapping: dict) -> Path:
    path.write_text(json.dumps(mapping))
    return path
