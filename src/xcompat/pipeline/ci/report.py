"""``xcompat stage report``: the report over every cell's results, delivered to the forge."""

from __future__ import annotations

from dataclasses import dataclass

from xcompat.pipeline.ci.step import CiInputs, CiStep


@dataclass(frozen=True)
class ReportStage:
    name: str = "report"

    def step(self, inputs: CiInputs) -> CiStep:
        bundle = inputs.out / "report"
        forge = f"--{inputs.forge}"
        if inputs.report_from:
            argv = ["report", "--from-artifact", inputs.report_from, forge, "--bundle-dir", str(bundle)]
        else:
            argv = ["report", str(inputs.results), forge, "--bundle-dir", str(bundle)]
            if inputs.plan_path.is_file():
                argv += ["--plan", str(inputs.plan_path)]
        if inputs.forge == "github":
            argv += ["--comment-mode", inputs.comment_mode or "always"]
            if inputs.max_annotations:
                argv += ["--max-annotations", inputs.max_annotations]
        if not inputs.post:
            argv.append("--no-comment")
        return CiStep(argv=argv, result=bundle / "report.json")


STAGE = ReportStage()
