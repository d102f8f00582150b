"""Every step output `xcompat report` writes is an output of the composite action, and the
report stage passes the comment mode and annotation limit inputs to the command."""

from __future__ import annotations

from pathlib import Path

import yaml

from xcompat.report.step_outputs import OUTPUT_NAMES

ACTION = Path(__file__).resolve().parents[3] / "action.yml"


def _action() -> dict:
    return yaml.safe_load(ACTION.read_text())


def test_every_report_step_output_is_an_action_output():
    outputs = _action()["outputs"]
    missing = [name for name in OUTPUT_NAMES if name not in outputs]
    assert missing == []
    for name in OUTPUT_NAMES:
        assert f"steps.run.outputs.{name}" in outputs[name]["value"], name


def test_report_inputs_reach_the_command():
    action = _action()
    assert action["inputs"]["comment-mode"]["default"] == "always"
    run_step = next(step for step in action["runs"]["steps"] if step.get("id") == "run")
    assert run_step["env"]["XCOMPAT_COMMENT_MODE"] == "${{ inputs.comment-mode }}"
    assert run_step["env"]["XCOMPAT_MAX_ANNOTATIONS"] == "${{ inputs.max-annotations }}"
    assert '--comment-mode "${XCOMPAT_COMMENT_MODE:-always}"' in run_step["run"]
    assert '--max-annotations "$XCOMPAT_MAX_ANNOTATIONS"' in run_step["run"]
    # `xcompat stage report` hands both to `xcompat report`
    from xcompat.pipeline.ci.report import STAGE
    from xcompat.pipeline.ci.step import CiInputs

    argv = STAGE.step(CiInputs(comment_mode="on-change", max_annotations="7")).argv
    assert argv[argv.index("--comment-mode") + 1] == "on-change"
    assert argv[argv.index("--max-annotations") + 1] == "7"
