"""``xcompat stage contracts-stubs``: the cell's wheel's ``.pyi`` stubs against its runtime (stubtest).

The cell's frameworks are installed first (importing the wheel may need them); the wheel that
fits this Python is checked from the wheelhouse, unpacked with xcompat's archive rules, with
the project's ``.xcompat/stubtest-allowlist.txt`` when it has one. The result is reported and
judged under the matrix's ``contracts.stubs`` by the report and the gate, not here: the command
exits 0 on findings.
"""

from __future__ import annotations

from dataclasses import dataclass

from xcompat.contracts.allowlist import DEFAULT as ALLOWLIST
from xcompat.interpreters.fit import installable_wheel
from xcompat.pipeline.ci.commands import bound_to_plan
from xcompat.pipeline.ci.step import CiInputs, CiStep, StageRefused
from xcompat.results.contracts import STUBS


@dataclass(frozen=True)
class StubsStage:
    name: str = STUBS.kind

    def step(self, inputs: CiInputs) -> CiStep:
        bound_to_plan(inputs)
        wheel = installable_wheel(inputs.wheels)
        if wheel is None:
            raise StageRefused(f"no wheel in {inputs.wheels} fits this Python", 2)
        result = inputs.cell_dir / f"{STUBS.kind}.json"
        argv = ["contracts", "stubs", str(wheel), "-o", str(result)]
        allowlist = inputs.in_project(str(ALLOWLIST))
        if allowlist.is_file():
            argv += ["--allowlist", str(allowlist.resolve())]
        if inputs.cell:
            argv += ["--cell", inputs.cell]
        return CiStep(argv=argv, result=result, install=True)


STAGE = StubsStage()
