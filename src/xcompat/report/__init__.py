"""One report from the results of every cell, rendered for people and machines.

Public API::

    from xcompat.report import build_report, render, write_html, load_results

    loaded = load_results(["artifacts/"], plan_path="plan.json")
    report = build_report(loaded.results, loaded.plan)
    print(render(report, "markdown", budget="pr_comment"))
    write_html(report, "report.html")
"""

from __future__ import annotations

from xcompat.report.aggregate import build_report
from xcompat.report.load import LoadedResults, load_plan, load_results
from xcompat.report.model import Report
from xcompat.report.render import FORMATS, marker, render, write_html, write_json

__all__ = [
    "FORMATS",
    "LoadedResults",
    "Report",
    "build_report",
    "load_plan",
    "load_results",
    "marker",
    "render",
    "write_html",
    "write_json",
]
