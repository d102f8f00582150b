"""What GitHub is sent, built from the report: check-run annotations and the job summary."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from xcompat.report.channels import Channel, Limits, load_limits
from xcompat.report.model import Report
from xcompat.report.render import render


def annotations_for(report: Report, limits: Limits | None = None, max_annotations: int | None = None) -> list[dict[str, Any]]:
    """Check-run annotations: failing tests with a location, ABI findings with a file, uncovered diff lines.

    At most ``max_annotations`` (default and ceiling: the per-check-run cap in channels.json;
    0 turns annotations off), most important first: failures, then ABI, then coverage.
    """
    limits = limits or load_limits()
    out: list[dict[str, Any]] = []

    def add(path: str | None, start: int | None, end: int | None, level: str, title: str, message: str, raw: str = "") -> None:
        if not path or path.startswith("/") or ".." in Path(path).parts:
            return  # annotations need a path inside the repository
        start = start if start and start > 0 else 1
        item: dict[str, Any] = {
            "path": path.removeprefix("./"),
            "start_line": start,
            "end_line": max(end or start, start),
            "annotation_level": level,
            "title": title[:255],
            "message": message[:4000] or title[:255],
        }
        if raw:
            item["raw_details"] = raw[-8000:]
        out.append(item)

    for f in report.failures:
        if f.file:
            where = f" [{f.cell_id}]" if f.cell_id else ""
            add(f.file, f.line, f.line, "failure", f"{f.outcome}: {f.name}{where}", f.message or f.outcome, f.log_tail)
    if report.abi is not None:
        for a in report.abi.findings:
            if a.file:
                level = "failure" if a.required_bump == "major" else "warning"
                add(a.file, a.line, a.line, level, f"ABI {a.kind}: {a.display_symbol}", a.message or f"requires a {a.required_bump} bump")
    if report.coverage is not None:
        for fc in report.coverage.diff_files:
            for start, end in fc.uncovered:
                add(fc.path, start, end, "warning", "Changed lines not covered", f"Lines {start}-{end} are not covered by any cell's tests.")
    cap = limits.annotations.per_check_run if max_annotations is None else min(max(max_annotations, 0), limits.annotations.per_check_run)
    return out[:cap]


def job_summary_budget(path: str | None, limits: Limits | None = None) -> int:
    """Bytes left in this step's summary file under GitHub's 1 MiB per-step limit."""
    limits = limits or load_limits()
    used = Path(path).stat().st_size if path and Path(path).is_file() else 0
    return max(0, limits.channel("job_summary").limit - used - 1)


def summary_markdown(report: Report, room: int, notes: Sequence[str] = ()) -> str:
    extra = "".join(f"\n> {n}\n" for n in notes)
    channel = Channel(name="job_summary", limit=max(room - len(extra.encode()) - 2, 0), unit="bytes", source="")
    return render(report, "markdown", channel) + extra
