"""The Markdown summary: per language, per cell, diff coverage, then per file."""

from __future__ import annotations

from typing import Any

from xcompat.coverage.languages import LANGUAGE_LABELS
from xcompat.neutralise import MESSAGE_CHARS, markdown_text

# Per-file rows shown before the table is cut (the JSON report always has every file).
DEFAULT_MAX_FILE_ROWS = 200


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f} %"


def _ranges(ranges: list[list[int]], limit: int = 8) -> str:
    text = ", ".join(f"{a}" if a == b else f"{a}–{b}" for a, b in ranges[:limit])
    if len(ranges) > limit:
        text += f", … (+{len(ranges) - limit})"
    return text


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(doc: dict[str, Any], *, max_file_rows: int = DEFAULT_MAX_FILE_ROWS) -> str:
    totals = doc["totals"]
    icon = "✅" if doc["status"] == "passed" else "❌"
    out = [f"## Coverage {icon}", "", doc["summary"], ""]
    for check in doc["gate"]:
        out.append(f"- {'✅' if check['passed'] else '❌'} **{check['name']}**: {check['reason']}")
    if doc["gate"]:
        out.append("")
    out += ["| Language | Files | Lines | Covered | Coverage | Cells |", "|---|---:|---:|---:|---:|---|"]
    for lang, t in doc["languages"].items():
        out.append(
            f"| {LANGUAGE_LABELS.get(lang, lang)} | {t['files']} | {t['lines_valid']} | {t['lines_covered']} "
            f"| {_pct(t['percent'])} | {len(t['cells'])} |"
        )
    out.append(
        f"| **Overall** | {totals['files']} | {totals['lines_valid']} | {totals['lines_covered']} "
        f"| **{_pct(totals['percent'])}** | {len(doc['cells'])} |"
    )
    out.append("")
    out += ["### Cells", "", "| Cell | Files | Lines | Covered | Coverage |", "|---|---:|---:|---:|---:|"]
    for c in doc["cells"]:
        out.append(
            f"| `{_cell(c['cell_id'])}` | {c['files']} | {c['lines_valid']} | {c['lines_covered']} "
            f"| {_pct(c['percent'])} |"
        )
    out.append("")
    diff = doc.get("diff")
    if diff is not None:
        out += [f"### Diff coverage against `{_cell(diff['base_ref'])}`: {_pct(diff['percent'])}", ""]
        if not diff["files"]:
            out += ["No changed source files.", ""]
        else:
            out += [
                "| File | Changed | Executable | Covered | Coverage | Uncovered lines |",
                "|---|---:|---:|---:|---:|---|",
            ]
            for f in diff["files"]:
                if not f["measured"]:
                    out.append(f"| `{_cell(f['path'])}` | {f['changed_lines']} | – | – | not measured | |")
                    continue
                out.append(
                    f"| `{_cell(f['path'])}` | {f['changed_lines']} | {f['lines_valid']} | {f['lines_covered']} "
                    f"| {_pct(f['percent'])} | {_ranges(f['uncovered_ranges'])} |"
                )
            out.append("")
    files = doc["files"]
    out += [
        "<details><summary>Files</summary>",
        "",
        "| File | Language | Lines | Covered | Coverage | Cells | Missing |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for f in files[:max_file_rows]:
        out.append(
            f"| `{_cell(f['path'])}` | {LANGUAGE_LABELS.get(f['language'], f['language'])} | {f['lines_valid']} "
            f"| {f['lines_covered']} | {_pct(f['percent'])} | {len(f['cells'])} | {_ranges(f['uncovered_ranges'])} |"
        )
    if len(files) > max_file_rows:
        out.append(f"| … {len(files) - max_file_rows} more files in coverage.json | | | | | | |")
    out += ["", "</details>", ""]
    if doc["warnings"]:
        # They name tests and files, which a pull request controls: made inert for Markdown.
        out += ["### Warnings", ""]
        out += [f"- {markdown_text(w, MESSAGE_CHARS)}" for w in doc["warnings"]]
        out.append("")
    if doc["errors"]:
        out += ["### Unreadable coverage inputs", ""]
        for e in doc["errors"]:
            cell = f" (cell `{_cell(e['cell_id'])}`)" if e.get("cell_id") else ""
            out.append(f"- `{_cell(e['file'])}`{cell}: {_cell(e['message'])}")
        out.append("")
    return "\n".join(out)
