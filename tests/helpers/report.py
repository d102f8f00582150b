"""Stage results and plans shaped like the real stages write them (see schemas/), for report tests."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from xcompat.model import Cell, cell_id


def make_cell(
    python: str = "3.12",
    platform: str = "linux",
    arch: str = "x86_64",
    backend: str = "cpu",
    *,
    toolkit: str | None = None,
    frameworks: Sequence[tuple[str, str]] = (),
    required: bool = True,
) -> Cell:
    fw = tuple(sorted(frameworks))
    return Cell(
        id=cell_id(python, platform, arch, backend, toolkit, fw),
        python=python,
        platform=platform,  # type: ignore[arg-type]
        arch=arch,
        backend=backend,  # type: ignore[arg-type]
        required=required,
        toolkit=toolkit,
        frameworks=fw,
    )


def make_plan(cells: Iterable[Cell]) -> dict[str, Any]:
    cells = list(cells)
    return {
        "version": 1,
        "format": "json",
        "repo": "octo/proj",
        "serial": 3,
        "matrix_sha256": hashlib.sha256(b"matrix").hexdigest(),
        "expires": None,
        "counts": {"cells": len(cells), "required": sum(c.required for c in cells), "by_backend": dict(Counter(c.backend for c in cells))},
        "required": [c.id for c in cells if c.required],
        "cells": [c.to_dict() for c in cells],
        "settings": {},
    }


def make_test(nodeid: str, outcome: str = "passed", *, message: str = "", tail: str = "", crash: dict[str, Any] | None = None, duration: float = 0.01) -> dict[str, Any]:
    return {
        "nodeid": nodeid,
        "outcome": outcome,
        "duration_s": duration,
        "device": None,
        "message": message,
        "output_tail": tail,
        "crash": crash,
        "leaks": [],
        "findings": [],
    }


def make_test_result(cid: str | None, tests: Sequence[dict[str, Any]], *, status: str | None = None) -> dict[str, Any]:
    counts = {k: 0 for k in ("passed", "failed", "skipped", "xfailed", "xpassed", "error", "crashed", "timeout", "leaked")}
    for t in tests:
        counts[t["outcome"]] += 1
    if status is None:
        status = "crashed" if counts["crashed"] else "failed" if any(counts[k] for k in ("failed", "error", "timeout", "leaked")) else "passed"
    return {
        "version": 1,
        "kind": "test",
        "cell_id": cid,
        "status": status,
        "summary": ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "no tests",
        "isolation": "test",
        "start_method": "spawn",
        "timeout_s": 60,
        "duration_s": 1.5,
        "counts": counts,
        "tests": list(tests),
        "findings": [],
    }


def stage_result(kind: str, cid: str | None, status: str = "passed", summary: str = "", **fields: Any) -> dict[str, Any]:
    return {"version": 1, "kind": kind, "cell_id": cid, "status": status, "summary": summary or f"{kind} {status}", **fields}


def abi_result(findings: Sequence[tuple[str, str, str, str]], *, status: str = "failed", cid: str | None = None) -> dict[str, Any]:
    """findings: (kind, library, symbol, required_bump)."""
    order = {"major": 3, "minor": 2, "patch": 1, "none": 0}
    bump = max((f[3] for f in findings), key=order.__getitem__, default="none")
    return {
        "version": 1,
        "kind": "abi",
        "cell_id": cid,
        "status": status,
        "summary": f"{len(findings)} finding(s); required bump {bump}",
        "required_bump": bump,
        "actual_bump": None,
        "fail_on": "major",
        "counts": dict(Counter(f[0] for f in findings)),
        "gating": sum(1 for f in findings if f[3] == "major"),
        "filtered": {},
        "findings": [
            {"kind": k, "library": lib, "symbol": sym, "demangled": None, "required_bump": b, "detail": f"{k} {sym}"}
            for k, lib, sym, b in findings
        ],
        "unchecked": [],
    }


def coverage_result(percent: float, *, diff_percent: float | None = None, diff_files: Sequence[tuple[str, list[list[int]]]] = (), files: Sequence[tuple[str, float]] = (), threshold: float | None = None, status: str = "passed") -> dict[str, Any]:
    def fentry(path: str, pct: float, ranges: list[list[int]]) -> dict[str, Any]:
        return {"path": path, "language": "python", "lines_valid": 100, "lines_covered": int(pct), "percent": pct, "cells": [], "uncovered_ranges": ranges}

    return {
        "version": 1,
        "kind": "coverage",
        "cell_id": None,
        "status": status,
        "summary": f"coverage {percent:.1f}%",
        "totals": {"files": len(files), "lines_valid": 1000, "lines_covered": int(percent * 10), "percent": percent},
        "languages": {"python": {"files": 1, "lines_valid": 10, "lines_covered": 9, "percent": 90.0, "cells": []}, "cpp": {"files": 1, "lines_valid": 10, "lines_covered": 5, "percent": 50.0, "cells": []}},
        "cells": [],
        "thresholds": {"overall": None, "diff": threshold, "source": "options" if threshold is not None else "none"},
        "gate": [],
        "diff": None
        if diff_percent is None
        else {
            "base_ref": "origin/main",
            "lines_valid": 20,
            "lines_covered": 10,
            "percent": diff_percent,
            "files": [
                {"path": p, "language": "python", "measured": True, "changed_lines": 10, "lines_valid": 10, "lines_covered": 5, "percent": 50.0, "uncovered_ranges": r}
                for p, r in diff_files
            ],
        },
        "files": [fentry(p, pct, [[1, 2]]) for p, pct in files],
        "cobertura": {"path": "cobertura.xml", "source": ".", "files_written": 0, "files_omitted": 0, "bytes": 0, "limits": {"max_bytes": 1, "max_sources": 1}, "omitted_reason": ""},
        "warnings": [],
        "errors": [],
    }


def mixed_results() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A plan of five cells and results covering every status, ABI findings and coverage."""
    ok = make_cell("3.12", "linux", "x86_64", "cpu")
    cuda = make_cell("3.12", "linux", "x86_64", "cuda", toolkit="12.8", frameworks=[("torch", "2.5")])
    crash = make_cell("3.13", "linux", "aarch64", "cpu")
    missing = make_cell("3.13", "macos", "arm64", "mps", frameworks=[("torch", "2.6")])
    optional = make_cell("3.14t", "linux", "x86_64", "rocm", toolkit="6.2", required=False)
    plan = make_plan([ok, cuda, crash, missing, optional])
    results = [
        stage_result("build", ok.id),
        make_test_result(ok.id, [make_test("tests/test_ops.py::test_add"), make_test("tests/test_ops.py::test_skip", "skipped", message="needs cuda")]),
        stage_result("build", cuda.id),
        make_test_result(
            cuda.id,
            [
                make_test("tests/test_ops.py::test_add"),
                make_test("tests/test_ops.py::test_matmul[float16]", "failed", message="AssertionError: max abs diff 0.5 > 1e-3", tail="E   AssertionError: max abs diff 0.5\nE   assert False"),
            ],
        ),
        stage_result("build", crash.id),
        make_test_result(
            crash.id,
            [make_test("tests/test_native.py::test_segv", "crashed", message="SIGSEGV", crash={"signal": "SIGSEGV", "signal_number": 11, "exit_code": -11, "traceback": 'Fatal Python error: Segmentation fault\n  File "tests/test_native.py", line 12 in test_segv'})],
        ),
        stage_result("kernels", optional.id, "fallback", "rocm unavailable; ran on cpu"),
        abi_result([("symbol-removed", "_ext.so", "_Z3foov", "major"), ("symbol-added", "_ext.so", "_Z3barv", "minor")]),
        coverage_result(81.5, diff_percent=50.0, diff_files=[("src/pkg/ops.py", [[10, 12], [20, 20]])], files=[("src/pkg/ops.py", 70.0), ("src/pkg/util.py", 95.0)], threshold=80.0),
    ]
    return plan, results


