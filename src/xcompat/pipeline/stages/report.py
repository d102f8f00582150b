"""The report stage of ``xcompat run``: report.md, report.json and a self-contained report.html.

It runs even after an earlier stage halted the run. First every stage that did not write its
own result gets an envelope (``xcompat.pipeline.envelopes``); then the run's output folder is
read the way ``xcompat report DIR`` reads it (``xcompat.results``): every stage result, the
plan, and ``settings.json`` (the resolved settings and what the project is), so both give the
same verdict. The report is kept on the context: the run's exit code is its verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from xcompat import jsonio
from xcompat.pipeline.context import RunContext
from xcompat.pipeline.envelopes import write_stage_envelopes
from xcompat.pipeline.local import StageResult


def settings_document(context: RunContext) -> dict[str, Any]:
    doc = context.settings.to_dict()
    facts = context.cfg.facts
    doc["project"] = facts.to_dict() if facts is not None else None
    return doc


@dataclass(frozen=True)
class ReportStage:
    name: str = "report"
    runs_when_halted: bool = True

    def run(self, context: RunContext) -> StageResult:
        from xcompat.report import render, write_html
        from xcompat.report.folder import report_from_folder

        write_stage_envelopes(context)
        pipe = context.pipe
        jsonio.write_json(pipe.path("settings.json"), settings_document(context), schema="settings")
        loaded, report = report_from_folder(pipe.stage_dir, display_root=pipe.stage_dir)
        if context.rerun is not None:
            report = replace(report, rerun=context.rerun)
        context.report = report
        jsonio.atomic_write_text(pipe.path("report.md"), render(report, "markdown"))
        jsonio.atomic_write_text(pipe.path("report.json"), render(report, "json"))
        write_html(report, pipe.path("report.html"))
        return StageResult(
            name="report",
            status="passed",
            detail=f"{len(loaded.results)} result file(s); conclusion: {report.conclusion}",
            outputs=["report.md", "report.json", "report.html"],
        )


STAGE = ReportStage()
