"""The ``operators`` result document: its status and one-line summary.

An operator is "passed" only when at least one case ran and no check failed; one without
declared samples (and whose schema allows no generated inputs) is "not exercised", never
passed by omission. The document is "failed" when any operator failed, "not_run" when no
operator was exercised, else "passed".
"""

from __future__ import annotations

from typing import Any


def first_failure(op: dict[str, Any]) -> str:
    """The first failing case's name, or the first failed check's name."""
    case = next((c for c in op["cases"] if c["status"] == "failed"), None)
    if case is not None:
        return str(case["name"])
    check = next((c for c in op["checks"] if c["status"] == "failed"), None)
    return str(check["name"]) if check is not None else "failed"


def summarise(operators: list[dict[str, Any]], device: str) -> tuple[str, str]:
    """(status, summary), e.g. "project operators 3: 2 passed, 1 failed: ns::op on cpu, non-contiguous, float16"."""
    counts = {s: sum(op["status"] == s for op in operators) for s in ("passed", "failed", "not_exercised")}
    if not operators:
        return "not_run", "project operators 0: the wheel registers no operators"
    guessed = sum(op["status"] == "passed" and op.get("samples") == "schema" for op in operators)
    parts = [f"{counts['passed']} passed" + (f" ({guessed} on inputs from its schema only)" if guessed else "")]
    if counts["failed"]:
        parts.append(f"{counts['failed']} failed")
    if counts["not_exercised"]:
        parts.append(f"{counts['not_exercised']} not exercised")
    text = f"project operators {len(operators)}: {', '.join(parts)}"
    failed = [op for op in operators if op["status"] == "failed"]
    if failed:
        named = "; ".join(f"{op['name']} on {device}, {first_failure(op)}" for op in failed[:3])
        more = f" and {len(failed) - 3} more" if len(failed) > 3 else ""
        return "failed", f"{text}: {named}{more}"
    if not counts["passed"]:
        missing = ", ".join(op["name"] for op in operators[:3])
        return "not_run", f"{text}: no samples for {missing}"
    return "passed", text


def build_document(
    child: dict[str, Any], *, device: str, samples: str | None, site: str, cell_id: str | None
) -> dict[str, Any]:
    status, summary = summarise(child["operators"], device)
    return {
        "version": 1,
        "kind": "operators",
        "cell_id": cell_id,
        "status": status,
        "summary": summary,
        "device": device,
        "torch": child["torch"],
        "site": site,
        "samples": samples,
        "operators": child["operators"],
        "unknown_samples": child.get("unknown_samples", []),
        "errors": child["errors"][:20],
    }
