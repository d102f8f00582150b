"""The ABI verdict as a problem: the bump a release needs, and the changes to undo instead."""

from __future__ import annotations

from xcompat.report.display import group_abi
from xcompat.report.model import BUMP_ORDER, Report
from xcompat.report.triage.problem import Part, Problem, bold, code, rich


def _next_version(old: str | None, bump: str) -> str | None:
    from xcompat.abi.semver import VersionError, next_version

    if not old:
        return None
    try:
        return next_version(old, bump)  # type: ignore[arg-type]
    except VersionError:
        return None


def _abi_not_compared(report: Report) -> Problem | None:
    """No ABI diff was made: red only when the settings require one (its status says so)."""
    abi = report.abi
    if abi is None or abi.status not in ("failed", "crashed", "fallback"):
        return None
    why = abi.summary.removeprefix("not run: ") or "no ABI diff was made"
    return Problem(
        status="failed",
        title=rich(bold("ABI not compared"), ": " + why),
        fix=rich("give the run a baseline it can build or read (", code("--baseline"),
                 " with the last release's project folder, sdist, wheel or ABI snapshot), fix the baseline's build "
                 "(", code("logs/baseline.log"), "), or set ", code("abi.baseline-required: false"),
                 " in the matrix until there is a release to compare with"),
        section="abi",
    )


def abi_problem(report: Report) -> Problem | None:
    abi = report.abi
    if abi is None or abi.status not in ("failed", "crashed", "fallback"):
        return None
    if not abi.compared:
        return _abi_not_compared(report)
    needed = abi.required_bump
    actual = abi.actual_bump
    floor = BUMP_ORDER.get(actual, -1) if actual else BUMP_ORDER.get(needed, 0) - 1
    gating = [f for f in abi.findings if BUMP_ORDER[f.required_bump] > floor]
    groups = group_abi(gating)
    count = len(gating)
    title_parts: list[Part] = [bold(f"ABI needs a {needed} bump")]
    if count:
        title_parts.append(f": {count} change{'s' if count != 1 else ''} ")
        title_parts.append("exceed" if count != 1 else "exceeds")
        title_parts.append(
            f" the {actual} bump this version makes"
            if actual and actual != "none"
            else " what the version allows"
        )
    if abi.old_version and abi.new_version:
        title_parts += [" (", code(f"{abi.old_version} → {abi.new_version}"), ")"]
    fix: list[Part] = []
    target = _next_version(abi.old_version, needed)
    if target:
        fix.append(f"release as {target}")
    elif needed != "none":
        fix.append(f"make this a {needed} release")
    else:  # failed without a bump to suggest (a policy's gate list): the changes themselves are the fix
        fix.append("undo the gating changes")
    restores: list[tuple[str, str]] = []
    undo: list[str] = []
    for g in groups:
        if g.restorable:
            for item in g.items:
                libs = ", ".join(item.short_libraries)
                label = item.symbol or item.detail
                restores.append(code(label))
                restores.append(("", f" ({libs})" if libs and libs != "—" else ""))
                restores.append(("", ", "))
        else:
            undo.append(g.title)
    if restores:
        fix.append(", or restore ")
        fix += [p for p in restores[:-1] if p[1]]
        if undo:
            fix.append(" and undo: " + "; ".join(undo))
    elif undo:
        fix.append(", or undo: " + "; ".join(undo))
    return Problem(
        status="failed",
        title=rich(*title_parts),
        fix=rich(*fix),
        cells=tuple(sorted({f.cell_id for f in gating if f.cell_id})),
        section="abi",
    )
