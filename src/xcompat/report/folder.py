"""One report from what a folder holds: a run's output, or downloaded CI artifacts.

Used by ``xcompat report DIR`` and by ``xcompat run``'s report stage, so both give the same
verdict: stage results (``xcompat.results.load_results`` skips and lists every JSON file
that is not one: the run's own ``report.json``, ``verify.json``, ``run.json``), the plan,
and a run's ``settings.json`` (resolved settings and what the project is, so a kernels
stage the settings do not require reads as skipped, not red).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from xcompat.report.model import Report
from xcompat.results.collect import LoadedResults, load_results
from xcompat.settings import ProjectFacts, Settings, settings_from_document


def report_from_folder(
    paths: Path | str | Sequence[Path | str],
    *,
    plan_path: Path | str | None = None,
    title: str = "xcompat report",
    artifact_url: str | None = None,
    notes: Iterable[str] = (),
    display_root: Path | None = None,
) -> tuple[LoadedResults, Report]:
    """``display_root``: files under it are named relative to it (a run names them inside its output folder)."""
    from xcompat.report.aggregate import build_report

    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    loaded = load_results(items, plan_path=plan_path, relative_to=display_root)
    settings: Settings | None = None
    project: ProjectFacts | None = None
    all_notes = list(notes)
    if loaded.settings is not None:
        source = loaded.settings_source or "settings.json"
        settings = settings_from_document(loaded.settings, source=source)
        project = ProjectFacts.from_dict(loaded.settings.get("project"))
        if settings.signed is False:
            all_notes.append("unsigned matrix: this run used a matrix without a signature (local only; "
                             "CI refuses it until it is signed)")
        if settings.overridden:
            all_notes.append("settings overridden on the command line: " + ", ".join(settings.overridden))
    all_notes += [f"not a stage result, ignored: {path}" for path in loaded.skipped_files]
    report = build_report(loaded.results, loaded.plan, title=title, artifact_url=artifact_url, notes=all_notes,
                          settings=settings, project=project)
    if settings is not None and settings.signed is False:
        from dataclasses import replace

        report = replace(report, warnings=(*report.warnings, "unsigned matrix (local run)"))
    return loaded, report
