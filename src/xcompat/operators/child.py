"""The process that loads the project's modules and checks its operators; JSON on stdout.

Started by ``xcompat.operators.runner`` in an isolated interpreter (``python -I``) with the
site folder as its working directory: a crash or a hang in the project's code ends this
process, not xcompat. Everything it reports is bounded (details cut to a line, at most
``MAX_CASES`` cases per operator, failures first).
"""

from __future__ import annotations

import json
import sys
from typing import Any

MAX_CASES = 200
PROGRESS = "xcompat-operators: checking "  # the prefix of the step lines on stderr
_ORDER = {"failed": 0, "refused": 1, "skipped": 2, "passed": 3}


def _overload(op: str) -> Any:
    import torch

    namespace, _, rest = op.partition("::")
    name, _, overload = rest.partition(".")
    packet = getattr(getattr(torch.ops, namespace), name)
    return getattr(packet, overload or "default")


def _entry(op: str, schema: str, keys: list[str]) -> dict[str, Any]:
    return {"name": op, "schema": schema, "dispatch_keys": keys, "samples": "none", "dtypes": [],
            "status": "not_exercised",
            "reason": "", "checks": [], "cases": [], "counts": {}}


def _fill(entry: dict[str, Any], run: Any) -> None:
    from xcompat.operators.checks import CHECKS

    cases = sorted(run.cases, key=lambda c: _ORDER[c.status])
    counts: dict[str, int] = {}
    for case in run.cases:
        counts[case.status] = counts.get(case.status, 0) + 1
    entry["counts"] = counts
    entry["dtypes"] = sorted(run.accepted)
    entry["cases"] = [
        {"name": c.name, "status": c.status, "check": c.check, "detail": c.detail,
         "max_error": c.max_error if c.max_error is None or c.max_error != float("inf") else None}
        for c in cases[:MAX_CASES]
    ]
    entry["checks"] = [{"name": n, "status": run.checks[n][0], "detail": run.checks[n][1]} for n in CHECKS
                       if n in run.checks]
    failed = [c for c in entry["checks"] if c["status"] == "failed"]
    ran = counts.get("passed", 0) + counts.get("failed", 0)
    if failed:
        entry["status"] = "failed"
    elif ran:
        entry["status"] = "passed"
    else:
        entry["reason"] = "every case was refused or skipped"


def _check_one(op: str, entry: dict[str, Any], declared: Any, config: dict[str, Any], where: str) -> None:
    from xcompat.operators.checks import check_operator
    from xcompat.operators.samples import call_samples
    from xcompat.operators.schema_inputs import schema_sample
    from xcompat.testing.reference import tolerances_from_mapping

    if declared is not None:
        samples, reference, entry["samples"] = call_samples(op, declared, where), declared.reference, "declared"
    else:
        name, _, overload = op.partition(".")
        generated = schema_sample(name, overload)
        if generated is None:
            entry["reason"] = "no declared samples, and its schema does not allow generated inputs"
            return
        samples, reference, entry["samples"] = [generated], None, "schema"
    tolerances = tolerances_from_mapping(config.get("tolerances") or {})
    device = config["device"]

    def progress(step: str) -> None:
        sys.stderr.write(f"{PROGRESS}{op} on {device}, {step}\n")
        sys.stderr.flush()

    run = check_operator(_overload(op), samples, device, reference, tolerances,
                         opcheck=config.get("opcheck", True), progress=progress)
    _fill(entry, run)
    if entry["samples"] == "schema" and entry["status"] != "failed" and not entry["counts"].get("passed"):
        entry["status"], entry["reason"] = "not_exercised", "inputs generated from its schema were refused"


def device_missing(device: str) -> str | None:
    """Why ``device`` cannot run here, or None when it can."""
    import torch

    try:
        torch.device(device)
    except RuntimeError:
        return None  # not a device name: the parent says so as a usage error
    try:
        torch.empty(1, device=device)
    except (RuntimeError, AssertionError) as exc:  # torch asserts on a CPU-only build's cuda
        lines = str(exc).strip().splitlines() or [type(exc).__name__]
        return f"device {device} is not available with torch {torch.__version__}: {lines[0]}"
    return None


def check_all(config: dict[str, Any], root: str, names: list[str]) -> dict[str, Any]:
    import torch

    from xcompat.operators.discovery import dispatch_keys, load_operators
    from xcompat.operators.samples import SamplesError, load_samples

    missing = device_missing(config["device"])
    if missing is not None:
        return {"device_error": missing}
    ops, errors = load_operators(root, names)
    result: dict[str, Any] = {"torch": str(torch.__version__), "errors": errors, "operators": [],
                              "samples_error": None, "unknown_samples": []}
    try:
        samples = load_samples(config.get("samples"))
        skip = set(config.get("skip") or ())
        for op in sorted(ops):
            entry = _entry(op, ops[op], dispatch_keys(op))
            result["operators"].append(entry)
            if op in skip:  # it crashed an earlier check of this device: the others are checked without it
                entry["reason"] = "not checked here: it crashed the checking process"
                continue
            _check_one(op, entry, samples.operators.get(op), config, str(samples.path))
        result["unknown_samples"] = sorted(samples.operators.keys() - ops.keys())
    except SamplesError as exc:
        result["samples_error"] = str(exc)
    return result


def main(config: dict[str, Any], root: str, names: list[str]) -> None:
    result = check_all(config, root, names)
    sys.stdout.write("\n" + json.dumps(result, allow_nan=False) + "\n")
