"""``xcompat stage coverage``: with a cell, collect its coverage; without one, merge every cell's."""

from __future__ import annotations

from dataclasses import dataclass

from xcompat.pipeline.ci.commands import plan_settings
from xcompat.pipeline.ci.step import CiInputs, CiStep


@dataclass(frozen=True)
class CoverageStage:
    name: str = "coverage"

    def step(self, inputs: CiInputs) -> CiStep:
        if inputs.matrix_sha256:
            plan_settings(inputs, "json", f"the plan {inputs.plan_path} and {inputs.verified} are not the "
                          "verified matrix's")
        if inputs.cell:
            result = inputs.cell_dir / "coverage.json"
            return CiStep(argv=["coverage", "collect", "--cell-id", inputs.cell, "--source-root",
                                inputs.project_dir, "--out", str(result)], result=result)
        result = inputs.out / "coverage" / "coverage.json"
        argv = ["coverage", "merge", str(inputs.results), "--repo", inputs.project_dir,
                "--out-dir", str(result.parent)]
        if inputs.verified.is_file():
            argv += ["--matrix", str(inputs.verified)]
        return CiStep(argv=argv, result=result)


STAGE = CoverageStage()
