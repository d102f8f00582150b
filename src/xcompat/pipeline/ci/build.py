"""``xcompat stage build``: the cell's wheels, built against its framework versions.

``build.json`` is written next to the wheels; a copy goes with the cell's results.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

from xcompat.pipeline.ci.commands import bound_to_plan
from xcompat.pipeline.ci.step import CiInputs, CiStep, StageRefused


@dataclass(frozen=True)
class BuildStage:
    name: str = "build"

    def step(self, inputs: CiInputs) -> CiStep:
        bound_to_plan(inputs)
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

        # cibuildwheel builds each cell's Python in its own container; a native build uses this one.
        return CiStep(argv=argv, result=result, install=True, after=keep,
                      cell_python=bool(inputs.cell) and _backend(inputs.args) == "native")


def _backend(args: tuple[str, ...]) -> str:
    """The build backend the extra arguments choose (``xcompat build``'s default otherwise)."""
    import os

    from xcompat.ci import is_ci

    for i, arg in enumerate(args):
        if arg.startswith("--backend="):
            return arg.split("=", 1)[1]
        if arg == "--backend" and i + 1 < len(args):
            return args[i + 1]
    return "cibuildwheel" if is_ci(os.environ) else "native"


STAGE = BuildStage()
