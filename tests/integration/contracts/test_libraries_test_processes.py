"""The runtime-libraries check reads what the test processes mapped at their end, through the
real CLI: ``xcompat test`` records it in the test result, ``xcompat contracts libraries
--tests-result`` joins it to the import snapshot.

The package maps the system's libgomp when imported. One test loads a copy of a library from a
temp folder, another Intel's libiomp5 (a second OpenMP runtime) with ctypes: neither is in the
import snapshot, both are found from the test processes, with isolation test and none. A
suite whose tests load nothing of their own reads clean, its sources saying the tests were read.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from xcompat.jsonio import read_json

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/maps is Linux's")

PACKAGE = """import ctypes
ctypes.CDLL("libgomp.so.1")  # the system's OpenMP runtime, as a package built with -fopenmp maps it
"""
PLANTED = """import ctypes, os, shutil
import _ctypes
import probe_pkg

def test_loads_a_library_from_a_temp_folder():
    copy = os.path.join(os.environ["PLANT_DIR"], "libplanted.so")
    shutil.copy(_ctypes.__file__, copy)
    ctypes.CDLL(copy)

def test_loads_a_second_openmp_runtime():
    ctypes.CDLL(os.environ["IOMP5"])
"""
CLEAN = """import probe_pkg

def test_adds():
    assert 1 + 1 == 2
"""


@pytest.fixture(scope="module")
def libiomp5(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Intel's OpenMP runtime from the intel-openmp wheel, downloaded once into the test cache."""
    from tests.helpers.sample import cache_root

    if platform.machine() != "x86_64":
        pytest.skip("the intel-openmp wheel is for x86_64 Linux")
    cache = cache_root() / "downloads" / "intel-openmp"
    cache.mkdir(parents=True, exist_ok=True)
    wheels = sorted(cache.glob("intel_openmp-*.whl"))
    if not wheels:
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                               "--platform", "manylinux1_x86_64", "-d", str(cache), "intel-openmp==2024.2.3"],
                              capture_output=True, text=True, timeout=600, check=False)
        wheels = sorted(cache.glob("intel_openmp-*.whl"))
        if not wheels:
            pytest.skip(f"cannot download intel-openmp: {done.stderr[-300:]}")
    folder = tmp_path_factory.mktemp("iomp")
    with zipfile.ZipFile(wheels[0]) as zf:
        name = next(n for n in zf.namelist() if n.endswith("/lib/libiomp5.so"))
        (folder / "libiomp5.so").write_bytes(zf.read(name))
    return folder / "libiomp5.so"


def _xcompat(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "xcompat", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, check=False)


