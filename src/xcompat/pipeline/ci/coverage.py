"""``xcompat stage coverage``: with a cell, measure its coverage; without one, merge every cell's.

A cell's coverage is measured by the coverage stage of ``xcompat run`` itself (``xcompat run
--cell CELL --stage plan --stage coverage``): a ``--coverage`` build of the project's native
code, the tests as the test stage runs them (the verified plan's settings) under coverage.py,
then ``xcompat coverage collect``. What it collected is the cell's ``coverage.json``, which the
merge job reads with every other cell's.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

from xcompat.pipeline.ci.commands import bound_to_plan
from xcompat.pipeline.ci.step import CiInputs, CiStep, StageRefused


@dataclass(frozen=True)
class CoverageStage:
    name: str = "coverage"

    def step(self, inputs: CiInputs) -> CiStep:
        bound_to_plan(inputs)
        if inputs.cell:
            return _cell(inputs)
        result = inputs.out / "coverage" / "coverage.json"
        # the report reads what this merge writes: never an earlier run's, where the merge finds nothing now
        result.unlink(missing_ok=True)
        # the cells' coverage results, not every result beside them (each would be an unreadable input)
        cells = sorted(str(p) for p in inputs.results.rglob("coverage.json")) if inputs.results.is_dir() else []
        argv = ["coverage", "merge", *(cells or [str(inputs.results)]), "--repo", inputs.project_dir,
                "--out-dir", str(result.parent)]
        if inputs.verified.is_file():
            argv += ["--matrix", str(inputs.verified)]
        return CiStep(argv=argv, result=result)


def _cell(inputs: CiInputs) -> CiStep:
    if not inputs.verified.is_file():
        raise StageRefused(f"no verified matrix at {inputs.verified}: download the plan artifact (plan.json, "
                           "matrix.yml) into output-dir before the coverage stage", 2)
    result = inputs.cell_dir / "coverage.json"
    run = inputs.out / ".coverage-run"
    argv = ["run", inputs.project_dir, "--matrix", str(inputs.verified), "--cell", inputs.cell,
            "--stage", "plan", "--stage", "coverage", "--out", str(run)]
    if inputs.matrix_sha256:  # the plan job verified these bytes: the run checks their hash, not a signature
        argv += ["--expect-sha256", inputs.matrix_sha256]
    collected = run / ".inputs" / "coverage-cell.json"

    def keep() -> None:
        if collected.is_file():
            inputs.cell_dir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(collected, result)

    return CiStep(argv=argv, result=result, install=True, with_wheel=False, cell_python=True, after=keep)


STAGE = CoverageStage()
