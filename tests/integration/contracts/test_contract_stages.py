"""The three contract stages through ``xcompat run``, for real.

* The bundled sample's 1.1 against its 1.0 wheel: the stubs stage finds 1.1's ``random_seed``
  (declared in ``_core.pyi``, never bound by the C module), reported once, by the stubs stage
  (the ABI diff says nothing about it at the Python level); the runtime libraries of the import
  are clean and compared with 1.0's import; the python floor holds. Under ``contracts.*: report``
  nothing of it counts; judged again under ``gate``, the stubs finding makes the cell red.
* A tiny project that maps two OpenMP runtimes on import (the system's libgomp and Intel's
  libiomp5, shipped in its wheel) and uses a ``match`` statement under ``Requires-Python >=3.9``,
  with stubs that match: green under the default ``report`` (findings shown), red under ``gate``
  (its cell by the runtime libraries, the run by the python floor), and its clean stubs pass.
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

from xcompat.jsonio import read_json, validate

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/<pid>/maps is Linux's")]

CONTRACT_STAGES = ["contracts-stubs", "contracts-runtime-libraries", "contracts-python-floor"]
MISSING = "sample_ext._core.random_seed"


def _xcompat(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI" and not k.startswith(("GITHUB_", "GITLAB", "CI_"))}
    env.pop("GIT_INDEX_FILE", None)
    return subprocess.run([sys.executable, "-m", "xcompat", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)


def _stages(out: Path) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in json.loads((out / "run.json").read_text())["stages"]}


def _contracts(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["kind"]: entry for entry in report["contracts"]}


# -- the sample: 1.1 against 1.0 ------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory: pytest.TempPathFactory, sample_wheels: dict[str, Path]) -> Path:
    out = tmp_path_factory.mktemp("sample-contracts") / "out"
    stages = ["verify", "plan", "build", "baseline", "abi", *CONTRACT_STAGES, "report"]
    run = _xcompat("run", "--out", str(out), "--no-coverage", "--baseline", str(sample_wheels["v1"]),
                   *(a for name in stages for a in ("--stage", name)), cwd=out.parent)
    assert (out / "report.json").is_file(), run.stdout + run.stderr
    return out


def test_the_contract_stages_run_in_order_before_the_report(sample_run: Path) -> None:
    names = list(_stages(sample_run))
    assert names[-4:] == [*CONTRACT_STAGES, "report"]
    assert all(_stages(sample_run)[n]["status"] == "passed" for n in CONTRACT_STAGES), _stages(sample_run)


def test_the_sample_stub_mismatch_is_found_once_by_the_stubs_stage(sample_run: Path) -> None:
    stubs = read_json(sample_run / "contracts" / "stubs.json", schema="contracts-stubs")
    assert stubs["cell_id"] and stubs["status"] == "failed"
    assert [(f["code"], f["object"]) for f in stubs["findings"]] == [("missing-at-runtime", MISSING)]
    assert "reported_by_abi" not in stubs  # the ABI diff does not claim it
    abi = json.loads((sample_run / "abi.json").read_text())
    assert not [f for f in abi["findings"] if "random_seed" in str(f.get("symbol")) and
                str(f.get("kind")).startswith("python_")], "an old != new finding claimed a stub != runtime case"
    md = (sample_run / "report.md").read_text().replace("\\_", "_")
    assert "### Contracts" in md and "sample_ext._core.random_seed is not present at runtime" in md
    assert "sample_ext._core.random_seed" in (sample_run / "report.html").read_text()


def test_the_sample_libraries_and_floor_are_clean(sample_run: Path) -> None:
    libs = read_json(sample_run / "contracts" / "runtime-libraries.json", schema="contracts-runtime-libraries")
    assert libs["status"] == "passed" and libs["findings"] == [], libs["findings"]
    core = [lib for lib in libs["libraries"] if "/sample_ext/_core" in lib["path"]]
    assert core and all(lib["owner"] == "project" for lib in core)
    # compared with 1.0's wheel imported in a fresh process: nothing new, and 1.0's _core changed build
    assert libs["baseline"].startswith("compared with the baseline's import (sample_ext-1.0.0")
    assert libs["new_findings"] == 0
    assert any(c["library"].startswith("_core") and c["change"] == "changed" for c in libs["changes"])
    floor = read_json(sample_run / "contracts" / "python-floor.json", schema="contracts-python-floor")
    assert floor["cell_id"] is None and floor["status"] == "passed"
    assert floor["lowest_python"] == "3.10"  # the matrix's lowest Python, not this machine's


def test_report_mode_shows_without_counting_and_gate_counts(sample_run: Path) -> None:
    from xcompat.report import build_report
    from xcompat.results import load_results
    from xcompat.settings import defaults_settings

    report = json.loads((sample_run / "report.json").read_text())
    validate("report", report)
    stubs = _contracts(report)["contracts-stubs"]
    assert stubs["mode"] == "report" and stubs["status"] == "failed" and not stubs["counted"]
    assert not any("contracts" in p for p in report["problems"])  # red only for its ABI break
    results = load_results([sample_run]).results
    plan = json.loads((sample_run / "plan.json").read_text())
    base = defaults_settings()
    gated = build_report(results, plan, settings=_with_contracts(base, stubs="gate"))
    assert any(f.kind == "contracts-stubs" and f.cell_id for f in gated.failures)
    entry = next(e for e in gated.contracts if e.kind == "contracts-stubs")
    assert entry.counted and entry.mode == "gate"
    shown = build_report(results, plan, settings=base)
    assert not any(f.kind.startswith("contracts-") for f in shown.failures)


def _with_contracts(settings: Any, **modes: str) -> Any:
    from dataclasses import replace

    return replace(settings, contracts=replace(settings.contracts, **modes))


# -- a tiny project: two OpenMP runtimes, a 3.10 construct under >=3.9 ----------------------------

INIT = '''"""Maps two OpenMP runtimes when imported: the system's libgomp and the libiomp5 it ships."""
import ctypes
import os

