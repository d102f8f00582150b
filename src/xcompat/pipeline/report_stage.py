"""The report stage of ``xcompat run``: report.md, report.json and a self-contained report.html.

The run's output folder is read the way ``xcompat report DIR`` reads it (``xcompat.results``):
every stage result, the plan, and ``settings.json`` (the resolved settings and what the
project is), so both give the same verdict.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xcompat.pipeline.local import StageResult

if TYPE_CHECKING:
    from xcompat.pipeline.runner import Stages


def settings_document(stages: Stages) -> dict:  # type: ignore[type-arg]
    doc = stages.settings.to_dict()
    facts = stages.cfg.facts
    doc["project"] = facts.to_dict() if facts is not None else None
    return doc


def write_reports(stages: Stages) -> StageResult:
    from xcompat import jsonio
    from xcompat.report import render, write_html
    from xcompat.report.folder import report_from_folder

    pipe = stages.pipe
    jsonio.write_json(pipe.path("settings.json"), settings_document(stages), schema="settings")
    loaded, report = report_from_folder(pipe.stage_dir, display_root=pipe.stage_dir)
    if stages.rerun is not None:
        from dataclasses import replace

        report = replace(report, rerun=stages.rerun)
    stages.report_object = report  # type: ignore[attr-defined]
    jsonio.atomic_write_text(pipe.path("report.md"), render(report, "markdown"))
    jsonio.atomic_write_text(pipe.path("report.json"), render(report, "json"))
    write_html(report, pipe.path("report.html"))
    return StageResult(
        name="report",
        status="passed",
        detail=f"{len(loaded.results)} result file(s); conclusion: {report.conclusion}",
        outputs=["report.md", "report.json", "report.html"],
    )
