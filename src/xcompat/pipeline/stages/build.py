"""The build stage: the project's wheels, by ``xcompat build``, into the folder of its result.

Where this process may use a second CPU, the baseline's build (``stages.baseline``) starts
first and runs alongside; the baseline stage then waits only for what is left of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xcompat.cpus import usable_cpus
from xcompat.pipeline.builds import finish_build, start_build
from xcompat.pipeline.context import RunContext
from xcompat.pipeline.local import StageResult
from xcompat.pipeline.stages.baseline import start_baseline


@dataclass(frozen=True)
class BuildStage:
    name: str = "build"
    runs_when_halted: bool = False

    def run(self, context: RunContext) -> StageResult:
        if usable_cpus() > 1:
            start_baseline(context)
        out = context.result_path("build").parent
        result = finish_build(context, start_build(context, "build", context.cfg.project, out), out)
        context.wheels = sorted(out.glob("*.whl"))
        if result.status == "passed" and not context.wheels:
            result.status, result.detail = "error", "the build produced no wheel"
        return result


STAGE = BuildStage()
