"""The verify stage: the matrix's signature, checked by ``xcompat matrix verify``.

In CI nothing runs with settings from a matrix that did not verify: the stage halts the run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from xcompat.pipeline.context import RunContext
from xcompat.pipeline.local import StageResult, load_json
from xcompat.settings import is_ci


@dataclass(frozen=True)
class VerifyStage:
    name: str = "verify"
    runs_when_halted: bool = False

    def run(self, context: RunContext) -> StageResult:
        p, cfg = context.pipe, context.cfg
        if not cfg.signed or cfg.allowed_signers is None:
            return StageResult(name="verify", status="skipped",
                               detail="unsigned matrix: not verified (a local run only; CI refuses it)")
        argv: list[str | os.PathLike[str]] = [
            "matrix", "verify", cfg.matrix, "--allowed-signers", cfg.allowed_signers,
            "--json", p.path("verify.json")]
        if cfg.trust_ref:
            argv += ["--trust-ref", cfg.trust_ref]
        result = p.run_command("verify", p.xcompat(*argv), outputs=[p.path("verify.json")])
        if result.status == "passed":
            verified = (load_json(p.path("verify.json")) or {}).get("sha256")
            if verified != context.settings.matrix_sha256:
                result.status = "error"
                result.detail = (f"the matrix changed while the run read it (verified sha256 {verified}, "
                                 f"settings from {context.settings.matrix_sha256})")
        if result.status != "passed" and is_ci(p.env):
            context.halted = "the matrix signature did not verify"
        return result


STAGE = VerifyStage()
