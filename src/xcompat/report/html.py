"""A self-contained ``report.html``: inline CSS, no scripts, no external assets.

Status is carried by the word and a symbol as well as the colour, so the grid reads the
same printed in black and white or through a screen reader.
"""

from __future__ import annotations

from html import escape

from xcompat.report.markdown import python_key
from xcompat.report.model import STATUS_SYMBOL, Report

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2em;color:#1f2328;max-width:1400px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #d0d7de}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #d0d7de;padding:4px 8px;vertical-align:top;text-align:left}
th{background:#f6f8fa}code,pre{font:12px ui-monospace,SFMono-Regular,Menlo,monospace}
pre{background:#f6f8fa;padding:8px;overflow:auto;max-height:30em;white-space:pre-wrap}
.s{display:block;padding:2px 4px;margin:1px 0;border-radius:3px}
.passed{background:#dafbe1}.failed{background:#ffebe9;font-weight:bold}.crashed{background:#ffd8d3;font-weight:bold}
.skipped{background:#f6f8fa;color:#57606a}.missing{background:#fff1c2;font-weight:bold;outline:2px dashed #9a6700}
.fallback{background:#fff8c5}.none{color:#8c959f}
.verdict{font-size:1.2em;padding:8px;border-radius:4px}.success{background:#dafbe1}.failure{background:#ffebe9}.neutral{background:#f6f8fa}
"""


def _status(status: str, extra: str = "") -> str:
    sym = STATUS_SYMBOL.get(status, "?")
    return f'<span class="s {escape(status)}">{sym} {escape(status)}{escape(extra)}</span>'


def _pct(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.1f}%"


def render_html(report: Report) -> str:
    e = escape
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(report.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{e(report.title)}</h1>",
        f'<p class="verdict {e(report.conclusion)}"><b>{e(report.conclusion.upper())}</b>: {e(report.headline)}</p>',
    ]
    if report.problems:
        out.append("<h2>Why this is not green</h2><ul>")
        out += [f"<li>{e(p)}</li>" for p in report.problems]
        out.append("</ul>")
    if report.cells:
        pythons = sorted({c.python for c in report.cells}, key=python_key)
        devices = sorted({c.device for c in report.cells})
        out.append("<h2>Device × Python</h2><table><tr><th>Python</th>")
        out += [f"<th>{e(d)}</th>" for d in devices]
        out.append("</tr>")
        for py in pythons:
            out.append(f"<tr><th>{e(py)}</th>")
            for d in devices:
                cells = [c for c in report.cells if c.python == py and c.device == d]
                if not cells:
                    out.append('<td class="none" title="not in the matrix">·</td>')
                    continue
                parts = []
                for c in cells:
                    label = (" " + c.framework_label) if c.framework_label else ""
                    label += "" if c.required else " (optional)"
                    tip = f' title="{e(c.id)}: {e(c.reason)}"'
                    parts.append(_status(c.status, label).replace("<span ", f"<span{tip} ", 1))
                out.append(f"<td>{''.join(parts)}</td>")
            out.append("</tr>")
        out.append("</table>")
        legend = " ".join(_status(s) for s in STATUS_SYMBOL)
        out.append(f"<p>Legend: {legend}</p>")
    if report.failures:
        out.append(f"<h2>Failures ({len(report.failures)})</h2>")
        for f in report.failures:
            loc = f" ({e(f.file)}{':' + str(f.line) if f.line else ''})" if f.file else ""
            where = f" in <code>{e(f.cell_id)}</code>" if f.cell_id else ""
            out.append(f"<details open><summary>{_status(f.outcome)} <code>{e(f.name)}</code>{where}{loc}</summary>")
            if f.message:
                out.append(f"<p>{e(f.message)}</p>")
            if f.log_tail:
                out.append(f"<pre>{e(f.log_tail)}</pre>")
            out.append("</details>")
    if report.abi is not None:
        abi = report.abi
        out.append(f"<h2>ABI: required bump {e(abi.required_bump)}</h2><p>{_status(abi.status)} {e(abi.summary)}</p>")
        if abi.findings:
            out.append("<table><tr><th>Bump</th><th>Kind</th><th>Library</th><th>Symbol</th><th>Detail</th></tr>")
            for finding in abi.findings:
                out.append(
                    f"<tr><td>{e(finding.required_bump)}</td><td>{e(finding.kind)}</td><td>{e(finding.library)}</td>"
                    f"<td><code>{e(finding.display_symbol)}</code></td><td>{e(finding.message)}</td></tr>"
                )
            out.append("</table>")
    if report.coverage is not None:
        cov = report.coverage
        out.append(f"<h2>Coverage: {_pct(cov.percent)}</h2>")
        if cov.languages:
            out.append("<p>" + ", ".join(f"{e(n)} {_pct(p)}" for n, p in cov.languages) + "</p>")
        if cov.diff_percent is not None:
            out.append(f"<p>Diff coverage: <b>{_pct(cov.diff_percent)}</b></p>")
        files = [("Changed lines", cov.diff_files), ("Files", cov.files)]
        for caption, items in files:
            if not items:
                continue
            out.append(f"<h3>{caption}</h3><table><tr><th>File</th><th>Coverage</th><th>Uncovered lines</th></tr>")
            for fc in items:
                ranges = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in fc.uncovered)
                out.append(f"<tr><td><code>{e(fc.path)}</code></td><td>{_pct(fc.percent)}</td><td>{e(ranges)}</td></tr>")
            out.append("</table>")
    if report.cells:
        out.append("<h2>All cells</h2><table><tr><th>Cell</th><th>Status</th><th>Stages</th><th>Reason</th></tr>")
        for c in report.cells:
            stages = ", ".join(f"{s.kind}: {s.status}" for s in c.stages) or "none"
            out.append(
                f"<tr><td><code>{e(c.id)}</code></td><td>{_status(c.status, '' if c.required else ' (optional)')}</td>"
                f"<td>{e(stages)}</td><td>{e(c.reason)}</td></tr>"
            )
        out.append("</table>")
    if report.other or report.warnings or report.notes:
        out.append("<h2>Other</h2><ul>")
        out += [f"<li>{e(r.kind)} [{e(r.cell_id or '-')}]: {_status(r.status)} {e(r.summary)}</li>" for r in report.other]
        out += [f"<li>warning: {e(w)}</li>" for w in report.warnings]
        out += [f"<li>{e(n)}</li>" for n in report.notes]
        out.append("</ul>")
    out.append("</body></html>\n")
    return "\n".join(out)
