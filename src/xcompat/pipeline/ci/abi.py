"""``xcompat stage abi``: the ABI diff of two builds, with the verified plan's ``abi.bumps`` and ``abi.gate``."""

from __future__ import annotations

from dataclasses import dataclass

from xcompat.outputs import write_bytes
from xcompat.pipeline.ci.commands import plan_settings
from xcompat.pipeline.ci.step import CiInputs, CiStep, StageRefused


@dataclass(frozen=True)
class AbiStage:
    name: str = "abi"

    def step(self, inputs: CiInputs) -> CiStep:
        result = inputs.out / "abi-diff.json"
        if not inputs.abi_old or not inputs.abi_new:
            raise StageRefused("the abi stage needs abi-old and abi-new", 2)
        argv = ["abi", "diff", inputs.abi_old, inputs.abi_new, "--format", "markdown", "--output", str(result)]
        if inputs.plan_path.is_file() or inputs.matrix_sha256:
            policy = inputs.out / ".abi-policy.json"
            write_bytes(policy, plan_settings(inputs, "abi-policy", f"could not read the ABI policy from "
                                              f"{inputs.plan_path}").encode("utf-8"))
            argv += ["--policy", str(policy)]
        return CiStep(argv=argv, result=result)


STAGE = AbiStage()
