"""The abi stage: ``xcompat abi diff`` of the baseline against the new wheels, with the matrix's abi policy.

Without a baseline it does not run and says why ("not run: ..."): ``skipped``, or ``failed``
when the matrix sets ``abi.baseline-required: true``. It never claims "no change".
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from xcompat import jsonio
from xcompat.pipeline.context import RunContext
from xcompat.pipeline.local import StageResult


@dataclass(frozen=True)
class AbiStage:
    name: str = "abi"
    runs_when_halted: bool = False

    def run(self, context: RunContext) -> StageResult:
        result = self._diff(context)
        from xcompat.pipeline.lanes import isa_scan

        floor = isa_scan(context)  # abi.isa-floors: instructions above the arch's floor (isa.json)
        if floor is not None:
            result.detail = "; ".join(filter(None, (result.detail, f"ISA floor scan {floor.status}"
                                                                   + (f": {floor.detail}" if floor.detail else ""))))
        return result

    def _diff(self, context: RunContext) -> StageResult:
        p = context.pipe
        base = context.baseline_path
        if base is None:
            required = context.settings.abi.baseline_required
            why = context.baseline_missing or "no baseline"
            return StageResult(name="abi", status="failed" if required else "skipped",
                               detail=f"not run: {why}" + (" (abi.baseline-required: true)" if required else ""))
        if not context.wheels:
            return StageResult(name="abi", status="skipped", detail="not run: no wheel to diff (the build failed)")
        policy = p.path(".inputs", "abi-policy.json")  # an input, not a result: a hidden folder
        jsonio.write_json(policy, context.settings.abi_policy_document())
        result = context.result_path("abi")
        argv: list[str | os.PathLike[str]] = [
            "abi", "diff", base, context.result_path("build").parent, "--format", "markdown", "-o", result,
            "--against-version", "--policy", policy]
        if context.cell_id:
            argv += ["--cell-id", context.cell_id]
        return p.run_command("abi", p.xcompat(*argv), outputs=[result])


STAGE = AbiStage()
