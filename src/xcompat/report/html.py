"""A self-contained ``report.html``: inline CSS, no scripts, no external assets, no network.

It leads with what broke and what to do (the same ``triage`` as the Markdown), then the
grid, failures with their tails, ABI changes grouped by kind and library (full library
paths on hover), coverage, and every cell. Status is carried by a word or symbol as well
as a colour, so the page reads the same printed in black and white or through a screen
reader. The layout is checked in a real headless Chromium (``tests/browser``): nothing
overflows an 800-pixel-wide window, status chips stay on one line.
"""

from __future__ import annotations

from xcompat.neutralise import html_text as escape
from xcompat.report import display
from xcompat.report.contracts import html_lines as contract_html
from xcompat.report.display import pct
from xcompat.report.kernels_tested import kernels_html
from xcompat.report.markdown.failures import shown_failures
from xcompat.report.markdown.other import other_warnings
from xcompat.report.model import STATUS_SYMBOL, CellReport, Report
from xcompat.report.tails import user_frames_first
from xcompat.report.triage import Problem, Rich, optional_missing_line, triage

LEGEND = ("passed", "failed", "crashed", "error", "timeout", "leaked", "skipped", "missing", "fallback")
_CSS = """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;padding:16px;color:#1f2328;max-width:1100px}
h1{font-size:1.45em;margin:.2em 0}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #d0d7de;padding-bottom:.2em}
h3{font-size:1em;margin:1em 0 .3em}
table{border-collapse:collapse;margin:.5em 0;max-width:100%}
th,td{border:1px solid #d0d7de;padding:4px 8px;vertical-align:top;text-align:left;overflow-wrap:anywhere}
th{background:#f6f8fa;font-weight:600}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere}
pre{background:#f6f8fa;padding:8px;overflow:auto;max-height:32em;white-space:pre-wrap;border-radius:6px}
.chip{display:inline-block;white-space:nowrap;padding:0 6px;margin:1px 2px 1px 0;border-radius:10px;font-size:.92em;border:1px solid transparent}
.passed{background:#dafbe1;color:#116329}.failed{background:#ffebe9;color:#a40e26;font-weight:600}
.crashed{background:#ffd8d3;color:#82071e;font-weight:700}.error{background:#fff1e5;color:#953800;font-weight:600}
.timeout{background:#fbefff;color:#6639ba;font-weight:600}.leaked{background:#ddf4ff;color:#0550ae;font-weight:600}
.skipped{background:#f6f8fa;color:#57606a}.missing{background:#fff8c5;color:#7d4e00;border:1px dashed #9a6700}
.fallback{background:#fff8c5;color:#7d4e00;font-weight:600}.warning{background:#fff8c5;color:#7d4e00}
.verdict{padding:10px 14px;border-radius:6px;margin:0 0 .8em}.verdict p{margin:.2em 0}
.v-success{background:#dafbe1}.v-failure{background:#ffebe9}.v-neutral{background:#f6f8fa}
ol.problems{padding-left:1.6em;margin:.6em 0}ol.problems li{margin:.45em 0}
.fix{margin-top:.15em}.fix b{color:#1f2328}
.quiet,.optional{opacity:.6}.quiet{font-size:.92em}
table.grid td{min-width:6.5em}table.grid td.none{color:#8c959f;text-align:center}
table.grid th{overflow-wrap:normal}
td.cell{background:transparent;color:inherit;font-weight:normal;border:1px solid #d0d7de}
td.cell.failed,td.cell.crashed{background:#fff5f4}
small,.note{font-size:.85em;color:#57606a}
summary{cursor:pointer;padding:2px 0}
details{margin:.3em 0}
.abi tr.group th{background:#eaeef2}
abbr{text-decoration:underline dotted;white-space:nowrap}
.legend{font-size:.92em}
"""


def _chip(status: str, text: str | None = None, *, title: str = "") -> str:
    sym = STATUS_SYMBOL.get(status, "❔")
    tip = f' title="{escape(title)}"' if title else ""
    label = escape(status if text is None else text)
    return f'<span class="chip {escape(status)}"{tip}>{sym} {label}</span>'


