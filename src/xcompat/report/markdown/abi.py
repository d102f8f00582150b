"""The ABI section of the Markdown report: the bump required, the changes grouped by kind and
folded, or why nothing was compared."""

from __future__ import annotations

from xcompat.report import display
from xcompat.report.budget import Section
from xcompat.report.markdown.blocks import TABLE_ROWS, code, inline, more_line
from xcompat.report.model import STATUS_SYMBOL, Report


# -- ABI ---------------------------------------------------------------------------------------
def _abi_groups_md(groups: list[display.AbiGroup], limit: int) -> tuple[str, int]:
    lines = []
    shown = 0
    for g in groups:
        # The finding kind stays searchable (docs/abi.md lists them by kind).
        lines.append(f"**{inline(g.title)}** ({g.bump}, {g.count}) {code(g.kind)}")
        for item in g.items:
            if shown >= limit:
                break
            libs = ", ".join(item.short_libraries)
            what = code(item.symbol) if item.symbol else ""
            detail = inline(item.detail)[:240]
            where = f"in {inline(libs)}" if libs and libs not in ("—", "wheel") else ""
            head = " ".join(b for b in (what, where) if b)
            lines.append("- " + (f"{head} — {detail}" if head and detail else head or detail))
            shown += 1
        lines.append("")
    return "\n".join(lines).strip(), shown


def abi_section(report: Report) -> Section:
    abi = report.abi
    if abi is None:
        return Section(key="abi", priority=3, renditions=("",))
    if not abi.compared:
        # Nothing was compared: the section says why and claims no bump and no "no changes".
        head = f"### ABI: {STATUS_SYMBOL.get(abi.status, '❔')} not compared"
        return Section(key="abi", priority=3,
                       renditions=(head + (f"\n\n{inline(abi.summary)}" if abi.summary else ""), head))
    groups = display.group_abi(abi.findings)
    by_bump: dict[str, int] = {}
    for f in abi.findings:
        by_bump[f.required_bump] = by_bump.get(f.required_bump, 0) + 1
    tally = ", ".join(f"{n} {b}" for b, n in by_bump.items())
    versions = (
        f" · {code(f'{abi.old_version} → {abi.new_version}')}"
        + (f" is a {abi.actual_bump} bump" if abi.actual_bump else "")
        if abi.old_version and abi.new_version
        else ""
    )
    head = f"### ABI: {STATUS_SYMBOL.get(abi.status, '❔')} {abi.required_bump} bump required{versions}"
    if not versions and abi.summary:
        head += f"\n\n{inline(abi.summary)}"  # the ABI stage's own line, said here only
    if not abi.findings:
        return Section(
            key="abi", priority=3, renditions=(head + "\n\nNo changes to the exported interface.",)
        )
    titles = " · ".join(f"{inline(g.title)} ({g.count})" for g in groups)
    summary = f"{len(abi.findings)} changes ({tally}) in {len(groups)} groups"
    full_body, shown = _abi_groups_md(groups, TABLE_ROWS)
    more = (
        "\n\n" + more_line(len(abi.findings) - shown, "changes", report)
        if sum(len(g.items) for g in groups) > shown
        else ""
    )
    full = f"{head}\n\n{titles}\n\n<details><summary>{summary}</summary>\n\n{full_body}{more}\n\n</details>"
    short_body, shown_short = _abi_groups_md(groups, 20)
    more_short = (
        "\n\n" + more_line(sum(len(g.items) for g in groups) - shown_short, "changes", report)
        if sum(len(g.items) for g in groups) > shown_short
        else ""
    )
    short = f"{head}\n\n{titles}\n\n<details><summary>{summary}</summary>\n\n{short_body}{more_short}\n\n</details>"
    return Section(key="abi", priority=3, renditions=(full, short, f"{head}\n\n{titles}", head))
