"""``xcompat stage contracts-runtime-libraries``: the shared objects a fresh interpreter of the
cell maps once it imported the cell's wheel.

The cell's frameworks and its wheel are installed first, as for the tests; then the wheel's
top-level packages and compiled modules (read from its file list) are imported in a fresh
interpreter and its ``/proc/self/maps`` is described, joined by what the test processes
mapped at their end when the job's test stage ran first (its ``test.json`` in the cell's
results folder; ``sources`` in the result says whether it was read). No baseline is compared here (the job
has none): ``new_findings`` is absent, so under ``contracts.runtime-libraries: gate`` every
finding counts.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass

from packaging.utils import parse_wheel_filename

from xcompat.interpreters.fit import installable_wheel
from xcompat.pipeline.ci.commands import bound_to_plan
from xcompat.pipeline.ci.step import CiInputs, CiStep, StageRefused
from xcompat.pipeline.stages.contracts_runtime_libraries import modules_of
from xcompat.results.contracts import LIBRARIES

MAX_MEMBERS = 100_000  # a wheel's file list read for its module names


@dataclass(frozen=True)
class RuntimeLibrariesStage:
    name: str = LIBRARIES.kind

    def step(self, inputs: CiInputs) -> CiStep:
        bound_to_plan(inputs)
        wheel = installable_wheel(inputs.wheels)
        if wheel is None:
            raise StageRefused(f"no wheel in {inputs.wheels} fits this Python", 2)
        try:
            with zipfile.ZipFile(wheel) as archive:
                members = archive.infolist()
                if len(members) > MAX_MEMBERS:
                    raise StageRefused(f"{wheel.name} lists over {MAX_MEMBERS} files", 2)
                modules = modules_of(m.filename for m in members if not m.is_dir())
        except (OSError, zipfile.BadZipFile) as exc:
            raise StageRefused(f"{wheel.name} is not a readable wheel: {exc}", 2) from None
        if not modules:
            raise StageRefused(f"{wheel.name} has no module to import", 2)
        result = inputs.cell_dir / f"{LIBRARIES.kind}.json"
        argv = ["contracts", "libraries", "--project", str(parse_wheel_filename(wheel.name)[0]), "-o", str(result)]
        for module in modules:
            argv += ["--import", module]
        if inputs.cell:
            argv += ["--cell", inputs.cell]
        tests = inputs.cell_dir / "test.json"
        if tests.is_file():
            argv += ["--tests-result", str(tests)]
        return CiStep(argv=argv, result=result, install=True, with_wheel=True)


STAGE = RuntimeLibrariesStage()
