"""The ``operators`` section of a kernels result: the project's own torch operators, per device.

The kernels stage of ``xcompat run`` checks the operators the built wheel registers with
``xcompat kernels operators`` once per device of the cell (the CPU, and the cell's
accelerator) and records the runs here, beside the runner's conformance kernels. Which
findings turn the kernels result red is the matrix's ``tests.operators``:

* ``gate`` (the default): a failed opcheck, device result (parity with the float64 reference
  or the CPU), NaN from finite input or mixed-device refusal; a checking process that crashed
  or hung; a samples file that cannot be used; and, when the project's build failed, the
  operators not being checked at all. A determinism finding is reported, never gating.
* ``report``: every finding is reported, none gates.

An operator without declared samples (and whose schema allows no generated inputs) is
counted "not exercised", never passed. ``build_section`` makes the section,
``read_section`` reads it back for the verdict and the report (every field type checked).

``xcompat run`` and CI (``xcompat kernels operators --merge-into``) check and record the
operators the same way, with the pieces here: the devices of a cell (``operator_devices``),
one device's command (``device_argv``) and what it gave (``device_run``), the section, and the
kernels result with it (``merge``).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from xcompat import jsonio
from xcompat.errors import InputError
from xcompat.results.fields import field_int, field_list, field_num, field_obj, field_str, wrong_type
from xcompat.results.stage_result import StageResult
from xcompat.results.status import severity

SETTINGS = ("gate", "report")
# What `gate` gates; a check not listed (determinism) is reported only.
GATING = frozenset({"opcheck", "result", "nan_from_finite", "mixed_device", "crashed", "samples", "not_run"})
CHECK_WORDS = {"opcheck": "opcheck", "result": "result", "determinism": "determinism",
               "nan_from_finite": "NaN from finite input", "mixed_device": "mixed devices",
               "crashed": "crashed", "samples": "samples file", "not_run": "not checked"}
SECTION_STATUSES = ("passed", "failed", "reported", "not_run", "none")
MAX_FINDINGS = 50
_NAMED = 3  # findings a summary names
SAMPLES = Path(".xcompat") / "operators.py"
# The checking child stops itself after 900 s (xcompat.operators.runner); this bounds the command.
OPERATORS_TIMEOUT_S = 960.0
# The torch device that checks operators on a cell's accelerator (ROCm's torch names its GPUs cuda).
TORCH_DEVICE = {"cuda": "cuda", "rocm": "cuda", "mps": "mps"}
# `xcompat kernels operators` exit codes: a result (passed or failed), a usage or input error
# (the samples file), the device cannot run here.
_RESULT_EXITS = (0, 1)
_INPUT_EXIT = 2
_UNAVAILABLE_EXIT = 5
# A crashed check names what it was running (xcompat.operators.runner's error): "... ended with
# signal 11 while checking ns::op on cpu, float32, 0-dim (sample 1) and no result; ..."
_CRASHED = re.compile(r"while checking (?P<op>[A-Za-z_][\w.]*::[\w.]+) on \S+, (?P<case>.+?) and no result")
MAX_CRASHES = 16  # operators set aside per device before the check gives up
_LOG_PREFIX = re.compile(r"^(?:\d\d:\d\d:\d\d )?(?:error: |warning: )?")
_DETAIL_TAIL = 64 * 1024  # of a device check's output, read for its detail


def gates(check: str, setting: str) -> bool:
    return setting == "gate" and check in GATING


@dataclass(frozen=True, kw_only=True)
class DeviceRun:
    """One ``xcompat kernels operators`` run: its document, or why there is none."""

    device: str
    status: str  # ran | not_run (the device is not usable here) | error
    detail: str = ""
    check: str | None = None  # an error's check: crashed | samples
    document: Mapping[str, Any] | None = None
    # operators that crashed an earlier check of this device, set aside for this one:
    # (operator, the derived case it was checking, the error)
    crashes: tuple[tuple[str, str, str], ...] = ()


def operator_devices(backend: str | None) -> list[str]:
    """The torch devices the project's operators are checked on for a cell of ``backend``."""
    extra = TORCH_DEVICE.get(backend or "")
    return ["cpu", extra] if extra else ["cpu"]


def device_argv(site: str | os.PathLike[str], device: str, out: str | os.PathLike[str],
                samples: str | os.PathLike[str] | None, cell_id: str | None,
                skip: Sequence[str] = ()) -> list[str | os.PathLike[str]]:
    """The ``xcompat`` arguments that check the operators installed in ``site`` on ``device``."""
    argv: list[str | os.PathLike[str]] = ["kernels", "operators", "--site", site, "--device", device, "--json", out]
    if samples is not None:
        argv += ["--samples", samples]
    if cell_id:
        argv += ["--cell-id", cell_id]
    for op in skip:
        argv += ["--skip-operator", op]
    return argv


