"""libraries on real processes: libgomp (a tiny library built with -fopenmp) and Intel's
libiomp5 (the intel-openmp wheel from the package index) in one process are two OpenMP
runtimes; importing the sample's _core maps one copy of everything, owned as expected."""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from xcompat.cli import main
from xcompat.contracts.import_probe import probe_imports
from xcompat.jsonio import read_json

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/<pid>/maps is Linux's")

INTEL_OPENMP = "intel-openmp==2024.2.3"  # manylinux1 x86_64, ships lib/libiomp5.so
OMP_SOURCE = "int threads(void) { int n = 0;\n#pragma omp parallel\n{\n#pragma omp atomic\nn++;\n}\nreturn n; }\n"


@pytest.fixture(scope="module")
def libiomp5(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.helpers.sample import cache_root

    if platform.machine() != "x86_64":
        pytest.skip("the intel-openmp wheel is for x86_64 Linux")
    cache = cache_root() / "downloads" / "intel-openmp"
    cache.mkdir(parents=True, exist_ok=True)
    wheels = sorted(cache.glob("intel_openmp-*.whl"))
    if not wheels:
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                               "--platform", "manylinux1_x86_64", "-d", str(cache), INTEL_OPENMP],
                              capture_output=True, text=True, timeout=600, check=False)
        wheels = sorted(cache.glob("intel_openmp-*.whl"))
        if not wheels:
            pytest.skip(f"cannot download {INTEL_OPENMP}: {done.stderr[-300:]}")
    folder = tmp_path_factory.mktemp("iomp")
    with zipfile.ZipFile(wheels[0]) as zf:
        name = next(n for n in zf.namelist() if n.endswith("/lib/libiomp5.so"))
        (folder / "libiomp5.so").write_bytes(zf.read(name))
    return folder / "libiomp5.so"


@pytest.fixture(scope="module")
def libgomp_user(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cc = shutil.which("gcc")
    if cc is None:
        pytest.skip("gcc is not installed")
    folder = tmp_path_factory.mktemp("gomp")
    (folder / "omp_user.c").write_text(OMP_SOURCE)
    subprocess.run([cc, "-shared", "-fPIC", "-fopenmp", "-o", str(folder / "libomp_user.so"),
                    str(folder / "omp_user.c")], check=True)
    return folder / "libomp_user.so"


def test_two_openmp_runtimes_are_caught(libiomp5: Path, libgomp_user: Path, tmp_path: Path) -> None:
    (tmp_path / "omp_pair.py").write_text(
        "import ctypes\n"
        f"ctypes.CDLL({str(libgomp_user)!r})\n"
        f"ctypes.CDLL({str(libiomp5)!r})\n")
    out = tmp_path / "libs.json"
    assert main(["contracts", "libraries", "--import", "omp_pair", "--path", str(tmp_path), "-o", str(out)]) == 0
    doc = read_json(out, schema="contracts-runtime-libraries")
    dup = [f for f in doc["findings"] if f["code"] == "duplicate-runtime"]
    assert len(dup) == 1 and dup[0]["family"] == "OpenMP", doc["findings"]
    assert "libgomp.so.1" in dup[0]["paths"] and str(libiomp5) in dup[0]["paths"]
    # loaded from a temporary folder: outside the environment, the wheels and the system
    outside = {f["path"] for f in doc["findings"] if f["code"] == "library-outside"}
    assert str(libiomp5) in outside
    gomp = next(lib for lib in doc["libraries"] if "libgomp" in lib["path"])
    assert gomp["owner"] == "system" and gomp["soname"] == "libgomp.so.1" and gomp["build_id"]
    assert main(["contracts", "libraries", "--import", "omp_pair", "--path", str(tmp_path), "--gate"]) == 1


def test_sample_core_import_is_clean(sample_site: dict[str, Path], tmp_path: Path) -> None:
    doc = probe_imports(["sample_ext._core"], paths=[sample_site["v1"]], project="sample-ext")
    assert doc["status"] == "passed", doc["findings"]
    libraries = doc["libraries"]
    assert isinstance(libraries, list)
    core = next(lib for lib in libraries if "/_core." in lib["path"])
    assert core["owner"] == "project" and core["build_id"]
    # against itself, a snapshot has no difference; against the OpenMP process it has
    out = tmp_path / "base.json"
    assert main(["contracts", "libraries", "--import", "sample_ext._core", "--path", str(sample_site["v1"]),
                 "--project", "sample-ext", "-o", str(out)]) == 0
    again = tmp_path / "again.json"
    assert main(["contracts", "libraries", "--import", "sample_ext._core", "--path", str(sample_site["v1"]),
                 "--baseline", str(out), "-o", str(again)]) == 0
    changes = read_json(again)["changes"]
    # without --project the sample's own libraries are just "distribution": the one change
    assert {c["change"] for c in changes} <= {"changed"} and all(c["fields"] == ["owner"] for c in changes)


def test_snapshot_of_another_process() -> None:
    from xcompat.contracts.libraries import snapshot_pid

    child = subprocess.Popen([sys.executable, "-c", "import sys, json; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        import time

        time.sleep(0.5)
        doc = snapshot_pid(child.pid, sites=[], interpreter=[sys.base_prefix])
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=30)
    owners = {lib["soname"]: lib["owner"] for lib in doc["libraries"]}
    assert owners.get("libc.so.6") == "system"
    assert any(lib["owner"] == "interpreter" for lib in doc["libraries"]), doc["libraries"]
