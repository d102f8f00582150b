"""``xcompat stage kernels``: the conformance kernels on the cell's device, as ``xcompat run`` runs them.

Run in the cell's test job, on its runner (the device lanes on their labelled runners), with
the cell's frameworks and wheel installed. Whether they are required is decided as in
``xcompat run``: the verified plan's ``tests.kernels`` and whether the project uses torch; when
they are not, the stage writes a skipped result saying why and runs nothing.
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
        kernels: object = "all"
        if inputs.plan_path.is_file() or inputs.matrix_sha256:
            document = json.loads(plan_settings(inputs, "json", f"could not read the kernels settings from "
                                                f"{inputs.plan_path}"))
            kernels = document.get("settings", {}).get("tests.kernels", "all")
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
                      cell_python=bool(inputs.cell))


def _cell_backend(inputs: CiInputs) -> str | None:
    from xcompat.pipeline.ci.interpreter import plan_cell

    backend = (plan_cell(inputs) or {}).get("backend")
    return backend if isinstance(backend, str) else None


STAGE = KernelsStage()
