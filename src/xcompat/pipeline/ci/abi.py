"""``xcompat stage abi``: the ABI diff of two builds, with the verified plan's ``abi.bumps`` and ``abi.gate``.

With ``abi-old`` and ``abi-new`` it diffs those. In a cell's job without them (a pull request)
it diffs the cell's wheels against the baseline the matrix names (``abi.baseline``), made in
CI, never by hand: the last release tag (or the base branch) is exported from git, built with
this job's Python and snapshotted (``xcompat abi snapshot``) into the baseline cache folder,
``$XCOMPAT_ABI_CACHE`` or ``OUTPUT-DIR/abi-baseline``, once per release and cell; a later run
that finds the snapshot there (the workflows keep that folder in the CI cache) diffs against it
at once. Without a baseline (no release yet) the stage is skipped with the reason, or fails
when the matrix sets ``abi.baseline-required: true``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from xcompat.outputs import write_bytes
from xcompat.pipeline.ci.commands import plan_settings
from xcompat.pipeline.ci.step import CiInputs, CiStep, StageRefused


@dataclass(frozen=True)
class AbiStage:
    name: str = "abi"

    def step(self, inputs: CiInputs) -> CiStep:
        if inputs.abi_old and inputs.abi_new:
            return self._diff(inputs, inputs.abi_old, inputs.abi_new, inputs.out / "abi-diff.json")
        if not inputs.cell or inputs.abi_old or inputs.abi_new:
            raise StageRefused("the abi stage needs abi-old and abi-new, or a cell (its wheels are diffed "
                               "against the matrix's abi.baseline)", 2)
        return self._against_baseline(inputs)

    def _diff(self, inputs: CiInputs, old: str, new: str, result: Path, *, cell: bool = False) -> CiStep:
        argv = ["abi", "diff", old, new, "--format", "markdown", "--output", str(result)]
        if inputs.plan_path.is_file() or inputs.matrix_sha256:
            policy = inputs.out / ".abi-policy.json"
            write_bytes(policy, plan_settings(inputs, "abi-policy", f"could not read the ABI policy from "
                                              f"{inputs.plan_path}").encode("utf-8"))
            argv += ["--policy", str(policy)]
        if cell:  # as the abi stage of `xcompat run`: the bump is judged against the two versions
            argv += ["--against-version", "--cell-id", inputs.cell]
        return CiStep(argv=argv, result=result)

    def _against_baseline(self, inputs: CiInputs) -> CiStep:
        from xcompat.pipeline.baseline_ref import export_ref, resolve_baseline_ref

        result = inputs.cell_dir / "abi.json"
        settings = json.loads(plan_settings(inputs, "json", f"could not read the abi settings from "
                                            f"{inputs.plan_path}")).get("settings", {})
        which = str(settings.get("abi.baseline", "last-release-tag"))
        required = settings.get("abi.baseline-required") is True
        project = Path(inputs.project_dir).resolve()
        ref, what = resolve_baseline_ref(project, which)
        if ref is None:
            if required:
                raise StageRefused(f"ABI not compared: abi.baseline {which}: {what} (abi.baseline-required: true)", 1)
            return CiStep(argv=[], result=result, skip=f"abi.baseline {which}: {what}")
        # keyed by the commit too: a branch moves, and a tag moved by force is another baseline
        snapshot = baseline_cache(inputs) / f"{inputs.cell}-{_file_word(ref)}-{_commit(project, ref)}.abi.json.gz"
        step = self._diff(inputs, str(snapshot), str(inputs.wheels), result, cell=True)
        if not snapshot.is_file():
            # A folder of the cell's own, emptied first: a workspace that outlives a job (a shell
            # runner's) holds another cell's baseline build, whose wheel the snapshot would take in.
            work = inputs.out / ".abi-baseline-build" / inputs.cell
            shutil.rmtree(work, ignore_errors=True)
            source = export_ref(project, ref, inputs.out / ".abi-baseline-src" / inputs.cell)
            # the baseline is built as the cell's wheel is, with this job's Python, then kept as a snapshot
            step.prelude = [["build", str(source), "--out", str(work), "--backend", "native"],
                            ["abi", "snapshot", str(work), "-o", str(snapshot)]]
        step.install = True  # the cell's frameworks: the baseline compiles against them too
        step.cell_python = True
        print(f"ABI baseline: {what}" + ("" if not snapshot.is_file() else f" (snapshot {snapshot.name}, cached)"))
        return step


def baseline_cache(inputs: CiInputs) -> Path:
    """Where baseline snapshots are kept between runs (the folder the workflows cache)."""
    folder = Path(os.environ.get("XCOMPAT_ABI_CACHE") or inputs.out / "abi-baseline")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _commit(project: Path, ref: str) -> str:
    import subprocess

    done = subprocess.run(["git", "-C", str(project), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                          capture_output=True, text=True, timeout=60, check=False)
    return done.stdout.strip()[:12] or "unknown"


def _file_word(ref: str) -> str:
    """A ref as part of a file name (``refs/tags/v1.2.0`` -> ``v1.2.0``)."""
    name = ref.removeprefix("refs/tags/").removeprefix("refs/remotes/")
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)[:100]


STAGE = AbiStage()
