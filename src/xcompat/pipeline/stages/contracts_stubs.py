"""The stubs stage: the ``.pyi`` stubs the run's wheel ships against its runtime modules, in the cell.

``xcompat contracts stubs`` (mypy's stubtest) on the wheel as the test stage installed it,
run from the project's folder so that its allowlist, ``.xcompat/stubtest-allowlist.txt``,
is the project's own. A wheel with neither ``.pyi`` stubs nor ``py.typed`` has nothing to
check; without mypy (the ``contracts`` extra) the stage is skipped and says so. How the result
counts is the matrix's ``contracts.stubs`` (``xcompat.results.contracts``).

A finding is reported once, by the stage whose question it answers: stub ≠ runtime of one
release is this stage's, old ≠ new between releases the ABI stage's. An object the run's ABI
diff reports as removed or with a changed signature (its runtime changed between the releases,
checked against the imported packages) is the ABI stage's: a stub finding on it moves to
``reported_by_abi`` and neither fails nor gates here.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass

from xcompat import jsonio
from xcompat.contracts.allowlist import DEFAULT as ALLOWLIST
from xcompat.contracts.stubs import stubbed_modules, typed_packages
from xcompat.pipeline.context import RunContext
from xcompat.pipeline.local import StageResult
from xcompat.pipeline.stages.test import install_site
from xcompat.results.contracts import STUBS, abi_claims, hand_to_abi


@dataclass(frozen=True)
class StubsStage:
    name: str = STUBS.kind
    runs_when_halted: bool = False

    def run(self, context: RunContext) -> StageResult:
        site = install_site(context)
        if site is None:
            return StageResult(name=self.name, status="skipped", detail="not run: no wheel (the build failed)")
        if not stubbed_modules(site) and not typed_packages(site):
            return StageResult(name=self.name, status="skipped",
                               detail="not run: the wheel ships no .pyi stubs and no py.typed")
        if importlib.util.find_spec("mypy") is None:
            return StageResult(name=self.name, status="skipped",
                               detail="not run: mypy is not installed (pip install 'xcompat[contracts]')")
        p = context.pipe
        result = context.result_path(self.name)
        result.parent.mkdir(parents=True, exist_ok=True)
        argv: list[str | os.PathLike[str]] = ["contracts", "stubs", site, "-o", result]
        allowlist = context.cfg.project / ALLOWLIST
        if allowlist.is_file():
            argv += ["--allowlist", allowlist]
        if context.cell_id:
            argv += ["--cell", context.cell_id]
        done = p.run_command(self.name, p.xcompat(*argv, safe_path=True), cwd=context.cfg.project,
                             outputs=[result])
        abi = context.result_path("abi")
        if done.status == "passed" and result.is_file() and abi.is_file():
            doc = jsonio.read_json(result, schema=STUBS.kind)
            if hand_to_abi(doc, abi_claims(jsonio.read_json(abi))):
                jsonio.write_json(result, doc, schema=STUBS.kind)
                done.detail = str(doc["summary"])
        return done


STAGE = StubsStage()
