"""``xcompat run``'s kernels stage on the real sample wheels: the runner's conformance kernels, then
the project's own operators from its .xcompat/operators.py, in one kernels.json.

1.1 of the sample ignores its inputs' strides in its CPU kernel: only a derived case (a
non-contiguous view) shows it. 1.0 is right. The stage runs for real (the kernels command, the
operators command, the wheel unpacked), only the conformance kernels are cut to one for time.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from xcompat.jsonio import validate
from xcompat.log import get_logger
from xcompat.pipeline.context import RunContext
from xcompat.pipeline.local import LocalPipeline, RunConfig, StageResult
from xcompat.pipeline.stages.kernels import STAGE, operator_devices
from xcompat.results.envelope import parse_envelope
from xcompat.settings import ProjectFacts, defaults_settings

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[3]
PLANTED_CASE = "sample_ext::scaled_add on cpu, non-contiguous, float32 (sample 1)"


def _run(tmp_path: Path, project: str | Path, wheel: Path | None, *, setting: str = "gate",
         build: str = "passed") -> tuple[StageResult, dict[str, Any], Path]:
    settings = defaults_settings()
    settings = replace(settings, tests=replace(settings.tests, kernels=("add",), operators=setting))
    root = project if isinstance(project, Path) else REPO / "examples" / project
    config = RunConfig(project=root, matrix=REPO / "examples" / "sample-ext" / ".xcompat" / "matrix.yml",
                       allowed_signers=None, baseline=None, out=tmp_path / "out", backend="cpu",
                       settings=settings, facts=ProjectFacts(name="sample-ext", uses_torch=True,
                                                             torch_evidence="depends on torch"))
    pipe = LocalPipeline(config, get_logger())
    pipe.stage_dir.mkdir(parents=True)
    pipe.results.append(StageResult(name="build", status=build))
    context = RunContext(pipe)
    context.wheels = [wheel] if wheel is not None else []
    result = STAGE.run(context)
    document = json.loads(context.result_path("kernels").read_text())
    validate("kernels", document)
    return result, document, pipe.stage_dir


def test_the_planted_stride_bug_fails_the_stage_with_the_case_that_shows_it(tmp_path, sample_wheels) -> None:
    result, doc, folder = _run(tmp_path, "sample-ext-v2", sample_wheels["v2"])
    assert result.status == "failed", result.detail
    assert doc["counts"]["failed_cases"] == 0  # the runner's kernels passed: the project's operator did not
    section = doc["operators"]
    assert section["status"] == "failed" and section["samples"] == ".xcompat/operators.py"
    assert section["summary"] == f"project operators 1: 0 passed, 1 failed: {PLANTED_CASE}"
    (finding,) = section["findings"]
    assert finding["check"] == "result" and finding["gating"] and finding["max_error"] > 0.1
    assert doc["status"] == "failed" and doc["summary"].startswith("runner kernels: ")
    assert parse_envelope(doc, "kernels.json").status == "failed"
    (device,) = section["devices"]
    validate("operators", device["result"])
    assert device["device"] == "cpu" and (folder / "logs" / "operators-cpu.log").is_file()


def test_with_tests_operators_report_the_bug_is_shown_and_the_stage_passes(tmp_path, sample_wheels) -> None:
    result, doc, _ = _run(tmp_path, "sample-ext-v2", sample_wheels["v2"], setting="report")
    assert result.status == "passed" and doc["status"] == "passed"
    section = doc["operators"]
    assert section["status"] == "reported" and section["setting"] == "report"
    assert f"reported, not gating: {PLANTED_CASE}" in section["summary"] and PLANTED_CASE in result.detail
    assert parse_envelope(doc, "kernels.json").status == "passed"


def test_the_right_kernel_passes_on_every_derived_case(tmp_path, sample_wheels) -> None:
    result, doc, _ = _run(tmp_path, "sample-ext", sample_wheels["v1"])
    assert result.status == "passed", result.detail
    section = doc["operators"]
    assert section["status"] == "passed" and section["summary"] == "project operators 1: 1 passed"
    assert section["findings"] == [] and section["counts"]["passed"] == 1


def test_when_the_build_failed_the_operators_are_not_run_and_not_passed(tmp_path) -> None:
    result, doc, folder = _run(tmp_path, "sample-ext-v2", None, build="failed")
    assert result.status == "failed"
    section = doc["operators"]
    assert section["status"] == "not_run" and section["devices"] == []
    assert section["summary"] == "project operators not run: no wheel to check (the project's build failed)"
    assert not (folder / "logs" / "operators-cpu.log").exists()
    assert doc["counts"]["failed_cases"] == 0 and doc["status"] == "failed"


def test_a_samples_file_that_cannot_be_used_gates_and_says_why(tmp_path, sample_wheels) -> None:
    project = tmp_path / "project"
    (project / ".xcompat").mkdir(parents=True)
    (project / ".xcompat" / "operators.py").write_text(
        "def f():\n    raise ValueError('forgot the shapes')\nSAMPLES = {'sample_ext::scaled_add': f}\n")
    result, doc, _ = _run(tmp_path, project, sample_wheels["v1"])
    assert result.status == "failed"
    (finding,) = doc["operators"]["findings"]
    assert finding["check"] == "samples" and finding["gating"] and finding["device"] == "cpu"
    assert "the samples function of sample_ext::scaled_add raised ValueError: forgot the shapes" in finding["detail"]
    assert doc["operators"]["devices"][0]["status"] == "error" and doc["operators"]["status"] == "failed"


def test_an_accelerator_cell_checks_the_cpu_and_its_device() -> None:
    assert operator_devices("cpu") == ["cpu"] and operator_devices(None) == ["cpu"]
    assert operator_devices("cuda") == ["cpu", "cuda"] and operator_devices("rocm") == ["cpu", "cuda"]
    assert operator_devices("mps") == ["cpu", "mps"]
