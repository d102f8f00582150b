"""``xcompat run``'s kernels stage when one of the project's operators crashes the check: the crash
is named with its derived case, and the device is checked again without that operator (its own
log), so the other operators still get their results. Real commands throughout; the project is
a package that registers its operators with torch.library, already installed in the run's site."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from xcompat.jsonio import validate
from xcompat.log import get_logger
from xcompat.pipeline.context import RunContext
from xcompat.pipeline.local import LocalPipeline, RunConfig, StageResult
from xcompat.pipeline.stages.kernels import STAGE
from xcompat.settings import ProjectFacts, defaults_settings

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[3]
PACKAGE = '''
import os
import signal

import torch

lib = torch.library.Library("crashy", "DEF")
lib.define("fine(Tensor x) -> Tensor")
lib.define("strided(Tensor x) -> Tensor")
lib.impl("fine", lambda x: x * 2, "CompositeExplicitAutograd")


def strided(x):
    if not x.is_contiguous():  # reads past the end of a strided view, in a C++ kernel
        os.kill(os.getpid(), signal.SIGSEGV)
    return x - 1


lib.impl("strided", strided, "CompositeExplicitAutograd")
'''
SAMPLES = '''
import torch

SAMPLES = {"crashy::fine": lambda: [(torch.randn(3, 4),)], "crashy::strided": lambda: [(torch.randn(3, 4),)]}
'''


def test_the_crashing_operator_is_named_and_the_other_is_still_checked(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".xcompat").mkdir(parents=True)
    (project / ".xcompat" / "operators.py").write_text(SAMPLES)
    site = tmp_path / "site"
    (site / "crashy").mkdir(parents=True)
    (site / "crashy" / "__init__.py").write_text(PACKAGE)
    settings = defaults_settings()
    settings = replace(settings, tests=replace(settings.tests, kernels=("add",)))
    config = RunConfig(project=project, matrix=REPO / "examples" / "sample-ext" / ".xcompat" / "matrix.yml",
                       allowed_signers=None, baseline=None, out=tmp_path / "out", backend="cpu", settings=settings,
                       facts=ProjectFacts(name="crashy", uses_torch=True, torch_evidence="depends on torch"))
    pipe = LocalPipeline(config, get_logger())
    pipe.stage_dir.mkdir(parents=True)
    pipe.results.append(StageResult(name="build", status="passed"))
    context = RunContext(pipe)
    context.wheels = [tmp_path / "crashy-1.0-py3-none-any.whl"]  # built, and already in the site
    context.site = site
    result = STAGE.run(context)
    assert result.status == "failed", result.detail
    doc = json.loads(context.result_path("kernels").read_text())
    validate("kernels", doc)
    section = doc["operators"]
    (finding,) = section["findings"]
    assert (finding["operator"], finding["check"], finding["case"]) == (
        "crashy::strided", "crashed", "non-contiguous, float32")
    assert finding["gating"] and "signal 11" in finding["detail"]
    assert section["summary"] == ("project operators 2: 1 passed, 1 failed: "
                                  "crashy::strided on cpu, crashed, non-contiguous, float32")
    (device,) = section["devices"]
    ops = {op["name"]: op["status"] for op in device["result"]["operators"]}
    assert ops == {"crashy::fine": "passed", "crashy::strided": "not_exercised"}
    logs = pipe.stage_dir / "logs"
    assert (logs / "operators-cpu.log").is_file() and (logs / "operators-cpu-2.log").is_file()
    assert "signal 11" in (logs / "operators-cpu.log").read_text()
