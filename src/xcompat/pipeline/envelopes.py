"""An envelope for every stage of a run that did not write its own result.

So the verdict sees a failed build, a test stage that found no tests, or a kernels stage the
settings do not require (skipped, with the reason), exactly as it sees results the stages
wrote themselves. A stage of a result kind (``xcompat.results.stages.STAGES``) whose command
exited 0 without writing its ``result_file`` is failed: nothing says it passed.
"""

from __future__ import annotations

from typing import Any

from xcompat import jsonio
from xcompat.pipeline.context import RunContext
from xcompat.pipeline.local import StageResult, load_json
from xcompat.results.stages import STAGES, result_file


def write_stage_envelopes(context: RunContext) -> None:
    """Under ``stages/``: one envelope per stage result without its own result file."""
    _build_of_the_cell(context)
    for result in context.pipe.results:
        own = result_file(result.name)
        if own is not None and context.pipe.path(own).is_file():
            continue
        if result.name == "baseline":
            jsonio.write_json(context.pipe.path("stages", "baseline.json"), baseline_envelope(result))
            continue
        if result.status == "passed" and own is None:
            continue
        jsonio.write_json(context.pipe.path("stages", f"{result.name}.json"), _envelope(context, result, own))


def _build_of_the_cell(context: RunContext) -> None:
    """`xcompat build` on this machine builds for no named cell: its wheel is the run's cell's."""
    build = load_json(context.result_path("build")) if context.cell_id else None
    if isinstance(build, dict) and build.get("cell_id") is None and build.get("status") in ("passed", "failed"):
        jsonio.write_json(context.pipe.path("stages", "build-cell.json"), {
            "version": 1, "kind": "build", "cell_id": context.cell_id, "status": build["status"],
            "summary": f"the wheel built on this machine ({STAGES['build'].result_file}): {build.get('summary', '')}",
        })


def _envelope(context: RunContext, result: StageResult, own: str | None) -> dict[str, Any]:
    kind = result.name if own is not None else "pipeline"
    status = {"passed": "passed", "failed": "failed", "skipped": "skipped"}.get(result.status, "failed")
    summary = result.detail or f"{result.name} {result.status}"
    if own is not None and result.status == "passed":
        # its command exited 0 but its result is not there: nothing says it passed
        status = "failed"
        summary = (f"its command exited 0 but wrote no {own}: the result is missing "
                   "(something ended the process before it was written)")
    if kind == "pipeline":
        summary = f"{result.name}: {summary}"
    cell = context.cell_id if kind in STAGES and STAGES[kind].per_cell else None
    if kind == "abi" and result.status == "skipped":
        cell = None
    return {"version": 1, "kind": kind, "cell_id": cell, "status": status, "summary": summary,
            "stage": result.name, "log": result.log}


def baseline_envelope(result: StageResult) -> dict[str, object]:
    """The baseline's own result: ``passed`` with what was compared against, else ``skipped``
    with why (its absence is judged by the ABI stage, red only where the matrix requires it)."""
    return {"version": 1, "kind": "baseline", "cell_id": None,
            "status": "passed" if result.status == "passed" else "skipped",
            "summary": result.detail or f"baseline {result.status}", "stage": "baseline", "log": result.log}