def _rich(text: Rich) -> str:
    out = []
    for style, part in text:
        if style == "code":
            out.append(f"<code>{escape(part)}</code>")
        elif style == "b":
            out.append(f"<b>{escape(part)}</b>")
        else:
            out.append(escape(part))
    return "".join(out)


def _counts(report: Report) -> str:
    parts = []
    if report.cells:
        chips = []
        for status in ("passed", "failed", "crashed", "fallback", "skipped", "missing"):
            req = sum(1 for c in report.cells if c.status == status and c.required)
            opt = sum(1 for c in report.cells if c.status == status and not c.required)
            if req:
                chips.append(_chip(status, f"{req} {status}"))
            if opt:
                chips.append(f'<span class="optional">{_chip(status, f"{opt} optional {status}")}</span>')
        parts.append(f"{len(report.cells)} cell{'s' if len(report.cells) != 1 else ''}: " + " ".join(chips))
    parts += [escape(part) for part in display.outcome_parts(report)]
    return " — ".join(parts)


_VERDICT_SYMBOL = {"success": "✅", "neutral": "⚪"}


def _verdict(report: Report, gating: list[Problem]) -> str:
    symbol = _VERDICT_SYMBOL.get(report.conclusion, "❌")
    return f"{symbol} {display.verdict_text(report, len(gating))}"


def _lead(report: Report) -> list[str]:
    problems = triage(report)
    gating = [p for p in problems if p.gating]
    quiet = [p for p in problems if not p.gating]
    out = [
        f'<div class="verdict v-{escape(report.conclusion)}" id="verdict">',
        f"<h1>{escape(report.title)}: {escape(_verdict(report, gating))}</h1>",
        f'<p class="counts">{_counts(report)}</p></div>',
    ]
    if gating:
        out.append('<ol class="problems" id="problems">')
        for p in gating:
            fix = f'<div class="fix"><b>To fix:</b> {_rich(p.fix)}</div>' if p.fix else ""
            out.append(f'<li class="problem">{_chip(p.status)} {_rich(p.title)}{fix}</li>')
        out.append("</ol>")
    elif report.problems:
        out.append("<ul>" + "".join(f"<li>{escape(p)}</li>" for p in report.problems) + "</ul>")
    optional = optional_missing_line(report)
    quiet_lines = [_rich(optional)] if optional else []
    for p in quiet:
        prefix = "warning: " if p.status == "warning" else "optional: "
        quiet_lines.append(prefix + _rich(p.title) + (f". To fix: {_rich(p.fix)}" if p.fix else ""))
    if quiet_lines:
        out.append(
            '<div class="quiet" id="quiet">' + "".join(f"<p>{line}</p>" for line in quiet_lines) + "</div>"
        )
    return out


def _cell_html(cell: CellReport) -> str:
    tip = (
        f"{cell.id}" + (f": {cell.reason}" if cell.reason else "") + ("" if cell.required else " (optional)")
    )
    classes = f"cell {cell.status}" + ("" if cell.required else " optional")
    if cell.status == "missing":
        body = _chip("missing", "no result")
    else:
        parts = display.stage_parts(cell)
        if not parts:
            body = _chip(cell.status)
        else:
            body = " ".join(_chip(p.status, f"{p.kind}{(' ' + p.detail) if p.detail else ''}") for p in parts)
    note = display.tested_note(cell)
    if note:
        body += f"<br><small>{escape(note)}</small>"
    if not cell.required:
        body += " <small>optional</small>"
    return f'<td class="{escape(classes)}" title="{escape(tip)}">{body}</td>'


