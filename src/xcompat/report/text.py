"""Plain-text rendering for terminals and CI logs: ASCII status words, no markup."""

from __future__ import annotations

from xcompat.report.budget import Section
from xcompat.report.markdown import python_key
from xcompat.report.model import STATUS_ASCII, Report


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    line = lambda cols: "  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip()
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def _one_line(text: str) -> str:
    return " ".join(text.split())


def text_sections(report: Report) -> list[Section]:
    out: list[Section] = []
    head = [f"{report.title}: {report.conclusion.upper()}: {report.headline}"]
    for problem in report.problems:
        head.append(f"  problem: {_one_line(problem)}")
    if report.artifact_url:
        head.append(f"  full report: {report.artifact_url}")
    out.append(Section(key="header", priority=0, renditions=("\n".join(head),)))
    if report.cells:
        pythons = sorted({c.python for c in report.cells}, key=python_key)
        devices = sorted({c.device for c in report.cells})
        index: dict[tuple[str, str], list[str]] = {}
        for c in report.cells:
            label = STATUS_ASCII[c.status] + (f"({c.framework_label})" if c.framework_label else "")
            index.setdefault((c.python, c.device), []).append(label + ("" if c.required else "?"))
        rows = [[py] + [" ".join(index.get((py, d), ["."])) for d in devices] for py in pythons]
        grid = "Matrix (? = optional cell, . = not in the matrix)\n" + _table(["python"] + devices, rows)
        out.append(Section(key="grid", priority=1, renditions=(grid, "")))
        cell_rows = [[c.id, STATUS_ASCII[c.status], _one_line(c.reason)[:120]] for c in report.cells]
        out.append(Section(key="cells", priority=5, renditions=("Cells\n" + _table(["cell", "status", "reason"], cell_rows), "")))
    if report.failures:
        lines = [f"Failures ({len(report.failures)})"]
        for f in report.failures:
            where = f" [{f.cell_id}]" if f.cell_id else ""
            loc = f" at {f.file}{':' + str(f.line) if f.line else ''}" if f.file else ""
            lines.append(f"- {f.outcome.upper()} {_one_line(f.name)}{where}{loc}")
            if f.message:
                lines.append(f"    {_one_line(f.message)}")
            for tail_line in f.log_tail.splitlines():
                lines.append(f"    | {tail_line}")
        out.append(Section(key="failures", priority=2, renditions=("\n".join(lines), "")))
    if report.abi is not None:
        abi = report.abi
        lines = [f"ABI: required bump {abi.required_bump} ({abi.status}) {_one_line(abi.summary)}".rstrip()]
        for finding in abi.findings:
            lines.append(
                f"- {finding.required_bump:5} {finding.kind} {finding.library} {_one_line(finding.display_symbol)}"
            )
        out.append(Section(key="abi", priority=3, renditions=("\n".join(lines), "")))
    if report.coverage is not None:
        cov = report.coverage
        pct = "n/a" if cov.percent is None else f"{cov.percent:.1f}%"
        lines = [f"Coverage: {pct}"]
        for name, p in cov.languages:
            lines.append(f"  {name}: {p:.1f}%")
        if cov.diff_percent is not None:
            lines.append(f"  diff coverage: {cov.diff_percent:.1f}%")
        for changed in cov.diff_files:
            if changed.uncovered:
                ranges = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in changed.uncovered)
                lines.append(f"  uncovered changed lines in {changed.path}: {ranges}")
        out.append(Section(key="coverage", priority=4, renditions=("\n".join(lines), "")))
    extra = [f"warning: {_one_line(w)}" for w in report.warnings]
    extra += [f"{r.kind} [{r.cell_id or '-'}]: {r.status}: {_one_line(r.summary)}" for r in report.other]
    extra += [f"note: {_one_line(n)}" for n in report.notes]
    if extra:
        out.append(Section(key="other", priority=6, renditions=("\n".join(extra), "")))
    return out