def output_detail(exit_code: int | None, output: str) -> str:
    """A device check's one-line detail from the tail of its output: the line that names the
    operator a crash was checking (the error, whatever lines follow it), else its last line."""
    lines = [line.strip() for line in output[-_DETAIL_TAIL:].splitlines() if line.strip()]
    named = [line for line in lines if _CRASHED.search(line)]
    last = _LOG_PREFIX.sub("", (named or lines or [""])[-1], count=1)
    return f"exit {exit_code}" + (f": {last}" if last else "")


def crashed_operator(run: DeviceRun) -> tuple[str, str] | None:
    """The operator and derived case a crashed check was running (from the error that
    ``xcompat kernels operators`` gives for a crash); None: not a crash, or not named."""
    if run.status != "error" or run.check != "crashed":
        return None
    found = _CRASHED.search(run.detail)
    return (found["op"], found["case"]) if found else None


def check_device(device: str, attempt: Callable[[list[str], int], DeviceRun],
                 budget_s: float = OPERATORS_TIMEOUT_S) -> DeviceRun:
    """Check one device with ``attempt(skip, tries_before)``. A crash names the operator it was
    checking: that operator is recorded as crashed and the device checked again without it, so
    one operator that crashes does not hide the others' results (at most ``MAX_CRASHES`` times,
    within ``budget_s``)."""
    crashes: list[tuple[str, str, str]] = []
    start = time.monotonic()
    while True:
        run = attempt([op for op, _, _ in crashes], len(crashes))
        found = crashed_operator(run)
        if (found is None or found[0] in {op for op, _, _ in crashes} or len(crashes) >= MAX_CRASHES
                or time.monotonic() - start > budget_s):
            return replace(run, crashes=tuple(crashes))
        crashes.append((found[0], found[1], run.detail))


def device_run(device: str, exit_code: int | None, out: Path, detail: str) -> DeviceRun:
    """What one device's check (``device_argv``) gave: its exit code, the result it wrote to ``out``,
    the command's ``detail`` when it wrote none."""
    if exit_code in _RESULT_EXITS and out.is_file():
        try:
            document = jsonio.read_json(out, schema="operators")
        except InputError as exc:
            return DeviceRun(device=device, status="error", check="crashed", detail=exc.message)
        return DeviceRun(device=device, status="ran", document=document)
    if exit_code == _UNAVAILABLE_EXIT:
        return DeviceRun(device=device, status="not_run", detail=detail)
    if exit_code == _INPUT_EXIT:
        return DeviceRun(device=device, status="error", check="samples", detail=detail)
    return DeviceRun(device=device, status="error", check="crashed", detail=detail)


def read_kernels(path: Path) -> dict[str, Any] | None:
    """The runner's kernels result to add the operators to (None: there is none to add them to)."""
    try:
        document = jsonio.read_json(path) if path.is_file() else None
    except InputError:
        return None
    return document if isinstance(document, dict) else None


def merge(document: Mapping[str, Any], section: dict[str, Any]) -> dict[str, Any]:
    """The runner's kernels result with the operators section; failed when a finding gates."""
    merged = {**document, "operators": section,
              "summary": f"runner kernels: {document.get('summary') or document.get('status')}; {section['summary']}"}
    if gating_failed(merged) and severity(str(document.get("status"))) < severity("failed"):
        merged["status"] = "failed"
    return merged


def write_merged(path: Path, merged: Mapping[str, Any]) -> None:
    """Write the kernels result with its operators section (``InputError``: it does not validate)."""
    jsonio.write_json(path, dict(merged), schema="kernels")


def _finding(op: str | None, device: str | None, check: str, setting: str, detail: str,
             case: str | None = None, max_error: float | None = None) -> dict[str, Any]:
    return {"operator": op, "device": device, "check": check, "gating": gates(check, setting), "case": case,
            "detail": " ".join(detail.split())[:500], "max_error": max_error}


def _op_findings(op: Mapping[str, Any], device: str, setting: str) -> list[dict[str, Any]]:
    out = []
    for check in op.get("checks", ()):
        if check.get("status") != "failed":
            continue
        name = str(check["name"])
        case = next((c for c in op.get("cases", ()) if c.get("status") == "failed" and c.get("check") == name), None)
        out.append(_finding(str(op["name"]), device, name, setting, str(check.get("detail", "")),
                            case["name"] if case else None, case.get("max_error") if case else None))
    return out


