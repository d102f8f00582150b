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

from xcompat.log import get_logger
from xcompat.pipeline.ci import abi, build, coverage, gate, plan, report, test
from xcompat.pipeline.ci.commands import run, xcompat
from xcompat.pipeline.ci.contracts_python_floor import STAGE as CONTRACTS_PYTHON_FLOOR
from xcompat.pipeline.ci.contracts_runtime_libraries import STAGE as CONTRACTS_RUNTIME_LIBRARIES
from xcompat.pipeline.ci.contracts_stubs import STAGE as CONTRACTS_STUBS
from xcompat.pipeline.ci.step import CiInputs, CiStage, CiStep, StageRefused

CI_STAGES: dict[str, CiStage] = {stage.name: stage for stage in (
    plan.STAGE, build.STAGE, test.STAGE, abi.STAGE, coverage.STAGE, report.STAGE, gate.STAGE)}

# The contract stages (docs/contracts.md): the cell's stubs and runtime libraries, the project's
# python floor; their tools (mypy, vermin) are the `contracts` extra.
CI_STAGES.update({stage.name: stage for stage in (CONTRACTS_STUBS, CONTRACTS_RUNTIME_LIBRARIES, CONTRACTS_PYTHON_FLOOR)})


def run_stage(name: str, inputs: CiInputs, env: Mapping[str, str] | None = None) -> int:
    """Run the stage ``name``; its exit code (that of its command, or why it did not run)."""
    env = dict(os.environ if env is None else env)
    try:
        step = CI_STAGES[name].step(inputs)
    except StageRefused as exc:
        _error(exc.message, env)
        return exc.exit_code
    step.result.parent.mkdir(parents=True, exist_ok=True)
    code = _install(step, inputs) if step.install else 0
    if code != 0:
        _error("could not install the frameworks (or the wheel) of this cell", env)
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
    for argv in (step.argv, step.then):
        if argv is not None and code == 0:
            code = run(xcompat(*argv, *inputs.args, *step.settings_args), env=env, cwd=step.cwd)
    return code


def _install(step: CiStep, inputs: CiInputs) -> int:
    """The cell's environment: the framework versions the matrix names (a build compiles against
    them) and, to test, its wheel (the one whose tags fit this Python); pip honours the job's
    PIP_CONSTRAINT and index settings. The requirements are computed, never shell-parsed."""
    from packaging.tags import sys_tags
    from packaging.utils import parse_wheel_filename

    wanted: list[str] = []
    if step.with_wheel:
        supported = set(sys_tags())
        for path in sorted(inputs.wheels.glob("*.whl")):
            if supported & set(parse_wheel_filename(path.name)[3]):
                wanted.append(str(path))
                break
    pins = _framework_pins(inputs.frameworks)
    if pins is None:
        return 1
    wanted += pins
    if not wanted:
        return 0
    pip = [sys.executable, "-I", "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--quiet"]
    return 0 if subprocess.run([*pip, *wanted], check=False).returncode == 0 else 4


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
