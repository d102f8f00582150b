"""The kernels stage: the conformance kernels through the fallback chain, when the settings require them."""

from __future__ import annotations

import os
from dataclasses import dataclass

from xcompat.pipeline.context import RunContext
from xcompat.pipeline.local import StageResult


@dataclass(frozen=True)
class KernelsStage:
    name: str = "kernels"
    runs_when_halted: bool = False

    def run(self, context: RunContext) -> StageResult:
        from xcompat.results.required import kernels_requirement

        requirement = kernels_requirement(context.settings, context.cfg.facts)
        if not requirement.required:
            return StageResult(name="kernels", status="skipped", detail=f"not required: {requirement.reason}")
        p = context.pipe
        result = context.result_path("kernels")
        argv: list[str | os.PathLike[str]] = ["kernels", "run", "--backend", context.cfg.backend, "--json", result]
        if context.settings.tests.kernels != "all":
            for name in context.settings.tests.kernels:
                argv += ["--kernel", name]
        if context.cell_id:
            argv += ["--cell-id", context.cell_id]
            backend = context.cell_backend()
            if backend and backend != "cpu":
                argv += ["--required-backend", backend]
        return p.run_command("kernels", p.xcompat(*argv), outputs=[result])


STAGE = KernelsStage()
