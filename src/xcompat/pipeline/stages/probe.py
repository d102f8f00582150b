"""The probe stage: this machine's device stack, described and checked by ``xcompat probe``."""

from __future__ import annotations

import os
from dataclasses import dataclass

from xcompat.pipeline.context import RunContext
from xcompat.pipeline.local import StageResult


@dataclass(frozen=True)
class ProbeStage:
    name: str = "probe"
    runs_when_halted: bool = False

    def run(self, context: RunContext) -> StageResult:
        p = context.pipe
        result = context.result_path("probe")
        argv: list[str | os.PathLike[str]] = ["probe", "-o", result]
        if context.cell_id:
            argv += ["--cell-id", context.cell_id]
        if context.wheels:
            argv += ["--wheel", context.wheels[0]]
        return p.run_command("probe", p.xcompat(*argv), outputs=[result])


STAGE = ProbeStage()