def _run(tmp_path: Path, suite: str, isolation: str, iomp5: Path | None) -> tuple[dict[str, Any], dict[str, Any],
                                                                                 dict[str, Any]]:
    """(test result, libraries with the tests, libraries of the import alone)."""
    site = tmp_path / "site" / "probe_pkg"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text(PACKAGE)
    tests = tmp_path / "project" / "tests"
    tests.mkdir(parents=True)
    (tests / "test_suite.py").write_text(suite)
    plant = tmp_path / "plant"
    plant.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_INDEX_FILE", "PYTHONPATH")}
    env.update(PLANT_DIR=str(plant), IOMP5=str(iomp5 or ""), PYTHONPATH=str(site.parent))
    project = tests.parent
    run = _xcompat("test", "tests", "--isolate", isolation, "--json", "test.json", cwd=project, env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    result = read_json(project / "test.json", schema="test-result")
    docs: list[dict[str, Any]] = []
    for extra in (["--tests-result", "test.json"], []):
        out = f"libraries{len(docs)}.json"
        done = _xcompat("contracts", "libraries", "--import", "probe_pkg", "--path", str(site.parent), *extra,
                        "-o", out, cwd=project, env={k: v for k, v in env.items() if k != "PYTHONPATH"})
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        docs.append(read_json(project / out, schema="contracts-runtime-libraries"))
    return result, docs[0], docs[1]


@pytest.mark.parametrize("isolation", ["test", "none"])
def test_libraries_only_the_tests_load_are_found(tmp_path: Path, libiomp5: Path, isolation: str) -> None:
    result, joined, imported = _run(tmp_path, PLANTED, isolation, libiomp5)
    mapped = result["mapped_libraries"]
    assert mapped["processes"] == (2 if isolation == "test" else 1) and mapped["unread"] == 0
    planted = str(tmp_path / "plant" / "libplanted.so")
    assert imported["findings"] == [] and planted not in json.dumps(imported)
    codes = {(f["code"], f.get("family") or f.get("path")) for f in joined["findings"]}
    assert ("library-outside", planted) in codes
    assert ("duplicate-runtime", "OpenMP") in codes
    duplicate = next(f for f in joined["findings"] if f["code"] == "duplicate-runtime")
    assert str(libiomp5) in duplicate["paths"] and "libgomp" in duplicate["paths"]
    seen = {lib["path"]: lib["seen_in"] for lib in joined["libraries"]}
    assert seen[planted] == ["tests"] and seen[str(libiomp5)] == ["tests"]
    assert any("libgomp" in p and s == ["import", "tests"] for p, s in seen.items())
    sources = {s["name"]: s for s in joined["sources"]}
    assert sources["import"]["read"] and sources["tests"]["read"]
    assert f"(isolation {isolation})" in sources["tests"]["detail"]
    assert {s["name"]: s["read"] for s in imported["sources"]} == {"import": True, "tests": False}


@pytest.mark.parametrize("isolation", ["test", "none"])
def test_a_suite_that_loads_nothing_of_its_own_is_clean(tmp_path: Path, isolation: str) -> None:
    result, joined, _ = _run(tmp_path, CLEAN, isolation, None)
    assert result["mapped_libraries"]["processes"] == 1
    assert joined["status"] == "passed" and joined["findings"] == []
    assert any(lib["seen_in"] == ["tests"] for lib in joined["libraries"])  # xcompat's and pytest's own
    assert {s["name"]: s["read"] for s in joined["sources"]} == {"import": True, "tests": True}


# -- xcompat run: the stage reads the test stage's result ------------------------------------------

RUN_TEST = """import ctypes, shutil, tempfile
import _ctypes
import loadsome


def test_loads_a_library_from_a_temp_folder():
    folder = tempfile.mkdtemp(prefix="loadsome-")
    shutil.copy(_ctypes.__file__, folder + "/libplanted.so")
    ctypes.CDLL(folder + "/libplanted.so")
    assert loadsome.VALUE == 1
"""


@pytest.mark.slow
def test_the_run_stage_joins_the_test_processes_of_the_cell(tmp_path: Path) -> None:
    project = tmp_path / "loadsome-src"
    (project / "tests").mkdir(parents=True)
    (project / "loadsome").mkdir()
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=70"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "loadsome"\nversion = "1.0.0"\n\n[tool.setuptools]\npackages = ["loadsome"]\n')
    (project / "loadsome" / "__init__.py").write_text("VALUE = 1\n")
    (project / "tests" / "test_load.py").write_text(RUN_TEST)
    env = {k: v for k, v in os.environ.items() if k != "CI" and not k.startswith(("GITHUB_", "GITLAB", "CI_"))}
    env.pop("GIT_INDEX_FILE", None)
    init = _xcompat("matrix", "init", str(project), "--repo", "acme/loadsome", "--no-measure", cwd=tmp_path, env=env)
    assert init.returncode == 0, init.stderr
    out = tmp_path / "out"
    stages = ["verify", "plan", "build", "test", "contracts-runtime-libraries", "report"]
    run = _xcompat("run", str(project), "--out", str(out), "--no-coverage", "--isolation", "off",
                   *(a for name in stages for a in ("--stage", name)), cwd=tmp_path, env=env)
    result = out / "contracts" / "runtime-libraries.json"
    assert result.is_file(), run.stdout[-3000:] + run.stderr[-3000:]
    doc = read_json(result, schema="contracts-runtime-libraries")
    outside = [f for f in doc["findings"] if f["code"] == "library-outside"]
    assert [Path(f["path"]).name for f in outside] == ["libplanted.so"], doc["findings"]
    assert "by a test process" in outside[0]["message"]
    assert {s["name"]: s["read"] for s in doc["sources"]} == {"import": True, "tests": True}
    stage = next(s for s in json.loads((out / "run.json").read_text())["stages"]
                 if s["name"] == "contracts-runtime-libraries")
    assert "with 1 test process at its end (isolation test)" in stage["detail"]