def _named(finding: Mapping[str, Any]) -> str:
    """"ns::op on cpu, non-contiguous, float32"; a finding of no operator names its device and detail."""
    if not finding["operator"]:
        where = f"on {finding['device']}: " if finding["device"] else ""
        return f"{where}{CHECK_WORDS.get(finding['check'], finding['check'])}: {finding['detail'][:200]}"
    what = finding["case"] or CHECK_WORDS.get(finding["check"], finding["check"])
    if finding["check"] in ("determinism", "nan_from_finite", "crashed") and finding["case"]:
        what = f"{CHECK_WORDS[finding['check']]}, {what}"
    return f"{finding['operator']} on {finding['device']}, {what}"


def _list(findings: Sequence[Mapping[str, Any]]) -> str:
    named = "; ".join(_named(f) for f in findings[:_NAMED])
    return named + (f" and {len(findings) - _NAMED} more" if len(findings) > _NAMED else "")


def not_run_section(reason: str, setting: str, *, counts_against: bool, samples: str | None = None) -> dict[str, Any]:
    """The section when no device could check anything; ``counts_against``: a finding of its own
    (the project's build failed, so the operators it registers were not checked)."""
    findings = [_finding(None, None, "not_run", setting, reason)] if counts_against else []
    return {"status": "not_run", "summary": f"project operators not run: {reason}", "setting": setting,
            "samples": samples, "counts": _counts(0, 0, 0, 0, findings), "findings": findings, "devices": []}


