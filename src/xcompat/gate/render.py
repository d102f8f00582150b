"""Render a gate decision as terminal lines and as Markdown for the job summary."""

from __future__ import annotations

from collections.abc import Iterator

from xcompat.gate import GateDecision


def render_text(decision: GateDecision) -> Iterator[str]:
    if decision.tag:
        yield f"release tag: {decision.tag}"
    step = decision.step
    if step is not None and step.previous_tag:
        yield f"previous release: {step.previous_tag} ({step.how_found}); bump: {step.bump or 'not increasing'}"
    if not decision.checks:
        yield "no checks were requested (give --plan/--results, --abi, --coverage or --matrix)"
    for check in decision.checks:
        mark = "ok  " if check.passed else "FAIL"
        yield f"{mark} {check.name}: {check.reason}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(decision: GateDecision) -> str:
    icon = ":white_check_mark:" if decision.allowed else ":no_entry:"
    lines = [f"### {icon} xcompat release gate", "", decision.summary, ""]
    step = decision.step
    if step is not None:
        previous = step.previous_tag or "none (first release)"
        lines += [f"Tag `{step.tag}`, previous release `{previous}`, bump **{step.bump or 'n/a'}**.", ""]
    if decision.checks:
        lines += ["| Check | Result | Reason |", "|---|---|---|"]
        # Failures first: a reviewer reads the top of the table.
        for check in sorted(decision.checks, key=lambda c: c.passed):
            result = "passed" if check.passed else "**failed**"
            lines.append(f"| `{_cell(check.name)}` | {result} | {_cell(check.reason)} |")
        lines.append("")
    for warning in decision.warnings:
        lines.append(f"> warning: {_cell(warning)}")
    return "\n".join(lines) + "\n"
