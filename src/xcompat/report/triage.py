"""What broke and what to do: the report's problems, worst first, each with a "To fix" line.

``triage(report)`` reads only the report model. Order: crashed tests, failed tests,
other failed stages, the ABI verdict, fallback lanes, failed cell-less results (gate,
coverage), required cells without a result, skipped required cells; then what does not
gate (optional cells, a diff-coverage warning). Problems that share a cause are one
line: a test failing in twelve cells, or thirty cells whose runner never came.

Texts are ``Rich`` tuples of (style, text) segments, style "" (prose), "code" or "b"
(bold), so each renderer escapes and marks them up its own way.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from xcompat.report.display import group_abi, short_library
from xcompat.report.model import BUMP_ORDER, CellReport, Failure, Report
from xcompat.report.tails import failing_assertion, first_user_frame, frames, project_root

Rich = tuple[tuple[str, str], ...]
# "To fix" for each of ``xcompat run``'s own stages when its command failed: what the failure
# means and the real fix, not "run it again".
PIPELINE_STAGE_FIX: dict[str, str] = {
    "verify": ("the signed matrix did not verify against the trust list (the message says which check "
               "failed): review the change, then re-sign it with `xcompat matrix sign` using a key listed "
               "in allowed_signers at the trust ref, or restore the signed matrix"),
    "plan": "the matrix could not be planned for this machine: check its Pythons, platforms and backends "
            "against this runner (`xcompat matrix plan .xcompat/matrix.yml`)",
    "build": "the project's build failed: the message is the build's own error; reproduce it with "
             "`xcompat build PROJECT --backend native` and read logs/build.log",
    "baseline": "the last release could not be built or read: pass --baseline with a project folder, "
                "wheel, sdist or ABI snapshot, or fix abi.baseline in the matrix",
    "probe": "the device probe failed: see logs/probe.log for the device and driver it found",
    "report": "the report could not be written: see logs/report.log",
}
TEST_OUTCOMES_FAILED = ("failed", "error", "timeout", "leaked", "crashed")
MAX_CELLS_NAMED = 3


def rich(*parts: str | tuple[str, str]) -> Rich:
    return tuple(p if isinstance(p, tuple) else ("", p) for p in parts if p)


def code(text: str) -> tuple[str, str]:
    return ("code", text)


def bold(text: str) -> tuple[str, str]:
    return ("b", text)


def plain(text: Rich) -> str:
    return "".join(f"`{t}`" if style == "code" else t for style, t in text)


@dataclass(frozen=True, kw_only=True)
class Problem:
    status: str  # the symbol's status: crashed, failed, missing, fallback, skipped, warning
    title: Rich
    fix: Rich = ()
    cells: tuple[str, ...] = ()
    gating: bool = True  # False: optional cells, warnings; shown dimmer, never red
    section: str = "failures"  # where the details are: failures, abi, coverage, cells


def _cells_phrase(ids: Sequence[str]) -> tuple[tuple[str, str], ...]:
    ids = sorted(set(ids))
    if not ids:
        return ()
    if len(ids) == 1:
        return (("", " in "), code(ids[0]))
    named: list[tuple[str, str]] = [("", f" in {len(ids)} cells: ")]
    for i, cid in enumerate(ids[:MAX_CELLS_NAMED]):
        named += [("", ", ") if i else ("", ""), code(cid)]
    if len(ids) > MAX_CELLS_NAMED:
        named.append(("", f" and {len(ids) - MAX_CELLS_NAMED} more"))
    return tuple(p for p in named if p[1])


def _first_line(text: str, limit: int = 200) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def rerun_command(report: Report, name: str) -> tuple[str, ...] | tuple[tuple[str, str], ...]:
    """The words and command that rerun one test alone: the run's own command (in the project's
    folder, against the wheel it installed) when the report came from one, else ``xcompat test``
    with the cell's wheel installed."""
    quoted = shlex.quote(name)
    if report.rerun and "{test}" in report.rerun:
        return ("rerun it alone with ", code(report.rerun.replace("{test}", quoted, 1)))
    return ("with the cell's wheel installed, rerun it alone with ", code(f"xcompat test --isolate test {quoted}"))


