"""``xcompat stage gate``: the release gate over the plan and every cell's results.

With ``verify`` the matrix's signature is checked against the trust list of a ref the change
cannot edit (the trust-ref input, else the pull request's base commit); ``verify: false`` is
the explicit, documented choice to judge the plan as it is.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

from xcompat.pipeline.ci.step import CiInputs, CiStep


@dataclass(frozen=True)
class GateStage:
    name: str = "gate"

    def step(self, inputs: CiInputs) -> CiStep:
        result = inputs.out / "gate.json"
        argv = ["gate", "--plan", str(inputs.plan_path), "--results", str(inputs.results), "--out", str(result),
                "--git-dir", inputs.project_dir]
        for flag, value in (("--abi", inputs.abi_diff), ("--coverage", inputs.coverage_file),
                            ("--dist", inputs.dist), ("--tag", inputs.tag), ("--previous-tag", inputs.previous_tag)):
            if value:
                argv += [flag, value]
        argv += _trust(inputs) if inputs.verify else ["--insecure-no-verify"]
        for kind in inputs.require_kinds.split(","):
            kind = "".join(kind.split())
            if kind:
                argv += ["--require-kind", kind]
        return CiStep(argv=argv, result=result)


def _trust(inputs: CiInputs) -> list[str]:
    argv = ["--matrix", str(inputs.in_project(inputs.matrix)),
            "--allowed-signers", str(inputs.in_project(inputs.allowed_signers))]
    if inputs.revoked:
        argv += ["--revoked", str(inputs.in_project(inputs.revoked))]
    if inputs.trust_ref:
        _fetch(inputs.project_dir, inputs.trust_ref)
        argv += ["--trust-ref", inputs.trust_ref]
    if inputs.repository:
        argv += ["--repo", inputs.repository]
    return argv


def _fetch(project: str, ref: str) -> None:
    """Fetch the trust ref when it is not a commit here; a failed fetch is reported by the gate
    itself (the trust ref is not a commit here)."""
    git = ["git", "-C", project]
    known = subprocess.run([*git, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                           stdout=subprocess.DEVNULL, check=False)
    if known.returncode != 0:
        subprocess.run([*git, "fetch", "--no-tags", "--depth=1", "origin", ref], check=False)


STAGE = GateStage()
