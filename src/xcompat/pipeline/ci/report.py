"""``xcompat stage report``: the report over every cell's results, delivered to the forge."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xcompat.pipeline.ci.step import CiInputs, CiStep


@dataclass(frozen=True)
class ReportStage:
    name: str = "report"

    def step(self, inputs: CiInputs) -> CiStep:
        bundle = inputs.out / "report"
        forge = f"--{inputs.forge}"
        if inputs.verification_failed:
            # This head has no verified plan, so no result of it counts: the one result is why,
            # written here (a trusted job), and the check run and comment of the head say so.
            argv = ["report", str(unverified_result(inputs)), forge, "--bundle-dir", str(bundle)]
        elif inputs.report_from:
            argv = ["report", "--from-artifact", inputs.report_from, forge, "--bundle-dir", str(bundle)]
        else:
            argv = ["report", str(inputs.results), forge, "--bundle-dir", str(bundle)]
            merged = inputs.out / "coverage" / "coverage.json"
            if merged.is_file():  # every cell's coverage merged (the coverage stage without a cell)
                argv.insert(2, str(merged))
            if inputs.plan_path.is_file():
                argv += ["--plan", str(inputs.plan_path)]
        if inputs.forge == "github":
            argv += ["--comment-mode", inputs.comment_mode or "always"]
            if inputs.max_annotations:
                argv += ["--max-annotations", inputs.max_annotations]
        if not inputs.post:
            argv.append("--no-comment")
        return CiStep(argv=argv, result=bundle / "report.json")


def unverified_result(inputs: CiInputs) -> Path:
    """A failed result saying that this head's matrix signature did not verify, and why."""
    from xcompat import jsonio

    why = " ".join(inputs.verification_failed.split())[:1000]
    path = inputs.out / "unverified" / "verification.json"
    jsonio.write_json(path, {"version": 1, "kind": "pipeline", "cell_id": None, "status": "failed",
                             "summary": f"the matrix signature did not verify: {why}", "stage": "verify"})
    return path


STAGE = ReportStage()