def _not_run_phrase(report: Report, name: str, cells: Sequence[str]) -> str:
    """For a file that could not be collected: how many collected tests never ran because of it."""
    if "::" in name:
        return ""
    count = sum(c.tests_not_run for c in report.cells if c.id in cells) if cells else \
        sum(c.tests_not_run for c in report.cells)
    if not count:
        return ""
    return (f"; pytest stops at a file it cannot collect: {count} collected test{'s' if count != 1 else ''} "
            "did not run")


def _test_problem(outcome: str, name: str, group: Sequence[Failure], report: Report) -> Problem:
    first = group[0]
    cells = tuple(f.cell_id for f in group if f.cell_id)
    gating = any(f.required for f in group)
    title = rich(code(name), bold(f" {outcome}"), *_cells_phrase(cells))
    tail = first.log_tail
    if outcome == "crashed":
        signal = _first_line(first.message).removeprefix("killed by ")
        if signal and signal != "crashed":
            title = rich(code(name), bold(f" crashed ({signal})"), *_cells_phrase(cells))
        found = frames(tail)
        user = first_user_frame(tail)
        if user is not None:
            root = next((r for r in (project_root(fr, first.file) for fr in found) if r), "")
            where = user.where(root)
            index = found.index(user)
            callee = found[index - 1].func if index > 0 else ""
            fix = rich(
                "the crash is in ",
                code(where),
                *((" calling ", code(callee)) if callee else ()),
                "; ",
                *rerun_command(report, name),
            )
        else:
            fix = rich(*rerun_command(report, name), "; the trace is under Failures")
    elif outcome == "timeout":
        fix = rich(
            "it ran past the per-test timeout: the stack at the timeout is under Failures; fix the hang or raise ",
            code("tests.timeout"),
            " in the matrix; ",
            *rerun_command(report, name),
        )
    elif outcome == "leaked":
        fix = rich(
            "memory grew over repeated calls: ",
            _first_line(first.message) or "see the leak report under Failures",
        )
    else:
        assertion = failing_assertion(tail)
        message = _first_line(first.message)
        if assertion is not None and assertion.source:
            where = assertion.location or (
                f"{first.file}:{first.line}" if first.file and first.line else first.file or ""
            )
            fix = rich(
                "make ",
                code(assertion.source),
                " hold",
                *((" (", code(where), ")") if where else ()),
                *((": " + (assertion.error or message),) if (assertion.error or message) else ()),
            )
        elif message and message != outcome:
            where = f"{first.file}:{first.line}" if first.file and first.line else (first.file or "")
            fix = rich(message, *((" (", code(where), ")") if where else ()), _not_run_phrase(report, name, cells))
        else:
            fix = rich("see its log tail under Failures")
        fix = rich(*fix, "; ", *rerun_command(report, name))
    return Problem(
        status=outcome if outcome in ("crashed", "timeout", "leaked", "error") else "failed",
        title=title,
        fix=fix,
        cells=cells,
        gating=gating,
    )


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


def _abi_problem(report: Report) -> Problem | None:
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
    title_parts: list[str | tuple[str, str]] = [bold(f"ABI needs a {needed} bump")]
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
    fix: list[str | tuple[str, str]] = []
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


def _labels(cell: CellReport) -> str:
    return ", ".join(cell.runs_on)


def _missing_problem(cells: Sequence[CellReport], gating: bool) -> list[Problem]:
    by_runner: dict[str, list[CellReport]] = {}
    for c in cells:
        by_runner.setdefault(_labels(c) or c.device, []).append(c)
    out = []
    for key, group in sorted(by_runner.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        n = len(group)
        ids = [c.id for c in group]
        has_labels = bool(group[0].runs_on)
        what = f"{n} required cell{'s' if n != 1 else ''} ha{'ve' if n != 1 else 's'} no result"
        title = rich(
            bold(what),
            *((" (runner ", code(key), ")") if has_labels else (" (", key, ")")),
            *_cells_phrase(ids),
        )
        if has_labels:
            fix = rich(
                "bring a runner with the labels ",
                code(key),
                " online (a job waits up to 24 h for one) and check the job uploaded its results, or mark these cells ",
                code("required: false"),
                " in the signed matrix",
            )
        else:
            fix = rich(
                "check that the ",
                key,
                " job ran and uploaded its results, or mark these cells ",
                code("required: false"),
                " in the signed matrix",
            )
        out.append(
            Problem(status="missing", title=title, fix=fix, cells=tuple(ids), gating=gating, section="cells")
        )
    return out


def optional_missing_line(report: Report) -> Rich:
    """One grouped line for optional cells without a result: "31 optional cells have no result: 16 cuda (…), …"."""
    missing = [c for c in report.cells if not c.required and c.status == "missing"]
    if not missing:
        return ()
    by: dict[str, list[CellReport]] = {}
    for c in missing:
        by.setdefault(c.backend + (c.toolkit or ""), []).append(c)
    parts: list[str | tuple[str, str]] = [
        f"{len(missing)} optional cell{'s' if len(missing) != 1 else ''} ha{'ve' if len(missing) != 1 else 's'} no result (not gating): "
    ]
    for i, (backend, group) in enumerate(sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0]))):
        if i:
            parts.append("; ")
        runners = sorted({_labels(c) for c in group if c.runs_on})
        parts.append(f"{len(group)} {backend}")
        if runners:
            parts.append(" (runner ")
            for j, r in enumerate(runners[:3]):
                parts += [", " if j else "", code(r)]
            if len(runners) > 3:
                parts.append(f" and {len(runners) - 3} more")
            parts.append(")")
    return rich(*parts)