def _counts(total: int, passed: int, failed: int, not_exercised: int,
            findings: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    gating = sum(1 for f in findings if f["gating"])
    return {"operators": total, "passed": passed, "failed": failed, "reported": 0, "not_exercised": not_exercised,
            "gating_findings": gating, "reported_findings": len(findings) - gating}


def _collect(runs: Sequence[DeviceRun], setting: str
             ) -> tuple[list[dict[str, Any]], dict[str, bool], dict[str, bool], set[str]]:
    """The runs' findings; per operator whether it ran a case on some device and whether only
    on inputs from its schema; the operators that crashed a check."""
    findings: list[dict[str, Any]] = []
    exercised: dict[str, bool] = {}
    schema_only: dict[str, bool] = {}
    crashed: set[str] = set()
    for run in runs:
        for op, case, detail in run.crashes:
            findings.append(_finding(op, run.device, "crashed", setting, detail, case))
            crashed.add(op)
            exercised.setdefault(op, False)
        if run.status == "error":
            findings.append(_finding(None, run.device, run.check or "crashed", setting, run.detail))
        for op in (run.document or {}).get("operators", ()):
            name = str(op["name"])
            ran = op["status"] in ("passed", "failed")
            exercised[name] = exercised.get(name, False) or ran
            schema_only[name] = schema_only.get(name, True) and (op.get("samples") == "schema" or not ran)
            findings.extend(_op_findings(op, run.device, setting))
    return findings, exercised, schema_only, crashed


def build_section(runs: Sequence[DeviceRun], setting: str, samples: str | None) -> dict[str, Any]:
    """The ``operators`` section from one run per device (``setting``: ``tests.operators``)."""
    findings, exercised, schema_only, crashed = _collect(runs, setting)
    if not any(run.document for run in runs):
        reasons = "; ".join(f"{r.device}: {r.detail}" for r in runs) or "no device to check on"
        section = not_run_section(reasons, setting, counts_against=False, samples=samples)
        section["findings"] = findings[:MAX_FINDINGS]
        section["counts"] = _counts(0, 0, 0, 0, findings)
        section["devices"] = _devices(runs)
        if findings:
            section["status"] = "failed" if any(f["gating"] for f in findings) else "reported"
            section["summary"] = f"project operators not checked: {_list(findings)}"
        return section
    failed_ops = {f["operator"] for f in findings if f["gating"] and f["operator"]}
    # an operator with findings that do not gate is not "passed": it is reported
    reported_ops = {f["operator"] for f in findings if f["operator"]} - failed_ops
    passed = [n for n, ran in exercised.items() if ran and n not in failed_ops | reported_ops]
    unexercised = sorted(n for n, ran in exercised.items() if not ran and n not in crashed)
    gating = [f for f in findings if f["gating"]]
    reported = [f for f in findings if not f["gating"]]
    guessed = sum(1 for n in passed if schema_only.get(n))
    parts = [f"{len(passed)} passed" + (f" ({guessed} on inputs from its schema only)" if guessed else "")]
    if failed_ops:
        parts.append(f"{len(failed_ops)} failed")
    if reported_ops:
        parts.append(f"{len(reported_ops)} with findings that do not gate")
    if unexercised:
        parts.append(f"{len(unexercised)} not exercised ({', '.join(unexercised[:_NAMED])}"
                     + (", ..." if len(unexercised) > _NAMED else "") + ")")
    summary = f"project operators {len(exercised)}: {', '.join(parts)}"
    if gating:
        summary += f": {_list(gating)}"
    if reported:
        summary += f"; reported, not gating: {_list(reported)}"
    missing = [r for r in runs if r.status == "not_run"]
    if missing:
        summary += "; not run on " + "; ".join(f"{r.device} ({r.detail})" for r in missing)
    if gating:
        status = "failed"
    elif reported:
        status = "reported"
    elif not exercised:
        status, summary = "none", "project operators 0: the wheel registers no operators"
    else:
        status = "passed" if passed else "not_run"
    counts = _counts(len(exercised), len(passed), len(failed_ops), len(unexercised), findings)
    counts["reported"] = len(reported_ops)
    return {"status": status, "summary": summary, "setting": setting, "samples": samples, "counts": counts,
            "findings": findings[:MAX_FINDINGS], "devices": _devices(runs)}


def _devices(runs: Sequence[DeviceRun]) -> list[dict[str, Any]]:
    return [{"device": r.device, "status": r.status, "detail": " ".join(r.detail.split())[:500],
             "result": dict(r.document) if r.document is not None else None} for r in runs]


# -- reading it back -----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class OperatorFinding:
    operator: str
    device: str
    check: str
    gating: bool
    case: str
    detail: str
    max_error: float | None


@dataclass(frozen=True, kw_only=True)
class OperatorsSection:
    status: str
    summary: str
    setting: str
    findings: tuple[OperatorFinding, ...]

    @property
    def gating(self) -> tuple[OperatorFinding, ...]:
        return tuple(f for f in self.findings if f.gating)


def read_section(result: StageResult) -> OperatorsSection | None:
    """The kernels result's ``operators`` section (None: the result has none)."""
    raw = result.data.get("operators")
    if raw is None:
        return None
    section = field_obj(result, raw, "$.operators")
    status = section.get("status")
    if status not in SECTION_STATUSES:
        raise wrong_type(result, "$.operators.status", ", ".join(SECTION_STATUSES), status)
    found = []
    for i, item in enumerate(field_list(result, section, "findings", "$.operators")):
        path = f"$.operators.findings[{i}]"
        entry = field_obj(result, item, path)
        gating = entry.get("gating")
        if not isinstance(gating, bool):
            raise wrong_type(result, f"{path}.gating", "true or false", gating)
        found.append(OperatorFinding(
            operator=field_str(result, entry, "operator", path), device=field_str(result, entry, "device", path),
            check=field_str(result, entry, "check", path), gating=gating, case=field_str(result, entry, "case", path),
            detail=field_str(result, entry, "detail", path), max_error=field_num(result, entry, "max_error", path)))
    counts = section.get("counts")
    if counts is not None:
        for key in ("gating_findings", "reported_findings"):
            field_int(result, field_obj(result, counts, "$.operators.counts"), key, "$.operators.counts")
    setting = field_str(result, section, "setting", "$.operators", "gate")
    return OperatorsSection(status=status, summary=field_str(result, section, "summary", "$.operators"),
                            setting=setting, findings=tuple(found))


def gating_failed(document: Mapping[str, Any]) -> bool:
    """Whether a kernels document's operators section holds a gating finding (the verdict's rule)."""
    section = document.get("operators")
    findings = section.get("findings") if isinstance(section, dict) else None
    return isinstance(findings, list) and any(isinstance(f, dict) and f.get("gating") is True for f in findings)


def runner_text(document: Mapping[str, Any]) -> str:
    """"runner kernels 880/880" from a kernels document's counts ("" when it has none)."""
    counts = document.get("counts")
    cases = counts.get("cases") if isinstance(counts, dict) else None
    failed = counts.get("failed_cases", 0) if isinstance(counts, dict) else 0
    if not isinstance(cases, int) or not isinstance(failed, int) or isinstance(cases, bool):
        return ""
    return f"runner kernels {cases - failed}/{cases}"


def kernels_tested_text(result: StageResult) -> str:
    """What a kernels result tested, the runner's kernels and the project's operators apart:
    "runner kernels 880/880; project operators 3: 2 passed, 1 failed: ns::op on cpu, non-contiguous, float16"."""
    runner = runner_text(result.data)
    section = read_section(result)
    if not runner and section is None:
        return ""  # an envelope: the stage was skipped or wrote no result of its own
    parts = [runner] if runner else []
    parts.append(section.summary if section is not None else "project operators not checked")
    return "; ".join(parts)
