"""``xcompat stage build``: the cell's wheels, built against its framework versions.

``build.json`` is written next to the wheels; a copy goes with the cell's results.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

from xcompat.pipeline.ci.commands import plan_settings
from xcompat.pipeline.ci.step import CiInputs, CiStep, StageRefused


@dataclass(frozen=True)
class BuildStage:
    name: str = "build"

    def step(self, inputs: CiInputs) -> CiStep:
        if inputs.matrix_sha256:
            plan_settings(inputs, "json", f"the plan {inputs.plan_path} and {inputs.verified} are not the "
                          "verified matrix's")
        result = inputs.wheels / "build.json"
        argv = ["build", inputs.project_dir, "--out", str(inputs.wheels)]
        if inputs.verified.is_file():
            argv += ["--matrix", str(inputs.verified)]
        elif inputs.cell:
            raise StageRefused(f"no verified matrix at {inputs.verified}: download the plan artifact (plan.json, "
                               "matrix.yml) into output-dir before the build stage", 2)
        if inputs.cell:
            argv += ["--cell", inputs.cell]

        def keep() -> None:
            if result.is_file():
                inputs.cell_dir.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(result, inputs.cell_dir / "build.json")

        return CiStep(argv=argv, result=result, install=True, after=keep)


STAGE = BuildStage()
