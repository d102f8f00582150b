"""A stage kind of its own, added through the registry alone: its module and its result's schema.

The module and the schema are written into a folder of the test's own and registered with
``xcompat.pipeline.registry.register``: no file of xcompat changes. The run (the bundled
sample's signed matrix, with only the verify, plan, new and report stages) writes its result,
the report shows it for the run's cell, and the release gate is refused when it failed.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from tests.helpers.cli import xcompat_in_process

from xcompat.errors import UsageError
from xcompat.log import configure
from xcompat.pipeline import registry
from xcompat.pipeline.config import resolve_config
from xcompat.pipeline.runner import run_pipeline

STAGE_MODULE = '''
"""The lint stage: a check of its own, passed or failed as LINT_STATUS says."""

import json
import os
from dataclasses import dataclass
from pathlib import Path

import jsonschema

from xcompat import jsonio
from xcompat.pipeline.local import StageResult
from xcompat.results.stages import StageKind

SCHEMA = json.loads(Path(__file__).with_name("lint.schema.json").read_text(encoding="utf-8"))
KIND = StageKind(name="lint", result_file="lint.json", per_cell=True, schemas=("lint",))


@dataclass(frozen=True)
class LintStage:
    name: str = "lint"
    runs_when_halted: bool = False

    def run(self, context):
        status = os.environ.get("LINT_STATUS", "passed")
        document = {"version": 1, "kind": "lint", "cell_id": context.cell_id, "status": status,
                    "summary": f"lint {status}: 3 files checked", "files": 3}
        jsonschema.validate(document, SCHEMA)
        jsonio.write_json(context.result_path("lint"), document)
        return StageResult(name="lint", status=status, outputs=[KIND.result_file])


STAGE = LintStage()
'''

STAGE_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["version", "kind", "cell_id", "status", "summary", "files"],
    "properties": {"version": {"const": 1}, "kind": {"const": "lint"}, "status": {"enum": ["passed", "failed"]},
                   "files": {"type": "integer", "minimum": 0}},
}


@pytest.fixture
def lint_stage(tmp_path: Path) -> Iterator[ModuleType]:
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "lint_stage.py").write_text(STAGE_MODULE, encoding="utf-8")
    (folder / "lint.schema.json").write_text(json.dumps(STAGE_SCHEMA), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("lint_stage", folder / "lint_stage.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    registry.register(module.STAGE, module.KIND)
    try:
        yield module
    finally:
        registry.unregister("lint")


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: str) -> tuple[Path, dict, dict]:
    import argparse

    from xcompat.commands import run

    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("LINT_STATUS", status)
    parser = argparse.ArgumentParser()
    run.configure_parser(parser)
    out = tmp_path / status
    configure(verbosity=0)
    config = resolve_config(parser.parse_args(["--out", str(out), "--no-coverage"]), env={})
    run_pipeline(config, stages=["verify", "plan", "lint", "report"])
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    proc = xcompat_in_process("gate", "--plan", str(out / "plan.json"), "--results", str(out),
                              "--insecure-no-verify", "--require-kind", "lint", "--out", str(tmp_path / "gate.json"))
    gate = json.loads((tmp_path / "gate.json").read_text(encoding="utf-8"))
    gate["exit_code"] = proc.returncode
    return out, report, gate


def _lint_results(report: dict) -> list[tuple[str, str]]:
    """(cell, status) of each lint result the report's cells show."""
    return [(cell["id"], stage["status"]) for cell in report["cells"] for stage in cell["stages"]
            if stage["kind"] == "lint"]


def test_a_registered_stage_kind_is_run_reported_and_gated(lint_stage, tmp_path, monkeypatch):
    out, report, gate = _run(tmp_path, monkeypatch, "passed")
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert [s["name"] for s in run["stages"]] == ["verify", "plan", "lint", "report"]
    assert json.loads((out / "lint.json").read_text(encoding="utf-8"))["files"] == 3
    assert _lint_results(report) == [(run["cell_id"], "passed")]
    # The cell lacks what only a full run writes (a test result), never a passing lint result.
    assert [(c["status"], c["kinds"]) for c in gate["cells"]] == [("missing", ["lint"])], gate
    assert gate["exit_code"] == 1 and "no test result" in gate["checks"][0]["reason"]

    out, report, gate = _run(tmp_path, monkeypatch, "failed")
    assert [status for _, status in _lint_results(report)] == ["failed"]
    assert report["conclusion"] == "failure"
    assert gate["exit_code"] == 1 and gate["allowed"] is False
    assert [c["status"] for c in gate["cells"]] == ["failed"], gate
    assert "lint failed" in gate["checks"][0]["reason"], gate["checks"]


def test_registering_adds_the_stage_before_the_report_and_unregistering_removes_it(lint_stage):
    from xcompat.results.stages import STAGES

    assert list(registry.PIPELINE)[-2:] == ["lint", "report"] and "lint" in STAGES
    registry.unregister("lint")
    assert "lint" not in registry.PIPELINE and "lint" not in STAGES
    registry.unregister("test")  # a built-in stage and its kind stay
    assert "test" in registry.PIPELINE and "test" in STAGES
    with pytest.raises(UsageError, match="already registered"):
        registry.register(lint_stage.STAGE.__class__(name="test"))
