"""The contract stages in the report: stubs and runtime libraries per cell, the python floor once.

Each result becomes a ``ContractEntry`` with its findings and, for the runtime libraries, what
changed against the baseline's import; whether it counted (its ``contracts.*`` key is
``gate``) is the verdict's (``xcompat.results.contracts``). The text and HTML renderings are
here; the Markdown one is ``xcompat.report.markdown.contracts``. Text from results is shown
cut to one line and bounded in number, and escaped by each renderer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from xcompat.neutralise import html_text
from xcompat.report.budget import Section
from xcompat.report.model import ContractEntry, Report
from xcompat.results.contracts import (
    CONTRACTS,
    LIBRARIES,
    cell_differences,
    contract_changes,
    contract_findings,
    handed_to_abi,
    mode,
)
from xcompat.results.verdict import StageJudgement, Verdict
from xcompat.settings import Settings

SHOWN = 30  # findings (and changes) shown per result; the rest are counted
MESSAGE = 300  # characters of one message


def _line(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= MESSAGE else one[:MESSAGE - 1] + "…"


def _entry(judged: StageJudgement, cell_id: str | None, settings: Settings | None) -> ContractEntry:
    result = judged.result
    contract = CONTRACTS[result.kind]
    return ContractEntry(
        kind=result.kind, label=contract.label, cell_id=cell_id, status=result.status,
        mode=mode(result.kind, settings), counted=judged.counted, excused=judged.reason,
        summary=_line(result.summary),
        findings=tuple((_line(code), _line(message)) for code, message in contract_findings(result)),
        changes=(*(_line(c) for c in contract_changes(result)),
                 *(_line(f"{name}: reported by the ABI stage (changed between the releases)")
                   for name in handed_to_abi(result))))


def contract_entries(verdict: Verdict, settings: Settings | None) -> tuple[ContractEntry, ...]:
    """Every contract result of the verdict: each cell's, then those of no cell (the python floor)."""
    from xcompat.results.stages import excused

    entries = [_entry(judged, cell.id, settings) for cell in verdict.cells for judged in cell.stages
               if judged.result.kind in CONTRACTS]
    entries = _between_cells(verdict, entries)
    for result in verdict.global_results:
        if result.kind in CONTRACTS:
            why = excused(result, settings)
            entries.append(_entry(StageJudgement(result=result, counted=why is None, reason=why or ""), None,
                                  settings))
    return tuple(entries)


def _between_cells(verdict: Verdict, entries: list[ContractEntry]) -> list[ContractEntry]:
    """Each cell's runtime libraries against the first cell's: a line in its ``changes`` when the
    libraries the wheels bring differ (a second OpenMP in one cell, another build of a library)."""
    libraries = [j.result for cell in verdict.cells for j in cell.stages
                 if j.result.kind == LIBRARIES.kind and j.result.status in ("passed", "failed")
                 and isinstance(j.result.data.get("libraries"), list)]
    if len(libraries) < 2:
        return entries
    found = {r.cell_id: cell_differences(libraries[0], r) for r in libraries[1:]}
    return [replace(e, changes=(*e.changes, _line(str(found[e.cell_id]))))
            if e.kind == LIBRARIES.kind and found.get(e.cell_id) else e for e in entries]


def where(entry: ContractEntry) -> str:
    return entry.cell_id or "the project"


def verdict_words(entry: ContractEntry) -> str:
    """``gate``/``report`` and whether the result counts: what a reader needs beside its status."""
    if entry.status in ("passed", "skipped"):  # a skipped contract stage never counts: it says why
        return entry.mode
    if entry.counted:
        return f"{entry.mode}: counted"
    if entry.mode == "report":
        return "report: shown, never red"
    return f"gate: not counted ({entry.excused.partition(', and ')[2] or entry.excused})"


def detail_lines(entry: ContractEntry) -> list[str]:
    """The entry's findings and changes, one line each, the rest counted."""
    lines = [f"[{code}] {message}" for code, message in entry.findings[:SHOWN]]
    if len(entry.findings) > SHOWN:
        lines.append(f"… and {len(entry.findings) - SHOWN} more findings")
    lines += list(entry.changes[:SHOWN])
    if len(entry.changes) > SHOWN:
        lines.append(f"… and {len(entry.changes) - SHOWN} more changes")
    return lines


def text_sections(report: Report) -> list[Section]:
    if not report.contracts:
        return []
    lines = ["Contracts:"]
    for entry in report.contracts:
        lines.append(f"  {entry.label} [{where(entry)}]: {entry.status} ({verdict_words(entry)}): {entry.summary}")
        lines += [f"    {line}" for line in detail_lines(entry)]
    return [Section(key="contracts", priority=5, renditions=("\n".join(lines), ""))]


def html_lines(contracts: Iterable[ContractEntry]) -> list[str]:
    e = html_text
    entries = list(contracts)
    if not entries:
        return []
    out = ["<h2>Contracts</h2><ul>"]
    for entry in entries:
        details = "".join(f"<li><code>{e(line)}</code></li>" for line in detail_lines(entry))
        out.append(f"<li>{e(entry.label)} [{e(where(entry))}]: {e(entry.status)} ({e(verdict_words(entry))}): "
                   f"{e(entry.summary)}" + (f"<ul>{details}</ul>" if details else "") + "</li>")
    out.append("</ul>")
    return out