def triage(report: Report) -> list[Problem]:
    problems: list[Problem] = []
    failures = list(report.failures)
    # Tests, grouped by name and outcome over the cells they failed in.
    tests: dict[tuple[str, str], list[Failure]] = {}
    stages: dict[tuple[str, str, str], list[Failure]] = {}
    for f in failures:
        if f.kind == "test" and f.name != "test" and f.outcome in TEST_OUTCOMES_FAILED:
            tests.setdefault((f.outcome, f.name), []).append(f)
        elif f.kind == "cell" or (f.kind == "abi" and report.abi is not None):
            continue  # missing cells and the ABI verdict get their own lines
        elif f.outcome != "fallback":
            stages.setdefault(
                (f.kind, f.outcome, f.name if f.name != f.kind else _first_line(f.message, 160)), []
            ).append(f)
    order = {"crashed": 0, "failed": 1, "error": 1, "timeout": 2, "leaked": 3}
    for (outcome, name), group in sorted(
        tests.items(),
        key=lambda kv: (not any(f.required for f in kv[1]), order.get(kv[0][0], 1), -len(kv[1]), kv[0][1]),
    ):
        problems.append(_test_problem(outcome, name, group, report))
    for (kind, outcome, what), group in sorted(
        stages.items(), key=lambda kv: (not any(f.required for f in kv[1]), kv[0])
    ):
        cells = tuple(f.cell_id for f in group if f.cell_id)
        first = group[0]
        if kind == "pipeline" and first.name in PIPELINE_STAGE_FIX:
            message = re.sub(r"^exit \d+: ", "", _first_line(first.message, 400).removeprefix(f"{first.name}: "))
            title = rich(bold(f"{first.name} {outcome}"), *((": " + message,) if message else ()))
            # `...` in the table is code; the rest is prose.
            fix = rich(*((code(t) if i % 2 else t) for i, t in enumerate(PIPELINE_STAGE_FIX[first.name].split("`"))))
        elif kind == "coverage":
            title = rich(bold(f"coverage {outcome}"), *_cells_phrase(cells), *((": " + what,) if what else ()))
            fix = _coverage_fix(first.message, report)
        elif first.name != first.kind:
            title = rich(bold(f"{kind} "), code(first.name), bold(f" {outcome}"), *_cells_phrase(cells))
            fix = rich(_first_line(first.message) or "see its log tail under Failures")
        else:
            title = rich(bold(f"{kind} {outcome}"), *_cells_phrase(cells), *((": " + what,) if what else ()))
            fix = rich(
                f"see the {kind} log tail under Failures"
                if first.log_tail
                else f"run the {kind} stage of that cell again and read its log"
            )
        problems.append(
            Problem(
                status="crashed" if outcome == "crashed" else "failed",
                title=title,
                fix=fix,
                cells=cells,
                gating=any(f.required for f in group),
            )
        )
    abi = _abi_problem(report)
    if abi is not None:
        problems.append(abi)
    by_backend: dict[tuple[str, bool], list[CellReport]] = {}
    for cell in report.cells:
        if cell.status == "fallback":
            by_backend.setdefault((cell.backend + (cell.toolkit or ""), cell.required), []).append(cell)
    for (backend, required), lanes in sorted(by_backend.items(), key=lambda kv: (not kv[0][1], kv[0][0])):
        reason = _first_line(lanes[0].reason)
        title = rich(
            bold(f"the {backend} lane fell back"),
            *_cells_phrase([c.id for c in lanes]),
            *((": " + reason,) if reason else ()),
        )
        labels = _labels(lanes[0])
        fix = rich(
            "a fallback never passes a lane: make the device usable on ",
            *((code(labels),) if labels else ("its runner",)),
            " (driver, runtime and torch build must agree; ",
            code("xcompat probe"),
            " says which check failed)",
        )
        problems.append(
            Problem(
                status="fallback", title=title, fix=fix, cells=tuple(c.id for c in lanes), gating=required
            )
        )
    required_missing = [c for c in report.cells if c.required and c.status == "missing"]
    problems += _missing_problem(required_missing, True)
    skipped = [c for c in report.cells if c.required and c.status == "skipped"]
    if skipped:
        reason = _first_line(skipped[0].reason)
        title = rich(
            bold(f"{len(skipped)} required cell{'s' if len(skipped) != 1 else ''} skipped"),
            *_cells_phrase([c.id for c in skipped]),
            *((": " + reason,) if reason else ()),
        )
        problems.append(
            Problem(
                status="skipped",
                title=title,
                fix=rich("a skipped lane is never green: make its stages run"),
                cells=tuple(c.id for c in skipped),
                section="cells",
            )
        )
    problems.extend(_coverage_problems(report))
    return problems