def huge_report(n_cells: int = 40, n_fail: int = 3000, tail_lines: int = 40) -> Any:
    """A report far larger than every channel but the job summary: thousands of failures, long tails."""
    from xcompat.report import build_report

    cells = [make_cell(f"3.{10 + i % 5}", "linux", f"arch{i}", "cuda", toolkit="12.8", frameworks=[("torch", f"2.{i}")]) for i in range(n_cells)]
    tail = "\n".join(f"E  | line {j} with `backticks` and |pipes| and émoji 🚀" for j in range(tail_lines))
    results = []
    for i, c in enumerate(cells):
        tests = [make_test(f"tests/test_{i}.py::test_{k}", "failed", message="boom " * 20, tail=tail) for k in range(n_fail // n_cells)]
        results.append(make_test_result(c.id, tests))
    results.append(abi_result([("symbol-removed", "_ext.so", f"_Z{k}foov", "major") for k in range(800)]))
    results.append(coverage_result(70.0, diff_percent=40.0, diff_files=[(f"src/m{k}.py", [[1, 3], [7, 9]]) for k in range(500)], files=[(f"src/f{k}.py", 50.0) for k in range(2000)]))
    return build_report(results, make_plan(cells), artifact_url="https://ci.example/run/1")


class ScriptedServer:
    """Loopback server answering a fixed script of (status, headers, json body); records requests.

    For the HTTP retry rules only, where no service contract is involved; served by
    ``tests.helpers.fake_github.start``.
    """

    def __init__(self, script: Sequence[tuple[int, dict[str, str], Any]]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.server: Any = None

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], Any]:
        self.requests.append({"method": method, "path": path, "headers": headers, "body": body})
        if not self.script:
            return 500, {}, {"message": "script exhausted"}
        return self.script.pop(0)


class FakeClock:
    """Monotonic and wall clocks that only move when ``sleep`` is called."""

    def __init__(self, wall: float = 1_800_000_000.0) -> None:
        self.now = 0.0
        self.wall0 = wall
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def wall(self) -> float:
        return self.wall0 + self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
