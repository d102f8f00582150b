"""``xcompat stage plan``: the verified matrix expanded into the jobs of the forge.

The plan is made from a copy of the matrix pinned to the verified hash: the copy is then
exactly the verified bytes, and it travels with the plan (``OUTPUT-DIR/matrix.yml``), so the
build and test jobs read those, never the checkout's file, and can check the plan against them.
Its commands run in the project folder.
"""

from __future__ import annotations

import json
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from xcompat.pipeline.ci.step import CiInputs, CiStep


@dataclass(frozen=True)
class PlanStage:
    name: str = "plan"

    def step(self, inputs: CiInputs) -> CiStep:
        out = inputs.out
        plan = inputs.plan_path.resolve()
        planned = inputs.matrix
        if inputs.in_project(planned).is_file():
            shutil.copyfile(inputs.in_project(planned), out / "matrix.yml")
            planned = str(out / "matrix.yml")
        pin = ["--expect-sha256", inputs.matrix_sha256] if inputs.matrix_sha256 else []
        # The forge's own format next to the plan; its outputs are this stage's to write.
        forge = out / f"plan-{inputs.forge}.json"
        argv = ["matrix", "plan", planned, "--format", "json", "--output", str(plan), *pin]
        then = ["matrix", "plan", planned, "--format", inputs.forge, "--output", str(forge), *pin]
        return CiStep(argv=argv, result=plan, then=then, cwd=inputs.project_dir,
                      outputs=lambda: plan_outputs(plan, forge))


def plan_outputs(plan: Path, forge: Path) -> list[str]:
    """The plan stage's outputs: the strategy matrix (a multi-line value), cells, paths and the hash."""
    github = json.loads(forge.read_text(encoding="utf-8"))
    document = json.loads(plan.read_text(encoding="utf-8"))
    lines = []
    if "matrix" in github:
        matrix = json.dumps(github["matrix"], separators=(",", ":"))
        marker = "xcompat_" + uuid.uuid4().hex
        lines.append(f"matrix<<{marker}\n{matrix}\n{marker}")
    return [*lines, f"cells={len(document['cells'])}", f"plan={plan}", f"result={plan}",
            f"matrix-sha256={document['matrix_sha256']}"]


STAGE = PlanStage()
