"""The plan stage: the matrix's cells this machine can serve, and why it cannot serve the others.

The first required cell here drives the run; the other cells on this machine share its
results. The report lists the matrix's other cells with the reason, so "all required cells
passed" is never read as the whole matrix.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from xcompat import jsonio
from xcompat.errors import XcompatError
from xcompat.model import runner_arch, runner_platform
from xcompat.pipeline.context import RunContext
from xcompat.pipeline.frameworks import installed_frameworks, matches, pick_framework_versions
from xcompat.pipeline.local import StageResult, python_tag


@dataclass(frozen=True)
class PlanStage:
    name: str = "plan"
    runs_when_halted: bool = False

    def run(self, context: RunContext) -> StageResult:
        from xcompat.devices import available_backends
        from xcompat.pipeline.lanes import plan_target
        from xcompat.results.collect import load_plan

        p = context.pipe
        system = runner_platform()
        # an emulated lane (xcompat run --arch): its arch, its root's Python, its CPU
        arch, python, backends = plan_target(context, runner_arch(), python_tag(), available_backends())
        full = p.path("plan.full.json")
        argv: list[str | os.PathLike[str]] = [
            "matrix", "plan", context.cfg.matrix, "--format", "json", "--platform", system, "--arch", arch,
            "--python", python, "-o", full]
        if context.settings.matrix_sha256:
            argv += ["--expect-sha256", context.settings.matrix_sha256]
        for b in backends:
            argv += ["--backend", b]
        result = p.run_command("plan", p.xcompat(*argv), outputs=[full])
        if result.status != "passed":
            context.halted = "the plan stage failed"  # no cell to build or test for
            return result
        doc = load_plan(full)  # the one plan reader, as the report and the gate read it
        local, notes = pick_framework_versions(doc["cells"], installed_frameworks())
        doc["cells"] = local
        doc["not_run_here"] = not_run_here(context, {c["id"] for c in local}, system, arch, backends, python)
        jsonio.write_json(p.path("plan.json"), doc)
        full.unlink()
        context.cells = local
        if not local:
            result.status = "failed"
            result.detail = (f"the matrix has no cell for Python {python} on {system}/{arch} "
                             f"with backends {', '.join(backends)}")
            context.halted = "the plan stage failed"
            return result
        context.cell_id = next((c["id"] for c in local if c.get("required")), local[0]["id"])
        if context.cfg.cell is not None:  # `--cell`: the one a CI job runs
            if context.cfg.cell not in {c["id"] for c in local}:
                result.status, context.halted = "failed", "the plan stage failed"
                result.detail = f"the cell {context.cfg.cell} is not one this machine runs"
                return result
            context.cell_id = context.cfg.cell
        result.outputs = ["plan.json"]
        result.detail = f"{len(local)} cell(s) here: {', '.join(c['id'] for c in local[:3])}"
        if notes:
            result.detail += " (" + "; ".join(notes) + ")"
        return result


def not_run_here(context: RunContext, here: set[str], system: str, arch: str,
                 backends: list[str], python: str | None = None) -> list[dict[str, Any]]:
    """The matrix's other cells, each with the reason this machine cannot run it."""
    from xcompat.matrix import load_matrix, read_matrix_bytes
    from xcompat.matrix.plan import expand
    from xcompat.pipeline.lanes import elsewhere_arch, elsewhere_python

    python = python or python_tag()

    matrix = context.cfg.matrix
    try:
        cells = expand(load_matrix(read_matrix_bytes(matrix), source=str(matrix)))
    except XcompatError as exc:  # the plan command read the same file: say so rather than guess
        context.pipe.log.warning(f"could not list the matrix's other cells: {exc.message}")
        return []
    installed = installed_frameworks()
    out = []
    for c in cells:
        if c.id in here:
            continue
        if c.python != python:
            why = elsewhere_python(context, c.python, python)
            if c.platform == system and c.arch == arch and c.backend in backends:
                # only its Python keeps it from here: the pythons stage runs it when this machine has one
                out.append({"id": c.id, "required": c.required, "why": why, "python": c.python,
                            "only_python": True, "frameworks": dict(c.frameworks)})
                continue
        elif c.platform != system or c.arch != arch:
            why = elsewhere_arch(context, f"{c.platform}/{c.arch}", f"{system}/{arch}")
        elif c.backend not in backends:
            why = f"the {c.backend} backend (this machine has {', '.join(backends)})"
        else:
            other = [f"{name} {v} ({installed[name]} is installed)" for name, v in c.frameworks
                     if name in installed and not matches(v, installed[name])]
            why = ", ".join(other) or "the run's cell stands for it"
        out.append({"id": c.id, "required": c.required, "why": why})
    return out


STAGE = PlanStage()
