"""Kernels results with an operators section, for the tests of the verdict, the report and the stage.

Each operators document is checked against ``schemas/operators.schema.json`` and each kernels
document against ``schemas/kernels.schema.json`` when it is made, so the tests read only
documents the real commands could write.
"""

from __future__ import annotations

from typing import Any

from xcompat.jsonio import validate
from xcompat.results.kernel_operators import DeviceRun


def check(name: str, status: str = "passed", detail: str = "") -> dict[str, Any]:
    return {"name": name, "status": status, "detail": detail}


def op(name: str, status: str, *, checks: list[dict[str, Any]] | None = None,
       cases: list[dict[str, Any]] | None = None, samples: str = "declared") -> dict[str, Any]:
    return {"name": name, "schema": f"{name}(Tensor x) -> Tensor", "dispatch_keys": ["CPU", "Meta"],
            "samples": samples, "dtypes": ["float32"], "status": status, "reason": "",
            "checks": checks or [], "cases": cases or [], "counts": {}}


def case(name: str, status: str, check_name: str | None = None, max_error: float | None = None) -> dict[str, Any]:
    return {"name": name, "status": status, "check": check_name, "detail": "", "max_error": max_error}


def document(device: str, *ops: dict[str, Any]) -> dict[str, Any]:
    doc = {"version": 1, "kind": "operators", "cell_id": None, "status": "passed", "summary": "project operators",
           "device": device, "torch": "2.13.0", "site": ".site", "samples": None, "operators": list(ops),
           "unknown_samples": [], "errors": []}
    validate("operators", doc)
    return doc


CLEAN = op("ns::shift", "passed", checks=[check("opcheck"), check("result"), check("determinism")],
           cases=[case("float32", "passed"), case("non-contiguous, float32", "passed")])
STRIDES = op("ns::scale", "failed",
             checks=[check("opcheck"), check("result", "failed", "non-contiguous, float16: largest error 3.5; ...")],
             cases=[case("non-contiguous, float16", "failed", "result", 3.5), case("float32", "passed")])
FLAKY = op("ns::noisy", "failed",
           checks=[check("result"), check("determinism", "failed", "float32: the same inputs twice differ")],
           cases=[case("float32", "failed", "determinism")])
UNSAMPLED = op("ns::unsampled", "not_exercised", samples="none")


def ran(device: str, *ops: dict[str, Any]) -> DeviceRun:
    return DeviceRun(device=device, status="ran", document=document(device, *ops))


def kernels_doc(status: str, section: dict[str, Any] | None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "version": 1, "kind": "kernels", "cell_id": "c1", "status": status, "summary": "5/5 cases passed on cpu",
        "backend_requested": "cpu", "backend_used": "cpu", "required": [],
        "fallback": {"order": ["cpu"], "missing_required": [],
                     "steps": [{"backend": "cpu", "taken": True, "available": True, "reason": "cpu",
                                "probe_seconds": 0.0}]},
        "build": None, "isa": None, "environment": {"python": "3.11", "platform": "linux", "torch": "2.13",
                                                     "numpy": "2"},
        "kernels": [{"name": "add", "status": "passed", "counts": {"passed": 5, "failed": 0, "skipped": 0},
                     "cases": []}],
        "opcheck": {}, "checks": [],
        "counts": {"cases": 5, "failed_cases": 0, "checks_failed": 0, "checks_skipped": 0}, "duration_seconds": 1.0,
    }
    if section is not None:
        doc["operators"] = section
    validate("kernels", doc)
    return doc
