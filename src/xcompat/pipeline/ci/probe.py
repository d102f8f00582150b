"""``xcompat stage probe``: the cell runner's device stack, described and checked by ``xcompat probe``.

The same command the probe stage of ``xcompat run`` runs, with the cell's wheel (the one that
fits this Python) so that what it needs from the device stack is checked too.
"""

from __future__ import annotations

from dataclasses import dataclass

from xcompat.pipeline.ci.step import CiInputs, CiStep


@dataclass(frozen=True)
class ProbeStage:
    name: str = "probe"

    def step(self, inputs: CiInputs) -> CiStep:
        result = inputs.cell_dir / "probe.json"
        argv = ["probe", "-o", str(result)]
        if inputs.cell:
            argv += ["--cell-id", inputs.cell]
        from xcompat.interpreters.fit import installable_wheel

        wheel = installable_wheel(inputs.wheels)
        if wheel is not None:
            argv += ["--wheel", str(wheel)]
        return CiStep(argv=argv, result=result, install=True, cell_python=bool(inputs.cell))


STAGE = ProbeStage()