ctypes.CDLL("libgomp.so.1")
ctypes.CDLL(os.path.join(os.path.dirname(__file__), "libiomp5.so"))
'''
MATCHING = '''def classify(value: object) -> str:
    match value:
        case int():
            return "int"
        case _:
            return "other"
'''
TEST = '''from ompfloor.matching import classify


def test_classify():
    assert classify(3) == "int"
'''
GATE = "\ncontracts:\n  stubs: gate\n  runtime-libraries: gate\n  python-floor: gate\n"


@pytest.fixture(scope="module")
def libiomp5(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    from tests.helpers.sample import cache_root

    if platform.machine() != "x86_64":
        pytest.skip("the intel-openmp wheel is for x86_64 Linux")
    cache = cache_root() / "downloads" / "intel-openmp"
    cache.mkdir(parents=True, exist_ok=True)
    wheels = sorted(cache.glob("intel_openmp-*.whl"))
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                        "--platform", "manylinux1_x86_64", "-d", str(cache), "intel-openmp==2024.2.3"],
                       capture_output=True, text=True, timeout=600, check=False)
        wheels = sorted(cache.glob("intel_openmp-*.whl"))
        if not wheels:
            pytest.skip("cannot download intel-openmp")
    with zipfile.ZipFile(wheels[0]) as zf:
        return zf.read(next(n for n in zf.namelist() if n.endswith("/lib/libiomp5.so")))


@pytest.fixture(scope="module")
def tiny_project(tmp_path_factory: pytest.TempPathFactory, libiomp5: bytes) -> Path:
    project = tmp_path_factory.mktemp("ompfloor") / "ompfloor-src"
    package = project / "ompfloor"
    (project / "tests").mkdir(parents=True)
    package.mkdir()
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=70"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "ompfloor"\nversion = "1.0.0"\nrequires-python = ">=3.9"\n\n'
        '[tool.setuptools]\npackages = ["ompfloor"]\n\n'
        '[tool.setuptools.package-data]\nompfloor = ["libiomp5.so", "*.pyi", "py.typed"]\n')
    (package / "__init__.py").write_text(INIT)
    (package / "libiomp5.so").write_bytes(libiomp5)
    (package / "matching.py").write_text(MATCHING)
    (package / "matching.pyi").write_text("def classify(value: object) -> str: ...\n")
    (package / "py.typed").write_text("")
    (project / "tests" / "test_matching.py").write_text(TEST)
    init = _xcompat("matrix", "init", str(project), "--repo", "acme/ompfloor", cwd=project.parent)
    assert init.returncode == 0, init.stderr
    return project


def _tiny_run(project: Path, out: Path) -> subprocess.CompletedProcess[str]:
    stages = ["verify", "plan", "build", "test", *CONTRACT_STAGES, "report"]
    return _xcompat("run", str(project), "--out", str(out), "--no-coverage", "--isolation", "off",
                    *(a for name in stages for a in ("--stage", name)), cwd=project.parent)


def test_findings_under_report_are_shown_and_the_run_stays_green(tiny_project: Path) -> None:
    out = tiny_project.parent / "report-mode"
    run = _tiny_run(tiny_project, out)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["conclusion"] == "success"
    found = _contracts(report)
    libs = found["contracts-runtime-libraries"]
    assert libs["status"] == "failed" and not libs["counted"] and libs["cell_id"]
    assert [f["code"] for f in libs["findings"]] == ["duplicate-runtime"]
    assert "libgomp" in libs["findings"][0]["message"] and "libiomp5.so" in libs["findings"][0]["message"]
    floor = found["contracts-python-floor"]
    assert floor["cell_id"] is None and not floor["counted"]
    assert [f["code"] for f in floor["findings"]] == ["above-requires-python"]
    assert "matching.py:2: pattern matching requires 3.10; Requires-Python allows 3.9" in floor["findings"][0]["message"]
    stubs = found["contracts-stubs"]
    assert stubs["status"] == "passed" and stubs["findings"] == []
    text = _xcompat("report", str(out), "--format", "text", cwd=tiny_project.parent).stdout
    assert "runtime libraries [" in text and "[duplicate-runtime] two copies of the OpenMP" in text


def test_the_same_findings_under_gate_make_the_cell_and_the_run_red(tiny_project: Path) -> None:
    matrix = tiny_project / ".xcompat" / "matrix.yml"
    original = matrix.read_text()
    matrix.write_text(original + GATE)
    try:
        out = tiny_project.parent / "gate-mode"
        run = _tiny_run(tiny_project, out)
    finally:
        matrix.write_text(original)
    assert run.returncode == 1, run.stdout + run.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["conclusion"] == "failure"
    (cell,) = report["cells"]
    assert cell["status"] == "failed" and "contracts-runtime-libraries failed" in cell["reason"]
    assert any(p.startswith("contracts-python-floor: failed") for p in report["problems"])
    found = _contracts(report)
    assert found["contracts-runtime-libraries"]["counted"] and found["contracts-python-floor"]["counted"]
    assert found["contracts-stubs"]["status"] == "passed"
    gate = _xcompat("gate", "--plan", str(out / "plan.json"), "--results", str(out), "--insecure-no-verify",
                    "--out", str(out.parent / "gate.json"), cwd=tiny_project.parent)
    assert gate.returncode == 1
    checks = {c["name"]: c for c in json.loads((out.parent / "gate.json").read_text())["checks"]}
    assert not checks["contracts:python-floor"]["passed"]
