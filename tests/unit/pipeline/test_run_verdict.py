"""``xcompat run``: settings resolved once, every stage visible to the one verdict, exit code from it."""

from __future__ import annotations

import argparse
import io
import os
from pathlib import Path

import pytest
from tests.helpers.cli import xcompat_in_process

from xcompat.errors import VerificationError
from xcompat.log import Logger
from xcompat.pipeline.config import resolve_config
from xcompat.pipeline.context import RunContext
from xcompat.pipeline.envelopes import write_stage_envelopes
from xcompat.pipeline.local import LocalPipeline, RunConfig, StageResult
from xcompat.pipeline.runner import exit_code, guarded
from xcompat.pipeline.stages import abi, kernels, plan, test, verify
from xcompat.report.folder import report_from_folder
from xcompat.resources import data_dir
from xcompat.settings import ProjectFacts, defaults_settings

SAMPLE = data_dir("examples") / "sample-ext"
NO_TORCH = ProjectFacts(name="tiny", uses_torch=False, torch_evidence="no torch in Requires-Dist or build requirements")


def _args(argv: list[str]) -> argparse.Namespace:
    from xcompat.commands import run

    parser = argparse.ArgumentParser()
    run.configure_parser(parser)
    return parser.parse_args(argv)


def _project(tmp_path: Path, matrix: str | None = None) -> Path:
    project = tmp_path / "proj"
    (project / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "proj"\nversion = "1.0"\nrequires-python = ">=3.10"\n')
    if matrix is not None:
        (project / ".xcompat").mkdir()
        (project / ".xcompat" / "matrix.yml").write_text(matrix)
    return project


MATRIX = """xcompat: 1
repo: acme/proj
serial: 1
python: ["3.11"]
platforms: {linux: {archs: [x86_64]}}
backends: {cpu: {required: true}}
tests: {timeout: 45, isolation: file}
"""


def test_project_without_a_matrix_is_a_one_line_error_not_the_sample(tmp_path: Path):
    project = _project(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    proc = xcompat_in_process("run", str(project), "--out", str(tmp_path / "out"), env=env)
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "has no .xcompat/matrix.yml" in lines[0] and "xcompat matrix init" in lines[0]
    assert not (tmp_path / "out").exists()


def test_options_are_unset_by_default_and_the_matrix_wins(tmp_path: Path):
    project = _project(tmp_path, MATRIX)
    args = _args([str(project)])
    assert args.timeout is None and args.isolate is None
    cfg = resolve_config(args, env={})
    assert cfg.settings is not None
    assert cfg.settings.tests.timeout == 45.0 and cfg.settings.tests.isolation == "file"
    assert cfg.signed is False and cfg.facts is not None and cfg.facts.uses_torch is False
    given = resolve_config(_args([str(project), "--timeout", "7"]), env={})
    assert given.settings is not None and given.settings.tests.timeout == 7.0
    assert given.settings.overridden == ("tests.timeout",)


def test_unsigned_matrix_runs_locally_and_is_refused_in_ci(tmp_path: Path):
    project = _project(tmp_path, MATRIX)
    assert resolve_config(_args([str(project)]), env={}).signed is False
    with pytest.raises(VerificationError, match="not signed"):
        resolve_config(_args([str(project)]), env={"CI": "true"})


def test_the_demo_uses_the_sample_matrix_and_its_signed_settings():
    cfg = resolve_config(_args([]), env={})
    assert cfg.matrix == (SAMPLE / ".xcompat" / "matrix.yml").resolve()
    assert cfg.signed is True and cfg.settings is not None
    assert cfg.settings.tests.timeout == 120.0
    assert dict(cfg.settings.abi.bumps) == {"glibc_floor_raised": "minor"}


class _Report:
    def __init__(self, conclusion: str) -> None:
        self.conclusion = conclusion
        self.headline = conclusion
        self.problems = ("py3.11-linux-x86_64-cpu: failed (test failed)",)


def test_exit_code_is_the_reports_verdict_even_when_every_stage_passed():
    # Old code compared the conclusion with "failed", a value the report never writes: exit 0 on red.
    stages = [StageResult(name=n, status="passed") for n in ("verify", "build", "test", "report")]
    assert exit_code(stages, _Report("failure")) == 1
    assert exit_code(stages, _Report("neutral")) == 1
    assert exit_code(stages, _Report("success")) == 0
    assert exit_code(stages, None) == 1


def _stages(tmp_path: Path, facts: ProjectFacts | None = NO_TORCH, settings=None) -> RunContext:
    project = _project(tmp_path)
    cfg = RunConfig(project=project, matrix=tmp_path / "m.yml", allowed_signers=None, baseline=None,
                    out=tmp_path / "out", settings=settings or defaults_settings(required_backends=("cpu",)),
                    facts=facts, signed=False)
    pipe = LocalPipeline(cfg, Logger({"CI": "true"}, io.StringIO()))
    pipe.stage_dir.mkdir(parents=True)
    stages = RunContext(pipe)
    stages.cell_id = "py3.11-linux-x86_64-cpu"
    return stages


def test_kernels_are_not_run_for_a_project_without_torch(tmp_path: Path):
    stages = _stages(tmp_path)
    result = kernels.STAGE.run(stages)
    assert result.status == "skipped" and "does not use torch" in result.detail
    assert not stages.pipe.path("logs").exists()  # no command ran


def test_a_failed_stage_without_its_own_result_turns_the_report_red(tmp_path: Path):
    stages = _stages(tmp_path, facts=ProjectFacts(name="ops", uses_torch=True, torch_evidence="deps"))
    stages.pipe.results.extend([
        StageResult(name="kernels", status="failed", detail="exit 1: ModuleNotFoundError: No module named 'torch'"),
        StageResult(name="test", status="failed", detail="exit 2: no tests were collected from tests"),
    ])
    write_stage_envelopes(stages)
    (stages.pipe.path("settings.json")).write_text(__import__("json").dumps(
        {**stages.settings.to_dict(), "project": stages.cfg.facts.to_dict()}))
    _, report = report_from_folder(stages.pipe.stage_dir)
    assert report.conclusion == "failure"
    text = "\n".join(report.problems)
    assert "kernels failed" in text or "No module named 'torch'" in text
    assert any(f.kind == "test" and "no tests were collected" in f.message for f in report.failures)


def test_test_targets_are_relative_to_the_project_and_a_missing_one_fails(tmp_path: Path):
    from xcompat.settings import apply_overrides

    stages = _stages(tmp_path)
    targets, args = test.pytest_targets(stages)  # type: ignore[misc]
    assert targets == [str((stages.cfg.project / "tests").resolve())] and args == []
    stages.settings = apply_overrides(stages.settings, {"tests.pytest": ["missing"]}, {})
    result = test.pytest_targets(stages)
    assert isinstance(result, StageResult) and result.status == "failed" and "does not exist" in result.detail
    stages.settings = apply_overrides(stages.settings, {"tests.pytest": ["proj.tests"],
                                                        "tests.pytest-args": ["--pyargs"]}, {})
    assert test.pytest_targets(stages) == (["proj.tests"], ["--pyargs"])


def test_the_abi_stage_applies_the_signed_bumps(tmp_path: Path):
    from xcompat.abi.rules import make_policy

    cfg = resolve_config(_args([]), env={})
    assert cfg.settings is not None
    policy = make_policy(cfg.settings.abi_policy_document(), source="matrix abi:")
    assert policy.rules["glibc_floor_raised"] == "minor"
    stages = _stages(tmp_path, settings=cfg.settings)
    stages.wheels = [tmp_path / "x.whl"]
    stages.baseline_path = tmp_path / "base.whl"  # what the baseline stage found
    seen: list[list[str]] = []

    def capture(name, argv, **kwargs):  # records the command line; the ABI diff itself is tested in tests/*/abi
        seen.append(list(argv))
        return StageResult(name=name, status="passed")

    stages.pipe.run_command = capture  # type: ignore[method-assign]
    abi.STAGE.run(stages)
    argv = seen[0]
    policy_file = Path(argv[argv.index("--policy") + 1])
    assert make_policy(__import__("json").loads(policy_file.read_text())).rules["glibc_floor_raised"] == "minor"


def test_in_ci_a_matrix_that_does_not_verify_runs_nothing(tmp_path: Path):
    import shutil

    from xcompat.matrix import load_matrix
    from xcompat.settings import resolve_settings

    folder = tmp_path / ".xcompat"
    folder.mkdir()
    for name in ("matrix.yml", "matrix.yml.sig", "allowed_signers"):
        shutil.copy(SAMPLE / ".xcompat" / name, folder / name)
    matrix = folder / "matrix.yml"
    # a pull request's edit of the signed file: the signature no longer holds
    matrix.write_text(matrix.read_text().replace("timeout: 120", 'timeout: 120\n  pytest-args: ["--deselect", "x"]'))
    settings = resolve_settings(load_matrix(matrix), signed=True)
    assert settings.tests.pytest_args == ("--deselect", "x")
    cfg = RunConfig(project=_project(tmp_path), matrix=matrix, allowed_signers=folder / "allowed_signers",
                    baseline=None, out=tmp_path / "out", settings=settings, facts=NO_TORCH, signed=True)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_"))}, "CI": "true"}
    pipe = LocalPipeline(cfg, Logger({"CI": "true"}, io.StringIO()), env=env)
    stages = RunContext(pipe)
    results = pipe.execute([(stage.name, guarded(stages, stage)) for stage in (verify.STAGE, plan.STAGE, test.STAGE)])
    assert results[0].status != "passed"
    assert [r.status for r in results[1:]] == ["skipped", "skipped"]
    assert all("signature did not verify" in r.detail for r in results[1:])
    assert not pipe.path("test.json").exists()


def test_trust_ref_reaches_the_verify_stage(tmp_path: Path):
    cfg = resolve_config(_args(["--trust-ref", "origin/main"]), env={})
    assert cfg.trust_ref == "origin/main"
    pipe = LocalPipeline(cfg, Logger({"CI": "true"}, io.StringIO()))
    stages = RunContext(pipe)
    seen: list[list[str]] = []

    def capture(name, argv, **kwargs):  # records the command line; verification itself is tested in tests/*/signing
        seen.append(list(argv))
        return StageResult(name=name, status="failed", detail="exit 3")

    pipe.run_command = capture  # type: ignore[method-assign]
    verify.STAGE.run(stages)
    argv = seen[0]
    assert argv[argv.index("--trust-ref") + 1] == "origin/main"


def test_a_stage_that_exited_0_without_its_result_is_not_green(tmp_path: Path):
    # `xcompat test` ended by a test's os._exit(0) used to give an envelope "test passed".
    stages = _stages(tmp_path)
    stages.pipe.results.append(StageResult(name="test", status="passed", exit_code=0))
    write_stage_envelopes(stages)
    envelope = __import__("json").loads(stages.pipe.path("stages", "test.json").read_text())
    assert envelope["status"] == "failed"
    assert "exited 0 but wrote no test.json" in envelope["summary"]
    (stages.pipe.path("settings.json")).write_text(__import__("json").dumps(
        {**stages.settings.to_dict(), "project": stages.cfg.facts.to_dict()}))
    _, report = report_from_folder(stages.pipe.stage_dir)
    assert report.conclusion == "failure"


def test_a_stage_that_wrote_its_result_gets_no_envelope(tmp_path: Path):
    stages = _stages(tmp_path)
    stages.pipe.path("test.json").write_text("{}")
    stages.pipe.results.append(StageResult(name="test", status="passed", exit_code=0))
    write_stage_envelopes(stages)
    assert not stages.pipe.path("stages", "test.json").exists()
