"""``xcompat stage contracts-python-floor``: the lowest Python the project's sources need, once.

vermin on the project's folder against ``Requires-Python`` (the wheelhouse's wheel when there
is one, else ``pyproject.toml``) and the lowest Python of the plan's cells. The result belongs
to no cell; the report and the gate judge it under the matrix's ``contracts.python-floor``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xcompat.errors import XcompatError
from xcompat.pipeline.ci.commands import bound_to_plan
from xcompat.pipeline.ci.step import CiInputs, CiStep
from xcompat.pipeline.stages.contracts_python_floor import lowest_python
from xcompat.results.contracts import FLOOR


@dataclass(frozen=True)
class PythonFloorStage:
    name: str = FLOOR.kind

    def step(self, inputs: CiInputs) -> CiStep:
        from xcompat.results.collect import load_plan

        bound_to_plan(inputs)
        # with the cells' results, in a folder of no cell: the report job reads it with them
        result = inputs.results / "project" / f"{FLOOR.kind}.json"
        argv = ["contracts", "python-floor", inputs.project_dir, "-o", str(result)]
        wheel = next(iter(sorted(inputs.wheels.glob("*.whl"))), None) if inputs.wheels.is_dir() else None
        if wheel is not None:
            argv += ["--wheel", str(wheel)]
        try:
            lowest = lowest_python(load_plan(inputs.plan_path)["cells"]) if inputs.plan_path.is_file() else None
        except XcompatError:
            lowest = None
        if lowest is not None:
            argv += ["--lowest-python", lowest]
        return CiStep(argv=argv, result=result)


STAGE = PythonFloorStage()
