"""The composite-action runner used by the end-to-end tests behaves as GitHub documents it.

A synthetic action exercises what xcompat's action relies on: input defaults holding
expressions, `env:` evaluation, GITHUB_OUTPUT heredocs, GITHUB_ENV and GITHUB_PATH carried to
later steps, the implicit `success() &&` of `if:`, `failure()`/`always()`, continue-on-error,
and action outputs evaluated after the steps.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.helpers.action import (
    ExpressionError,
    evaluate_expressions,
    expressions_available,
    run_composite_action,
)

REASON = expressions_available()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"composite action runner unavailable: {REASON}")

ACTION = """
name: probe
description: probe
inputs:
  who:
    description: who
    default: ${{ github.repository }}
  fail:
    description: fail
    default: "false"
outputs:
  greeting:
    description: greeting
    value: ${{ steps.one.outputs.greeting }}
  late:
    description: late
    value: ${{ steps.four.outputs.late || 'none' }}
runs:
  using: composite
  steps:
    - id: one
      shell: bash
      env:
        WHO: ${{ inputs.who }}
        JOINED: ${{ format('{0}-{1}', runner.os, inputs.fail) }}
      run: |
        printf 'greeting<<EOF_X\\nhello %s\\nsecond line\\nEOF_X\\n' "$WHO" >> "$GITHUB_OUTPUT"
        echo "CARRIED=$JOINED" >> "$GITHUB_ENV"
        mkdir -p "$RUNNER_TEMP/bin" && printf '#!/bin/sh\\necho tool-ran\\n' > "$RUNNER_TEMP/bin/probe-tool"
        chmod +x "$RUNNER_TEMP/bin/probe-tool" && echo "$RUNNER_TEMP/bin" >> "$GITHUB_PATH"
        echo "## summary one" >> "$GITHUB_STEP_SUMMARY"
    - id: two
      shell: bash
      run: |
        echo "carried=$CARRIED" >> "$GITHUB_OUTPUT"
        echo "tool=$(probe-tool)" >> "$GITHUB_OUTPUT"
        if [ "$FAIL" = true ]; then exit 3; fi
      env:
        FAIL: ${{ inputs.fail }}
    - id: three
      if: inputs.fail == 'true'
      shell: bash
      run: echo "never=the implicit success() is false after a failure" >> "$GITHUB_OUTPUT"
    - id: four
      if: failure()
      shell: bash
      run: echo "late=ran after failure" >> "$GITHUB_OUTPUT"
    - id: five
      if: always()
      continue-on-error: true
      shell: bash
      run: exit 7
"""


@pytest.fixture
def action(tmp_path: Path) -> Path:
    folder = tmp_path / "probe-action"
    folder.mkdir()
    (folder / "action.yml").write_text(ACTION)
    return folder


def test_success_path(action: Path, tmp_path: Path) -> None:
    run = run_composite_action(action, {}, workspace=tmp_path, github={"repository": "acme/widgets"})
    assert run.outputs["greeting"] == "hello acme/widgets\nsecond line"
    assert run.step("two").outputs == {"carried": "Linux-false", "tool": "tool-ran"}
    assert run.step("three").outcome == "skipped" and run.step("four").outcome == "skipped"
    assert run.step("five").outcome == "failure" and run.status == "success"  # continue-on-error
    assert run.outputs["late"] == "none"
    assert "## summary one" in run.summary


def test_failure_path(action: Path, tmp_path: Path) -> None:
    run = run_composite_action(action, {"fail": "true"}, workspace=tmp_path)
    assert run.step("two").outcome == "failure" and run.status == "failure"
    assert run.step("two").outputs["carried"] == "Linux-true"  # outputs of a failed step still count
    assert run.step("three").outcome == "skipped"
    assert run.outputs["late"] == "ran after failure"


def test_expression_errors_are_reported() -> None:
    with pytest.raises(ExpressionError, match="cannot evaluate"):
        evaluate_expressions([("template", "${{ nosuchfunction(1) }}")], {"inputs": {}})


def test_undeclared_input_is_refused(action: Path, tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="not declared"):
        run_composite_action(action, {"typo": "x"}, workspace=tmp_path)
