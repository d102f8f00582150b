"""Problems of cells as a whole: lanes that fell back, required cells without a result (grouped by
the runner they wait for) or skipped, and the one dim line for optional cells without a result."""

from __future__ import annotations

from collections.abc import Sequence

from xcompat.report.model import CellReport, Report
from xcompat.report.triage.problem import Part, Problem, Rich, bold, cells_phrase, code, first_line, rich


def _labels(cell: CellReport) -> str:
    return ", ".join(cell.runs_on)


def _missing_problem(cells: Sequence[CellReport], gating: bool) -> list[Problem]:
    by_runner: dict[str, list[CellReport]] = {}
    for c in cells:
        by_runner.setdefault(_labels(c) or c.device, []).append(c)
    out = []
    for key, group in sorted(by_runner.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        n = len(group)
        ids = [c.id for c in group]
        has_labels = bool(group[0].runs_on)
        what = f"{n} required cell{'s' if n != 1 else ''} ha{'ve' if n != 1 else 's'} no result"
        title = rich(
            bold(what),
            *((" (runner ", code(key), ")") if has_labels else (" (", key, ")")),
            *cells_phrase(ids),
        )
        if has_labels:
            fix = rich(
                "bring a runner with the labels ",
                code(key),
                " online (a job waits up to 24 h for one) and check the job uploaded its results, or mark these cells ",
                code("required: false"),
                " in the signed matrix",
            )
        else:
            fix = rich(
                "check that the ",
                key,
                " job ran and uploaded its results, or mark these cells ",
                code("required: false"),
                " in the signed matrix",
            )
        out.append(
            Problem(status="missing", title=title, fix=fix, cells=tuple(ids), gating=gating, section="cells")
        )
    return out


def optional_missing_line(report: Report) -> Rich:
    """One grouped line for optional cells without a result: "31 optional cells have no result: 16 cuda (…), …"."""
    missing = [c for c in report.cells if not c.required and c.status == "missing"]
    if not missing:
        return ()
    by: dict[str, list[CellReport]] = {}
    for c in missing:
        by.setdefault(c.backend + (c.toolkit or ""), []).append(c)
    parts: list[Part] = [
        f"{len(missing)} optional cell{'s' if len(missing) != 1 else ''} ha{'ve' if len(missing) != 1 else 's'} no result (not gating): "
    ]
    for i, (backend, group) in enumerate(sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0]))):
        if i:
            parts.append("; ")
        runners = sorted({_labels(c) for c in group if c.runs_on})
        parts.append(f"{len(group)} {backend}")
        if runners:
            parts.append(" (runner ")
            for j, r in enumerate(runners[:3]):
                parts += [", " if j else "", code(r)]
            if len(runners) > 3:
                parts.append(f" and {len(runners) - 3} more")
            parts.append(")")
    return rich(*parts)


def fallback_problems(report: Report) -> list[Problem]:
    """One line per backend whose lane fell back (required lanes first)."""
    by_backend: dict[tuple[str, bool], list[CellReport]] = {}
    for cell in report.cells:
        if cell.status == "fallback":
            by_backend.setdefault((cell.backend + (cell.toolkit or ""), cell.required), []).append(cell)
    problems = []
    for (backend, required), lanes in sorted(by_backend.items(), key=lambda kv: (not kv[0][1], kv[0][0])):
        reason = first_line(lanes[0].reason)
        title = rich(
            bold(f"the {backend} lane fell back"),
            *cells_phrase([c.id for c in lanes]),
            *((": " + reason,) if reason else ()),
        )
        labels = _labels(lanes[0])
        fix = rich(
            "a fallback never passes a lane: make the device usable on ",
            *((code(labels),) if labels else ("its runner",)),
            " (driver, runtime and torch build must agree; ",
            code("xcompat probe"),
            " says which check failed)",
        )
        problems.append(
            Problem(
                status="fallback", title=title, fix=fix, cells=tuple(c.id for c in lanes), gating=required
            )
        )
    return problems


def missing_problems(report: Report) -> list[Problem]:
    return _missing_problem([c for c in report.cells if c.required and c.status == "missing"], True)


def skipped_problems(report: Report) -> list[Problem]:
    skipped = [c for c in report.cells if c.required and c.status == "skipped"]
    if not skipped:
        return []
    reason = first_line(skipped[0].reason)
    title = rich(
        bold(f"{len(skipped)} required cell{'s' if len(skipped) != 1 else ''} skipped"),
        *cells_phrase([c.id for c in skipped]),
        *((": " + reason,) if reason else ()),
    )
    return [
        Problem(
            status="skipped",
            title=title,
            fix=rich("a skipped lane is never green: make its stages run"),
            cells=tuple(c.id for c in skipped),
            section="cells",
        )
    ]
