"""Three reports as a reviewer meets them, for the readability and browser tests.

* ``demo``: the stage results ``make demo`` wrote for the sample project (one cell, the
  ABI break), kept under ``tests/fixtures/report/demo`` (kernels left out: its per-case
  data is half a megabyte);
* ``plan56``: the sample's real signed matrix expanded into its 56 cells; the CPU cells
  report (one test fails on 3.13t, one crashes on macOS), the required CUDA smoke cell and
  every optional GPU cell never report, as when no GPU runner is registered;
* ``crash``: a real ``xcompat test`` run of a small suite with a segfaulting test, a
  failing assertion and captured output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.helpers.report import make_test, make_test_result, stage_result

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "tests" / "fixtures" / "report" / "demo"
SAMPLE_MATRIX = ROOT / "examples" / "sample-ext" / ".xcompat" / "matrix.yml"
CRASH_SUITE = {
    "tests/test_native.py": textwrap.dedent(
        """
        import ctypes


        def test_adds():
            assert 1 + 1 == 2


        def test_segfault():
            print("reading address 0 through ctypes")
            ctypes.string_at(0)


        def test_checksum():
            values = [1, 2]
            assert sum(values) == 4, "checksum of the sample values"
        """
    ),
}


def demo() -> Any:
    from xcompat.report import build_report, load_results

    loaded = load_results([DEMO / name for name in ("test.json", "abi.json", "coverage.json", "probe.json")], plan_path=DEMO / "plan.json")
    return build_report(loaded.results, loaded.plan)


def sample_plan() -> dict[str, Any]:
    from xcompat.matrix import load_matrix
    from xcompat.matrix.plan import expand, render

    matrix = load_matrix(SAMPLE_MATRIX)
    return render("json", matrix, expand(matrix))


def plan56() -> Any:
    from xcompat.report import build_report

    plan = sample_plan()
    results: list[dict[str, Any]] = []
    for cell in plan["cells"]:
        if cell["backend"] != "cpu":
            continue  # no GPU runner came
        cid = cell["id"]
        results.append(stage_result("build", cid))
        tests = [make_test(f"tests/test_ops.py::test_{name}") for name in ("add", "scale", "checksum", "abi", "version")]
        if cell["python"] == "3.13t" and cell["platform"] == "linux" and cell["arch"] == "x86_64":
            tests.append(
                make_test(
                    "tests/test_ops.py::test_threads",
                    "failed",
                    message="AssertionError: 4 threads saw different sums",
                    tail="    def test_threads():\n>       assert len(set(sums)) == 1, '4 threads saw different sums'\nE       AssertionError: 4 threads saw different sums\n\ntests/test_ops.py:41: AssertionError",
                )
            )
        elif cell["python"] == "3.12" and cell["platform"] == "macos" and cell["frameworks"].get("torch") == "2.13":
            tests.append(
                make_test(
                    "tests/test_ops.py::test_scaled_add_large",
                    "crashed",
                    message="killed by SIGBUS",
                    crash={"signal": "SIGBUS", "signal_number": 10, "exit_code": None, "traceback": 'Fatal Python error: Bus error\n\nCurrent thread 0x0000000104a2c580 (most recent call first):\n  File "/Users/runner/src/sample/sample_ext/__init__.py", line 41 in scaled_add\n  File "/Users/runner/src/sample/tests/test_ops.py", line 52 in test_scaled_add_large\n' + "".join(f'  File "/Users/runner/venv/lib/python3.12/site-packages/_pytest/runner.py", line {i} in call\n' for i in range(30))},
                )
            )
        else:
            tests.append(make_test("tests/test_ops.py::test_gpu_only", "skipped", message="needs a GPU"))
        results.append(make_test_result(cid, tests))
    return build_report(results, plan, artifact_url="https://github.com/xcompat-demo/sample-ext/actions/runs/42")


def run_crash_suite(folder: Path, cell_id: str = "py3.12-linux-x86_64-cpu") -> Path:
    """Write the crash suite into ``folder`` and run it through the real ``xcompat test``; returns the result JSON."""
    for rel, text in CRASH_SUITE.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    out = folder / "test.json"
    env = {**os.environ, "NO_COLOR": "1"}
    subprocess.run(
        [sys.executable, "-m", "xcompat", "test", str(folder), "--json", str(out), "--cell-id", cell_id, "--no-warm-torch", "--timeout", "60"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if not out.is_file():
        raise AssertionError("xcompat test wrote no result")
    return out


def crash(folder: Path) -> Any:
    from tests.helpers.report import make_cell, make_plan
    from xcompat.report import build_report

    cell = make_cell("3.12", "linux", "x86_64", "cpu")
    result = json.loads(run_crash_suite(folder, cell.id).read_text(encoding="utf-8"))
    return build_report([stage_result("build", cell.id), result], make_plan([cell]))
