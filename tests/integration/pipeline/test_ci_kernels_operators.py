"""``xcompat stage kernels`` in a cell's CI job checks the project's own operators as ``xcompat run``
does: after the runner's conformance kernels, the cell's wheel (unpacked into a folder of its
own) is checked with the project's .xcompat/operators.py and the ``operators`` section is added
to the same kernels.json, gated by the verified plan's ``tests.operators``.

Real throughout: the plan from a matrix, the stage command, ``xcompat kernels run`` (cut to one
kernel by the matrix for time), ``xcompat kernels operators`` on the sample wheels. 1.1 of the
sample ignores its inputs' strides in its CPU kernel (only a derived, non-contiguous case shows
it); 1.0 is right.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from xcompat.jsonio import validate
from xcompat.pipeline.ci import kernels
from xcompat.pipeline.ci.interpreter import running_python
from xcompat.pipeline.ci.step import CiInputs

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[3]
PLANTED_CASE = "sample_ext::scaled_add on cpu, non-contiguous, float32 (sample 1)"
MATRIX = """\
xcompat: 1
repo: acme/sample-ext
serial: 1
python: ["{python}"]
platforms:
  linux:
    archs: [x86_64]
backends:
  cpu:
    required: true
tests:
  kernels: [add]
{operators}"""


def _stage(tmp_path: Path, project: str, wheel: Path, *, setting: str | None = None) -> tuple[int, dict[str, Any],
                                                                                               str, Path]:
    """``xcompat stage kernels`` for the cell of this Python, as its CI job runs it."""
    out = tmp_path / "out"
    out.mkdir()
    operators = f"  operators: {setting}\n" if setting else ""
    (out / "matrix.yml").write_text(MATRIX.format(python=running_python(), operators=operators))
    subprocess.run([sys.executable, "-m", "xcompat", "matrix", "plan", str(out / "matrix.yml"), "--format", "json",
                    "-o", str(out / "plan.json")], check=True, capture_output=True)
    cell = json.loads((out / "plan.json").read_text())["cells"][0]["id"]
    wheels = out / "wheelhouse"
    wheels.mkdir()
    shutil.copy(wheel, wheels / wheel.name)
    outputs = tmp_path / "github_output"
    # the job's environment already has the wheel's dependencies (torch); the wheel itself is
    # not installed into this test's interpreter
    proc = subprocess.run(
        [sys.executable, "-m", "xcompat", "stage", "kernels", "--project-dir", str(REPO / "examples" / project),
         "--output-dir", str(out), "--cell", cell, "--install-wheel", "false"],
        capture_output=True, text=True, check=False, timeout=900, cwd=tmp_path,
        env={**_env(), "GITHUB_OUTPUT": str(outputs)})
    result = out / "results" / cell / "kernels.json"
    assert result.is_file(), proc.stdout[-3000:] + proc.stderr[-3000:]
    document = json.loads(result.read_text())
    validate("kernels", document)
    return proc.returncode, document, proc.stdout + proc.stderr, outputs


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI", "PYTEST_"))}


def test_the_planted_stride_bug_fails_the_ci_stage_with_the_case_that_shows_it(tmp_path, sample_wheels) -> None:
    code, doc, said, outputs = _stage(tmp_path, "sample-ext-v2", sample_wheels["v2"])
    assert code == 1, said[-3000:]
    assert doc["counts"]["failed_cases"] == 0  # the runner's kernels passed: the project's operator did not
    section = doc["operators"]
    assert section["status"] == "failed" and section["setting"] == "gate"
    assert section["samples"] == ".xcompat/operators.py"
    assert section["summary"] == f"project operators 1: 0 passed, 1 failed: {PLANTED_CASE}"
    (finding,) = section["findings"]
    assert finding["check"] == "result" and finding["gating"] and finding["max_error"] > 0.1
    assert doc["status"] == "failed" and doc["summary"].startswith("runner kernels: ")
    (device,) = section["devices"]
    assert device["device"] == "cpu" and device["status"] == "ran"
    validate("operators", device["result"])
    # the wheel was checked from a folder of its own, not from the job's environment
    assert "/xcompat-operators-site-" in device["result"]["site"]
    assert "conclusion=failure" in outputs.read_text() and PLANTED_CASE in said


def test_the_right_kernel_passes_the_ci_stage(tmp_path, sample_wheels) -> None:
    code, doc, said, outputs = _stage(tmp_path, "sample-ext", sample_wheels["v1"])
    assert code == 0, said[-3000:]
    section = doc["operators"]
    assert section["status"] == "passed" and section["summary"] == "project operators 1: 1 passed"
    assert section["findings"] == [] and doc["status"] == "passed"
    assert "conclusion=success" in outputs.read_text()


def test_the_plans_tests_operators_report_shows_the_bug_and_passes(tmp_path, sample_wheels) -> None:
    code, doc, said, _ = _stage(tmp_path, "sample-ext-v2", sample_wheels["v2"], setting="report")
    assert code == 0, said[-3000:]
    section = doc["operators"]
    assert section["status"] == "reported" and section["setting"] == "report"
    assert f"reported, not gating: {PLANTED_CASE}" in section["summary"] and doc["status"] == "passed"


def test_the_ci_command_checks_the_cells_devices_with_the_projects_samples(tmp_path) -> None:
    out = tmp_path / "out"
    wheels = out / "wheelhouse"
    wheels.mkdir(parents=True)
    inputs = CiInputs(output_dir=str(out), project_dir=str(REPO / "examples" / "sample-ext"))
    step = kernels.STAGE.step(inputs)
    assert step.argv[:2] == ["kernels", "run"] and step.then is None  # no wheel for this Python: nothing to check
    tag = "cp{}{}".format(*sys.version_info[:2])
    wheel = wheels / f"sample_ext-0.1.0-{tag}-{tag}-linux_x86_64.whl"
    wheel.write_bytes(b"")
    then = kernels.STAGE.step(inputs).then
    assert then is not None and then[:2] == ["kernels", "operators"]
    assert then[then.index("--wheel") + 1] == str(wheel)
    assert then[then.index("--merge-into") + 1] == str(step.result)
    assert then[then.index("--setting") + 1] == "gate" and then.count("--device") == 1 and "cpu" in then
    assert Path(then[then.index("--samples") + 1]) == REPO / "examples" / "sample-ext" / ".xcompat" / "operators.py"