def _grid(report: Report) -> list[str]:
    grid = display.build_grid(report.cells)
    fw_column = any(row.frameworks for row in grid.rows)
    out = ["<h2>Matrix</h2>"]
    if grid.common:
        out.append(f'<p class="note">Every cell: {escape(display.framework_text(grid.common))}</p>')
    out.append(
        '<table class="grid" id="grid"><tr><th>Device</th>' + ("<th>Frameworks</th>" if fw_column else "")
    )
    out += [f"<th>Python {escape(py)}</th>" for py in grid.pythons]
    out.append("</tr>")
    for row in grid.rows:
        cells = [f"<th>{escape(row.device)}</th>"] + (
            [f"<th>{escape(row.frameworks) or '—'}</th>"] if fw_column else []
        )
        for py in grid.pythons:
            cell = row.cells.get(py)
            cells.append(_cell_html(cell) if cell else '<td class="none" title="not in the matrix">·</td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    if grid.collisions:
        out.append(
            f'<p class="note">{grid.collisions} cell(s) share a slot with another; All cells lists every one.</p>'
        )
    legend = " ".join(_chip(s) for s in LEGEND)
    out.append(
        f'<p class="legend" id="legend">Legend: {legend} <span class="optional">{_chip("passed", "optional (dimmed)")}</span> · not in the matrix</p>'
    )
    return out


def _failures(report: Report) -> list[str]:
    failures = shown_failures(report)
    if not failures:
        return []
    out = [f'<h2 id="failures">Failures ({len(failures)})</h2>']
    for i, f in enumerate(failures):
        loc = f" ({escape(f.file)}{':' + str(f.line) if f.line else ''})" if f.file else ""
        where = f" in <code>{escape(f.cell_id)}</code>" if f.cell_id else ""
        opt = " <small>optional cell</small>" if not f.required else ""
        is_open = " open" if i < 20 else ""
        out.append(
            f'<details class="failure"{is_open}><summary>{_chip(f.outcome)} <code>{escape(f.name)}</code>{where}{loc}{opt}</summary>'
        )
        if f.message:
            out.append(f"<p>{escape(f.message)}</p>")
        if f.log_tail:
            out.append(f"<pre>{escape(user_frames_first(f.log_tail))}</pre>")
        out.append("</details>")
    return out


def _abi(report: Report) -> list[str]:
    abi = report.abi
    if abi is None:
        return []
    if not abi.compared:
        # Nothing was compared: say why, claim no bump and no "no changes".
        out = [f'<h2 id="abi">ABI: {_chip(abi.status)} not compared</h2>']
        if abi.summary:
            out.append(f"<p>{escape(abi.summary)}</p>")
        return out
    versions = ""
    if abi.old_version and abi.new_version:
        versions = f" · <code>{escape(abi.old_version)} → {escape(abi.new_version)}</code>" + (
            f" is a {escape(abi.actual_bump)} bump" if abi.actual_bump else ""
        )
    out = [f'<h2 id="abi">ABI: {_chip(abi.status)} {escape(abi.required_bump)} bump required{versions}</h2>']
    if not versions and abi.summary:
        out.append(f"<p>{escape(abi.summary)}</p>")
    if not abi.findings:
        out.append("<p>No changes to the exported interface.</p>")
        return out
    groups = display.group_abi(abi.findings)
    out.append('<table class="abi"><tr><th>Change</th><th>Library</th><th>Detail</th></tr>')
    for g in groups:
        out.append(
            f'<tbody><tr class="group"><th colspan="3">{escape(g.title)} <small>({escape(g.bump)}, {g.count}) '
            f"<code>{escape(g.kind)}</code></small></th></tr>"
        )
        for item in g.items:
            libs = ", ".join(
                f'<abbr title="{escape(full)}">{escape(display.short_library(full))}</abbr>'
                for full in item.libraries
            )
            symbol = f"<code>{escape(item.symbol)}</code>" if item.symbol else "—"
            out.append(
                f"<tr><td>{symbol}</td><td>{libs or '—'}</td><td>{escape(item.detail) or '—'}</td></tr>"
            )
        out.append("</tbody>")
    out.append("</table>")
    return out


def _coverage(report: Report) -> list[str]:
    cov = report.coverage
    if cov is None:
        return []
    out = [f'<h2 id="coverage">Coverage: {pct(cov.percent)}</h2>']
    facts = []
    if cov.languages:
        facts.append(", ".join(f"{escape(display.language_name(n))} {pct(p)}" for n, p in cov.languages))
    if cov.diff_percent is not None:
        if cov.diff_threshold is not None:
            ok = cov.diff_percent >= cov.diff_threshold
            facts.append(
                f"diff coverage <b>{pct(cov.diff_percent)}</b> {_chip('passed' if ok else 'failed', 'meets' if ok else 'below')} threshold {pct(cov.diff_threshold)}"
            )
        else:
            facts.append(f"diff coverage <b>{pct(cov.diff_percent)}</b> (no threshold)")
    elif cov.diff_threshold is not None:
        facts.append(f"diff coverage not measured (threshold {pct(cov.diff_threshold)})")
    if facts:
        out.append("<p>" + "; ".join(facts) + "</p>")
    changed = sorted(
        (f for f in cov.diff_files if f.uncovered),
        key=lambda f: (f.percent if f.percent is not None else 0.0, f.path),
    )
    for caption, items in (
        ("Uncovered changed lines, worst first", changed),
        ("Files, worst first", display.worst_files(cov.files)),
    ):
        if not items:
            continue
        out.append(
            f"<h3>{caption}</h3><table><tr><th>File</th><th>Coverage</th><th>Uncovered lines</th></tr>"
        )
        for fc in items:
            out.append(
                f"<tr><td><code>{escape(fc.path)}</code></td><td>{pct(fc.percent)}</td><td>{escape(display.ranges_text(fc, 40)) or '—'}</td></tr>"
            )
        out.append("</table>")
    return out


def _all_cells(report: Report) -> list[str]:
    if not report.cells:
        return []
    out = [
        f'<h2 id="cells">All cells</h2><details><summary>{len(report.cells)} cells with every stage</summary>'
    ]
    out.append("<table><tr><th>Cell</th><th>Status</th><th>Stages</th><th>Note</th></tr>")
    for c in report.cells:
        stages = " ".join(_chip(s.status, s.kind, title=s.summary) for s in c.stages) or "—"
        note = "; ".join(
            x
            for x in (
                c.reason if c.status in ("missing", "skipped", "fallback") else "",
                display.tested_note(c),
                ", ".join(c.runs_on) and f"runner: {', '.join(c.runs_on)}",
            )
            if x
        )
        row_class = "" if c.required else ' class="optional"'
        out.append(
            f"<tr{row_class}><td><code>{escape(c.id)}</code></td><td>{_chip(c.status, c.status if c.required else c.status + ' (optional)')}</td>"
            f"<td>{stages}</td><td>{escape(note) or '—'}</td></tr>"
        )
    out.append("</table></details>")
    if report.not_run_here:
        out.append(f"<h3>Not run here ({len(report.not_run_here)})</h3><p class=\"note\">This machine cannot run "
                   "these cells of the matrix; CI runs each on its own runner.</p>")
        out.append("<table><tr><th>Cell</th><th>Required</th><th>Why</th></tr>")
        for elsewhere in report.not_run_here:
            out.append(f"<tr><td><code>{escape(elsewhere.id)}</code></td><td>{'yes' if elsewhere.required else 'no'}</td>"
                       f"<td>{escape(elsewhere.why)}</td></tr>")
        out.append("</table>")
    return out


def render_html(report: Report) -> str:
    e = escape
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        f"<title>{e(report.title)}</title><style>{_CSS}</style></head><body>",
    ]
    out += _lead(report)
    if report.cells:
        out += _grid(report)
        out += kernels_html(report)
    out += _failures(report)
    out += _abi(report)
    out += _coverage(report)
    out += contract_html(report.contracts)
    out += _all_cells(report)
    if report.other or other_warnings(report) or report.notes:
        out.append("<h2>Other</h2><ul>")
        out += [
            f"<li>{e(r.kind)} [{e(r.cell_id or '-')}]: {_chip(r.status)} {e(r.summary)}</li>"
            for r in report.other
        ]
        out += [f"<li>warning: {e(w)}</li>" for w in other_warnings(report)]
        out += [f"<li>{e(n)}</li>" for n in report.notes]
        out.append("</ul>")
    out.append("</body></html>\n")
    return "\n".join(out)
