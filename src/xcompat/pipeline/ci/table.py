"""The CI stages by name, and how one runs in its job: ``xcompat stage NAME``.

A stage's step (``xcompat.pipeline.ci.step``) is run as the job's steps ran it: the cell's
frameworks (and, to test, its wheel) installed first, then its command with the extra
arguments and the verified plan's settings; then what the job keeps of it. Its outputs
(``result``, ``conclusion``, ``exit-code``) go to ``$GITHUB_OUTPUT`` when the job has one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from xcompat.interpreters.fit import installable_wheel
from xcompat.log import get_logger
from xcompat.pipeline.ci import abi, build, coverage, gate, kernels, plan, probe, report, test
from xcompat.pipeline.ci.commands import run, xcompat
from xcompat.pipeline.ci.contracts_python_floor import STAGE as CONTRACTS_PYTHON_FLOOR
from xcompat.pipeline.ci.contracts_runtime_libraries import STAGE as CONTRACTS_RUNTIME_LIBRARIES
from xcompat.pipeline.ci.contracts_stubs import STAGE as CONTRACTS_STUBS
from xcompat.pipeline.ci.interpreter import (
    EXIT_WRONG_PYTHON,
    check_cell_python,
    wheel_does_not_fit,
)
from xcompat.pipeline.ci.step import CiInputs, CiStage, CiStep, StageRefused

CI_STAGES: dict[str, CiStage] = {stage.name: stage for stage in (
    plan.STAGE, build.STAGE, probe.STAGE, kernels.STAGE, test.STAGE, abi.STAGE, coverage.STAGE, report.STAGE,
    gate.STAGE)}

# Stages of ``xcompat run`` that CI runs as part of another: the signature is checked by the plan
# job, the baseline is made by the abi stage. Every other stage of the run is a CI stage of its
# own name (tests check that the action, the workflows and the GitLab template run them all).
PART_OF = {"verify": "plan", "baseline": "abi"}
# Stages of ``xcompat run`` that CI has no use for: it runs each cell in a job on the cell's own
# Python, where a local run starts the other Pythons' cells itself.
LOCAL_ONLY = frozenset({"pythons"})
# Stages CI has that ``xcompat run`` has not: the release gate.
CI_ONLY = frozenset({"gate"})
# The xcompat extras each stage installs when the job names none (the action's `extras` input).
# (The kernels need torch, which the cell's frameworks or its wheel bring: no extra, so a project
# without torch, whose kernels stage is skipped, installs none.)
EXTRAS = {"build": "build", "test": "runner", "abi": "abi,build", "coverage": "coverage"}

# The contract stages (docs/contracts.md): the cell's stubs and runtime libraries, the project's
# python floor; their tools (mypy, vermin) are the `contracts` extra.
CI_STAGES.update({stage.name: stage for stage in (CONTRACTS_STUBS, CONTRACTS_RUNTIME_LIBRARIES, CONTRACTS_PYTHON_FLOOR)})
EXTRAS.update({stage.name: "contracts" for stage in (CONTRACTS_STUBS, CONTRACTS_RUNTIME_LIBRARIES,
                                                     CONTRACTS_PYTHON_FLOOR)})


def ci_stage_names() -> list[str]:
    """The CI stages, from the run's stage registry: each stage of ``xcompat run`` (or the CI stage
    it is part of), then the CI-only ones."""
    from xcompat.pipeline.registry import PIPELINE

    names = [PART_OF.get(name, name) for name in PIPELINE if name not in LOCAL_ONLY]
    # a stage runs where its last part does (the baseline is made by the abi stage, at its place)
    ordered = list(dict.fromkeys(reversed(names)))[::-1]
    return [*ordered, *sorted(CI_ONLY)]


def run_stage(name: str, inputs: CiInputs, env: Mapping[str, str] | None = None) -> int:
    """Run the stage ``name``; its exit code (that of its command, or why it did not run)."""
    env = dict(os.environ if env is None else env)
    try:
        step = CI_STAGES[name].step(inputs)
        if step.cell_python:
            check_cell_python(inputs, name)
    except StageRefused as exc:
        _error(exc.message, env)
        return exc.exit_code
    step.result.parent.mkdir(parents=True, exist_ok=True)
    if step.skip:
        return _skipped(name, step, inputs, env)
    code, why = _install(step, inputs) if step.install else (0, "")
    if code != 0:
        _error(why, env)
    else:
        code = _run(step, inputs, env)
    if step.after is not None:
        step.after()
    lines = [f"result={step.result}"]
    if step.outputs is not None:
        lines = []
        if code == 0:
            try:
                lines = step.outputs()
            except (OSError, ValueError, KeyError) as exc:
                _error(f"could not read the plan's outputs: {exc}", env)
                code = 1
    lines += [f"conclusion={'success' if code == 0 else 'failure'}", f"exit-code={code}"]
    _write_outputs(lines, env)
    return code


def _run(step: CiStep, inputs: CiInputs, env: dict[str, str]) -> int:
    if step.outputs is not None:
        env = {**env, "GITHUB_OUTPUT": os.devnull}  # this stage writes the job's outputs itself
    code = 0
    for command in step.prelude:
        if code == 0:
            code = run(xcompat(*command), env=env, cwd=step.cwd)
    if code == 0:
        code = run(xcompat(*step.argv, *inputs.args, *step.settings_args), env=env, cwd=step.cwd)
    if step.then is not None and (code == 0 or step.then_after_failure):
        # the follow-up takes the extra arguments only when it is the same command's second form
        extra = [*inputs.args, *step.settings_args] if step.then_takes_args else []
        code = max(code, run(xcompat(*step.then, *extra), env=env, cwd=step.cwd))
    return code


def _install(step: CiStep, inputs: CiInputs) -> tuple[int, str]:
    """The cell's environment: the framework versions the matrix names (a build compiles against
    them) and, to test, its wheel (the one whose tags fit this Python); pip honours the job's
    PIP_CONSTRAINT and index settings. The requirements are computed, never shell-parsed."""
    wanted: list[str] = []
    if step.with_wheel:
        wheel = installable_wheel(inputs.wheels)
        if wheel is None:
            return EXIT_WRONG_PYTHON, wheel_does_not_fit(sorted(inputs.wheels.glob("*.whl")), inputs.cell)
        wanted.append(str(wheel))
    pins = _framework_pins(inputs.frameworks)
    if pins is None:
        return 1, f"the cell's frameworks are neither JSON nor name==version words: {inputs.frameworks[:200]!r}"
    wanted += pins
    if not wanted:
        return 0, ""
    pip = [sys.executable, "-I", "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--quiet"]
    if subprocess.run([*pip, *wanted], check=False).returncode == 0:
        return 0, ""
    return 4, "could not install the frameworks (or the wheel) of this cell"


def _skipped(name: str, step: CiStep, inputs: CiInputs, env: Mapping[str, str]) -> int:
    """A stage that does not run here: a skipped result with the reason (the report shows it,
    the verdict does not count it), and a passing step."""
    from xcompat import jsonio

    kind = step.result.name.removesuffix(".json")
    jsonio.write_json(step.result, {"version": 1, "kind": kind, "cell_id": inputs.cell or None,
                                    "status": "skipped", "summary": f"not run: {step.skip}", "stage": name})
    message = f"{name}: not run: {step.skip}"
    if env.get("GITHUB_ACTIONS") == "true":
        print(f"::notice title=xcompat::{message}", flush=True)
    else:
        get_logger().info(message)
    _write_outputs([f"result={step.result}", "conclusion=success", "exit-code=0"], env)
    return 0


def _framework_pins(frameworks: str) -> list[str] | None:
    """``name==version.*`` of each framework the cell names: as JSON (``{"torch": "2.5"}``, the
    GitHub plan's ``matrix.frameworks``) or as ``name==version`` words (GitLab's
    ``$XCOMPAT_FRAMEWORKS``); None when it is neither."""
    import json

    text = frameworks.strip()
    if not text.startswith("{"):
        return [f"{word}.*" for word in text.split()]
    try:
        named = json.loads(text)
    except ValueError:
        return None
    if not isinstance(named, dict):
        return None
    return [f"{name}=={version}.*" if version else name for name, version in sorted(named.items())]


def _error(message: str, env: Mapping[str, str]) -> None:
    if env.get("GITHUB_ACTIONS") == "true":
        print(f"::error title=xcompat::{message}", flush=True)
    else:
        get_logger().error(message)


def _write_outputs(lines: list[str], env: Mapping[str, str]) -> None:
    target = env.get("GITHUB_OUTPUT")
    if not target:
        return
    with open(Path(target), "a", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in lines))
