"""Render a ``Report`` to one format, optionally within a channel's size limit."""

from __future__ import annotations

from pathlib import Path

from xcompat.errors import UsageError
from xcompat.jsonio import atomic_write_text, dump_json
from xcompat.neutralise import gitlab_note
from xcompat.report.budget import fit_sections
from xcompat.report.channels import Channel, load_limits
from xcompat.report.model import Report

FORMATS = ("markdown", "text", "json", "html")
# Hidden line that marks xcompat's own PR comment / MR note, so re-runs find and update it.
MARKER_PREFIX = "<!-- xcompat-report"


def marker(key: str = "default") -> str:
    safe = "".join(ch for ch in key if ch.isalnum() or ch in "-_.:/") or "default"
    return f"{MARKER_PREFIX} id={safe} -->"


def _resolve_budget(budget: int | str | Channel | None) -> Channel | None:
    if budget is None or isinstance(budget, Channel):
        return budget
    if isinstance(budget, str):
        return load_limits().channel(budget)
    if isinstance(budget, int) and budget > 0:
        return Channel(name="custom", limit=budget, unit="chars", source="caller")
    raise UsageError(f"invalid budget {budget!r}: expected a channel name or a positive size")


def render(
    report: Report,
    fmt: str = "markdown",
    budget: int | str | Channel | None = None,
    *,
    marker_key: str | None = None,
    include: tuple[str, ...] | None = None,
) -> str:
    """Render ``report`` as markdown, text, json or html.

    ``budget`` (markdown and text only) is a channel name from ``channels.json``
    (``pr_comment``, ``check_run_summary``, ``job_summary``, ``gitlab_note``...), a
    character count, or a ``Channel``: the result never exceeds it; whole sections
    are folded instead. ``include`` limits Markdown to some sections (``header``,
    ``grid``, ``failures``, ``abi``, ``coverage``, ``cells``, ``other``).
    """
    channel = _resolve_budget(budget)
    if fmt == "markdown":
        from xcompat.report.markdown import sections

        note = "_Report cut to fit; see the full report artifact._"
        mark = marker(marker_key) if marker_key is not None else ""
        if channel is None or channel.name != "gitlab_note":
            return fit_sections(sections(report, marker=mark, include=include), channel, overflow_note=note).text
        # A GitLab note's last pass puts a zero-width space before each line that starts with "/"
        # (a quick action): the 1% kept aside pays for those within the channel's limit.
        room = Channel(name=channel.name, limit=channel.limit - channel.limit // 100, unit=channel.unit,
                       source=channel.source)
        return gitlab_note(fit_sections(sections(report, marker=mark, include=include), room, overflow_note=note).text)
    if fmt == "text":
        from xcompat.report.text import text_sections

        return fit_sections(text_sections(report), channel, overflow_note="(cut to fit; see the full report)").text
    if channel is not None:
        raise UsageError(f"--format {fmt} cannot be size-limited; use markdown or text for a channel")
    if fmt == "json":
        return dump_json(report.to_dict())
    if fmt == "html":
        from xcompat.report.html import render_html

        return render_html(report)
    raise UsageError(f"unknown report format {fmt!r}", hint="choose one of " + ", ".join(FORMATS))


def write_html(report: Report, path: str | Path) -> Path:
    """Write a self-contained ``report.html`` (atomically)."""
    return atomic_write_text(path, render(report, "html"))


def write_json(report: Report, path: str | Path) -> Path:
    """Write ``report.json``, validated against ``schemas/report.schema.json``."""
    from xcompat.jsonio import write_json as _write

    return _write(path, report.to_dict(), schema="report")
