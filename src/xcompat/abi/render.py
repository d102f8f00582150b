"""Render an ABI diff result (the dict of ``AbiDiff.to_dict()``) as text or Markdown.

Both renderers work from the JSON document, so a stored result renders the same as a
fresh one. Findings are grouped by kind, worst bump first; long groups are cut (text) or
folded into ``<details>`` (Markdown, what a pull-request check shows).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from xcompat.abi.rules import BUMP_RANK

TEXT_LIMIT = 20
MD_OPEN_LIMIT = 5
MD_LIMIT = 200
_ICON = {"major": "🔴", "minor": "🟡", "patch": "🔵", "none": "⚪"}


def _groups(doc: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for f in doc["findings"]:
        groups[f["kind"]].append(f)
    return sorted(groups.items(), key=lambda kv: (-BUMP_RANK[kv[1][0]["required_bump"]], -len(kv[1]), kv[0]))


def _label(f: dict[str, Any]) -> str:
    where = f["library"] or ""
    sym = f.get("demangled") or f.get("symbol")
    head = f"{where}: {sym}" if sym else where
    detail = f["detail"]
    if sym and detail.startswith(str(f.get("symbol"))):
        detail = detail[len(str(f["symbol"])) :].lstrip(" :;")
    return f"{head} — {detail}" if detail else head


def _side(s: dict[str, Any]) -> str:
    name = s.get("name") or s.get("source")
    ver = s.get("version")
    return f"{name} {ver}" if ver else str(name)


def render_text(doc: dict[str, Any], *, limit: int = TEXT_LIMIT) -> str:
    lines = [f"ABI diff: {_side(doc['old'])} -> {_side(doc['new'])}", f"{doc['status'].upper()}: {doc['summary']}"]
    for kind, items in _groups(doc):
        bump = items[0]["required_bump"]
        lines.append(f"\n{kind} ({len(items)}, requires {bump}):")
        for f in items[:limit]:
            lines.append("  " + _label(f).replace("\n", "\n      "))  # abidiff reports keep their lines
        if len(items) > limit:
            lines.append(f"  ... and {len(items) - limit} more (use --format json for all)")
    if doc.get("filtered"):
        parts = ", ".join(f"{k} {v}" for k, v in sorted(doc["filtered"].items()))
        lines.append(f"\nfiltered as noise: {parts}")
    if doc.get("unchecked"):
        lines.append("\nnot checked:")
        lines.extend(f"  {u}" for u in doc["unchecked"])
    return "\n".join(lines) + "\n"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _md_item(f: dict[str, Any]) -> str:
    """One finding as a list item; a multi-line detail (an abidiff report) as an indented
    code block under it."""
    first, _, rest = _label(f).partition("\n")
    if not rest:
        return f"- {_md_escape(first)}"
    block = "\n".join(f"  {line}" for line in rest.replace("`", "'").splitlines())
    return f"- {_md_escape(first)}\n\n  ```\n{block}\n  ```"


def render_markdown(doc: dict[str, Any], *, limit: int = MD_LIMIT) -> str:
    status = "❌ gating ABI changes" if doc["status"] == "failed" else "✅ no gating ABI changes"
    out = [f"### ABI diff: {_md_escape(_side(doc['old']))} → {_md_escape(_side(doc['new']))}", ""]
    bump = doc["required_bump"]
    line = f"**{status}** — required bump: **{bump}**"
    if doc.get("actual_bump") is not None:
        line += f", actual bump: **{doc['actual_bump']}**"
    out += [line, ""]
    groups = _groups(doc)
    if groups:
        out += ["| | Finding | Count | Requires |", "|---|---|---:|---|"]
        for kind, items in groups:
            b = items[0]["required_bump"]
            out.append(f"| {_ICON[b]} | `{kind}` | {len(items)} | {b} |")
        out.append("")
        for kind, items in groups:
            b = items[0]["required_bump"]
            title = f"{_ICON[b]} <code>{kind}</code> ({len(items)}, requires {b})"
            body = [_md_item(f) for f in items[:limit]]
            if len(items) > limit:
                body.append(f"- … and {len(items) - limit} more (see the JSON result)")
            if len(items) <= MD_OPEN_LIMIT and BUMP_RANK[b] >= BUMP_RANK["minor"]:
                out += [f"**{title}**", "", *body, ""]
            else:
                out += ["<details>", f"<summary>{title}</summary>", "", *body, "", "</details>", ""]
    else:
        out += ["No differences in the binary or Python interface.", ""]
    if doc.get("filtered"):
        parts = ", ".join(f"{k}: {v}" for k, v in sorted(doc["filtered"].items()))
        out += [f"<sub>Filtered as noise: {parts}.</sub>", ""]
    if doc.get("unchecked"):
        out += ["<details>", f"<summary>Not checked ({len(doc['unchecked'])})</summary>", ""]
        out += [f"- {_md_escape(u)}" for u in doc["unchecked"]]
        out += ["", "</details>", ""]
    return "\n".join(out).rstrip("\n") + "\n"
