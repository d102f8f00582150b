"""The building blocks of the Markdown report: escaping, code spans and fences, tables, and the
lines that point to the full report where something was left out.

One neutralising layer for text from results (``xcompat.neutralise``); the short names are
the vocabulary of the section modules.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from xcompat.neutralise import html_code, markdown_code, markdown_text
from xcompat.report.model import STATUS_SYMBOL, Report
from xcompat.report.triage import Rich

TABLE_ROWS = 200  # rows of a table before the rest is folded into a count

inline = markdown_text
code = markdown_code
hcode = html_code


def fenced(text: str, lang: str = "text") -> str:
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text.rstrip()}\n{fence}"


def status_label(status: str) -> str:
    return f"{STATUS_SYMBOL.get(status, '❔')} {status}"


def rich(text: Rich) -> str:
    """Markdown for a triage text: prose escaped, code spans, bold; the spaces between parts kept."""
    out = []
    for style, part in text:
        lead = " " if part[:1].isspace() else ""
        trail = " " if part[-1:].isspace() else ""
        if style == "code":
            # A code span reads best in the raw file; text that could open HTML, mention
            # someone or close the span goes through escaped <code> instead.
            body = hcode(part) if any(ch in part for ch in "<>@`|&") else code(part)
        elif style == "b":
            body = f"**{inline(part)}**" if part.strip() else ""
        else:
            body = inline(part)
        out.append(f"{lead}{body}{trail}" if body else lead or trail)
    return "".join(out)


def md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def more_line(n: int, what: str, report: Report) -> str:
    link = (
        f" in the [full report]({report.artifact_url})"
        if report.artifact_url
        else " in the full report artifact"
    )
    return f"_… and {n} more {what}{link}._"


def folded_stub(title: str, detail: str, report: Report) -> str:
    link = (
        f"See the [full report]({report.artifact_url})."
        if report.artifact_url
        else "See the full report in this run's artifacts."
    )
    return f"<details><summary>{title}: {detail}</summary>\n\nFolded to fit this channel's size limit. {link}\n\n</details>"


def pct(p: float | None) -> str:
    return "—" if p is None else f"{p:.1f}%"
