"""The report stage of ``xcompat run``: report.md, report.json and a self-contained report.html."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xcompat.pipeline.local import StageResult

if TYPE_CHECKING:
    from xcompat.pipeline.runner import Stages

# result files of the stages, relative to the run's output folder
RESULT_FILES = ("probe.json", "kernels.json", "test.json", "abi.json", "coverage/coverage.json", "wheels/build.json")


def write_reports(stages: Stages) -> StageResult:
    from xcompat import jsonio
    from xcompat.report import build_report, load_results, render, write_html

    pipe = stages.pipe
    files = [pipe.path(name) for name in RESULT_FILES if pipe.path(name).is_file()]
    plan = pipe.path("plan.json")
    loaded = load_results([str(f) for f in files], plan_path=str(plan) if plan.is_file() else None)
    report = build_report(loaded.results, loaded.plan)
    jsonio.atomic_write_text(pipe.path("report.md"), render(report, "markdown"))
    jsonio.atomic_write_text(pipe.path("report.json"), render(report, "json"))
    write_html(report, pipe.path("report.html"))
    conclusion = getattr(report, "conclusion", None)
    return StageResult(
        name="report",
        status="passed",
        detail=f"{len(files)} result file(s); conclusion: {conclusion}",
        outputs=["report.md", "report.json", "report.html"],
    )
