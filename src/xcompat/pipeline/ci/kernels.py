"""``xcompat stage kernels``: the conformance kernels on the cell's device, then the project's own
operators, as ``xcompat run`` runs them.

Run in the cell's test job, on its runner (the device lanes on their labelled runners), with
the cell's frameworks and wheel installed. Whether they are required is decided as in
``xcompat run``: the verified plan's ``tests.kernels`` and whether the project uses torch; when
they are not, the stage writes a skipped result saying why and runs nothing.

Once the runner's kernels passed, ``xcompat kernels operators --merge-into`` checks the
operators the cell's wheel registers (the wheel unpacked into a folder of its own, not the
job's environment) on each device of the cell, with the project's ``.xcompat/operators.py``,
and adds them to the same ``kernels.json``; the verified plan's ``tests.operators`` says which
findings gate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from xcompat.pipeline.ci.commands import plan_settings
from xcompat.pipeline.ci.step import CiInputs, CiStep


@dataclass(frozen=True)
class KernelsStage:
    name: str = "kernels"

    def step(self, inputs: CiInputs) -> CiStep:
        from xcompat.results.stages import kernels_requirement
        from xcompat.settings.project import project_facts

        result = inputs.cell_dir / "kernels.json"
        settings: dict[str, object] = {}
        if inputs.plan_path.is_file() or inputs.matrix_sha256:
            document = json.loads(plan_settings(inputs, "json", f"could not read the kernels settings from "
                                                f"{inputs.plan_path}"))
            settings = document.get("settings", {})
        kernels = settings.get("tests.kernels", "all")
        facts = project_facts(Path(inputs.project_dir))
        if kernels == "none":
            return CiStep(argv=[], result=result, skip="not required: the matrix sets tests.kernels: none")
        requirement = kernels_requirement(None, facts)
        if not requirement.required:
            return CiStep(argv=[], result=result, skip=f"not required: {requirement.reason}")
        argv = ["kernels", "run", "--json", str(result)]
        if isinstance(kernels, list):
            for name in kernels:
                argv += ["--kernel", str(name)]
        backend = _cell_backend(inputs)
        if inputs.cell:
            argv += ["--cell-id", inputs.cell]
            if backend and backend != "cpu":
                argv += ["--required-backend", backend]
        return CiStep(argv=argv, result=result, install=True, with_wheel=inputs.install_wheel,
                      cell_python=bool(inputs.cell),
                      then=_operators(inputs, result, backend, str(settings.get("tests.operators", "gate"))),
                      # as `xcompat run` does: the operators are checked whatever the runner's kernels
                      # concluded, and the stage's extra arguments are `kernels run`'s alone
                      then_takes_args=False, then_after_failure=True)


def _operators(inputs: CiInputs, result: Path, backend: str | None, setting: str) -> list[str] | None:
    """The project's operators checked from the cell's wheel and added to ``result``; None: the
    wheelhouse has no wheel for this job's Python (installing it, when asked, says so first)."""
    from xcompat.interpreters.fit import installable_wheel
    from xcompat.results.kernel_operators import SAMPLES, SETTINGS, operator_devices

    wheel = installable_wheel(inputs.wheels)
    if wheel is None:
        return None
    argv = ["kernels", "operators", "--wheel", str(wheel), "--merge-into", str(result),
            "--setting", setting if setting in SETTINGS else "gate"]
    for device in operator_devices(backend):
        argv += ["--device", device]
    samples = inputs.in_project(str(SAMPLES))
    if samples.is_file():
        argv += ["--samples", str(samples)]
    if inputs.cell:
        argv += ["--cell-id", inputs.cell]
    return argv


def _cell_backend(inputs: CiInputs) -> str | None:
    from xcompat.pipeline.ci.interpreter import plan_cell

    backend = (plan_cell(inputs) or {}).get("backend")
    return backend if isinstance(backend, str) else None


STAGE = KernelsStage()