COVERAGE_INSTALL = "pip install 'xcompat[coverage]'"
_NOT_MEASURED = re.compile(r"not measured: (.*?)(?:; coverage is required.*)?$")
_BELOW = re.compile(r"(overall|diff) coverage [\d.]+% < threshold [\d.]+%")


def _coverage_fix(message: str, report: Report) -> Rich:
    """What was missing, from the coverage result's own words: the tools, a measurement (and
    why not), or coverage of the lines a threshold counts."""
    text = _first_line(message, 2000)
    lift = ("; or remove the threshold from the signed matrix's ", code("coverage"),
            " settings, which makes coverage informational")
    if COVERAGE_INSTALL in text:
        return rich("install the coverage tools where xcompat runs: ", code(COVERAGE_INSTALL), *lift)
    found = _NOT_MEASURED.search(text)
    if found:
        return rich("make coverage measurable: ", found.group(1).rstrip(" ;"),
                    " (the coverage stage's logs say more)", *lift)
    below = {m.group(1) for m in _BELOW.finditer(text)}
    cov = report.coverage
    if "overall" in below and cov is not None:
        worst = sorted((f for f in cov.files if f.uncovered and f.total),
                       key=lambda f: (f.percent if f.percent is not None else 0, f.path))
        first = (", first ", code(worst[0].path)) if worst else ()
        return rich("test the files listed worst first under Coverage", *first,
                    ", or lower the overall threshold in the signed matrix")
    if "diff" in below:
        return rich("cover the changed lines listed under Coverage, or lower the diff threshold in the signed matrix")
    return rich(_first_line(message) or "see the coverage result's summary under Coverage")


def _coverage_problems(report: Report) -> Iterable[Problem]:
    cov = report.coverage
    if (
        cov is None
        or cov.diff_threshold is None
        or cov.diff_percent is None
        or cov.diff_percent >= cov.diff_threshold
    ):
        return []
    worst = sorted(
        (f for f in cov.diff_files if f.uncovered),
        key=lambda f: (f.percent if f.percent is not None else 0, f.path),
    )
    fix: list[str | tuple[str, str]] = ["cover the changed lines listed under Coverage"]
    if worst:
        first = worst[0]
        a, b = first.uncovered[0]
        fix = [
            "cover the changed lines listed under Coverage, first ",
            code(f"{first.path}:{a}" + (f"-{b}" if b != a else "")),
        ]
    gating = cov.status in ("failed", "crashed")
    title = rich(
        bold(f"diff coverage {cov.diff_percent:.1f}% is below the {cov.diff_threshold:.1f}% threshold")
    )
    return [
        Problem(
            status="failed" if gating else "warning",
            title=title,
            fix=rich(*fix),
            gating=gating,
            section="coverage",
        )
    ]


def library_names(paths: Iterable[str]) -> str:
    return ", ".join(dict.fromkeys(short_library(p) for p in paths))
