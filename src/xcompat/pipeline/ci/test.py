"""``xcompat stage test``: the project's tests against the cell's wheel, with the verified plan's settings.

``tests.pytest``, ``-args``, ``.isolation`` and ``.timeout`` come from the verified plan, never
the checkout's matrix, and follow the extra arguments, so the signed settings win.
"""

from __future__ import annotations

from dataclasses import dataclass

from xcompat.pipeline.ci.commands import lines, plan_settings
from xcompat.pipeline.ci.step import CiInputs, CiStep


@dataclass(frozen=True)
class TestsStage:
    name: str = "test"

    def step(self, inputs: CiInputs) -> CiStep:
        result = inputs.cell_dir / "test.json"
        argv = ["test", "--json", str(result), "--junit", str(inputs.cell_dir / "junit.xml")]
        if inputs.cell:
            argv += ["--cell-id", inputs.cell]
        settings: list[str] = []
        if inputs.plan_path.is_file() or inputs.matrix_sha256:
            settings = lines(plan_settings(inputs, "test-argv", f"could not read the test settings from "
                                           f"{inputs.plan_path}", "--project", inputs.project_dir))
        else:
            argv.append(inputs.project_dir)
        return CiStep(argv=argv, result=result, settings_args=settings, install=True,
                      with_wheel=inputs.install_wheel, cell_python=bool(inputs.cell))


STAGE = TestsStage()
