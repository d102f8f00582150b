"""The baseline and abi stages of ``xcompat run``: the last release, and the diff against it.

The baseline is ``--baseline`` (checked before the first build, ``xcompat.pipeline.preflight``)
or, without it, the matrix's ``abi.baseline`` from the project's git history. A project folder,
an sdist (extracted with its members checked) or a git ref is built as the project is, into a
hidden work folder, so its build record is never read as a second result of the project's
own build; its wheels go to ``baseline/``. Where this process may use a second CPU, that build
starts with the build stage and runs alongside the project's (each with its own log and work
folder), and the baseline stage waits for what is left of it. A wheel, folder of wheels or ABI snapshot is used as
it is. The baseline gets its own result, kind ``baseline``, ``passed`` with what it is, or
``skipped`` with why there is none: that it could not be found or built is the ABI stage's
verdict to give, not a failure of the project.

Without a baseline the ABI stage does not run and says why ("not run: ..."): ``skipped``, or
``failed`` when the matrix sets ``abi.baseline-required: true``. It never claims "no change".
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from xcompat import jsonio
from xcompat.errors import XcompatError
from xcompat.pipeline.local import RunningCommand, StageResult

if TYPE_CHECKING:
    from xcompat.pipeline.runner import Stages

# Where a baseline is built (hidden: the report does not read hidden folders) and where its
# wheels end up.
BUILD_DIR = ".baseline-build"
SOURCE_DIR = ".baseline-src"
WHEELS_DIR = "baseline"


@dataclass(frozen=True)
class _Building:
    """A baseline whose build was started and not yet waited for."""

    running: RunningCommand
    work: Path
    what: str


def start_baseline(stages: Stages) -> None:
    """Find the baseline and, when it has to be built, start its build without waiting for it.

    The build stage calls this first, so that the baseline builds alongside the project (its
    own log, logs/baseline.log, and its own work folder); :func:`run_baseline`, the baseline
    stage, then waits for it. Called again, it does nothing."""
    if stages.baseline_started is None:
        stages.baseline_started = _prepare(stages)


def run_baseline(stages: Stages) -> StageResult:
    start_baseline(stages)
    started = stages.baseline_started
    if isinstance(started, _Building):
        return _finish(stages, started)
    return started


def _prepare(stages: Stages) -> StageResult | _Building:
    base = stages.cfg.baseline
    if base is None:
        return _from_git(stages)
    from xcompat.pipeline.preflight import baseline_kind

    try:
        kind = baseline_kind(base)  # checked before the first build; looked at again in case it changed since
    except XcompatError as exc:
        return _none(stages, "error", str(exc))
    if kind == "project":
        return _start(stages, base, f"the project {base}")
    if kind == "sdist":
        from xcompat.pipeline.baseline_ref import extract_sdist

        try:
            source = extract_sdist(base, stages.pipe.path(SOURCE_DIR))
        except XcompatError as exc:
            return _none(stages, "error", f"the sdist {base.name} could not be extracted: {exc}")
        return _start(stages, source, f"the sdist {base.name}")
    stages.baseline_path = base
    return StageResult(name="baseline", status="passed", detail=f"the {_KIND_WORDS[kind]} {base}, used as it is")


_KIND_WORDS = {"wheel": "wheel", "wheels": "folder of wheels", "snapshot": "ABI snapshot"}


def _from_git(stages: Stages) -> StageResult | _Building:
    """No --baseline: the matrix's abi.baseline (last release tag or base branch), built from git."""
    from xcompat.pipeline.baseline_ref import export_ref, resolve_baseline_ref

    which = stages.settings.abi.baseline
    ref, what = resolve_baseline_ref(stages.cfg.project, which)
    if ref is None:
        return _none(stages, "skipped", f"abi.baseline {which}: {what}; pass --baseline PATH to diff against one")
    try:
        source = export_ref(stages.cfg.project, ref, stages.pipe.path(SOURCE_DIR))
    except XcompatError as exc:
        return _none(stages, "error", f"abi.baseline {which}: {exc}")
    return _start(stages, source, f"abi.baseline {which}: {what}")


def _start(stages: Stages, source: Path, what: str) -> _Building:
    """Start building the baseline's sources as the project is built, into a hidden work folder."""
    work = stages.pipe.path(BUILD_DIR)
    return _Building(running=stages.start_build("baseline", source, work), work=work, what=what)


def _finish(stages: Stages, building: _Building) -> StageResult:
    """Wait for the baseline's build; its wheels go to ``baseline/``."""
    work, what = building.work, building.what
    result = stages.finish_build(building.running, work)
    wheels = sorted(work.glob("*.whl"))
    if result.status != "passed" or not wheels:
        why = result.detail or "its build produced no wheel"
        return _none(stages, result.status if result.status != "passed" else "error",
                     f"{what}: the baseline's build failed: {why}", result)
    folder = stages.pipe.path(WHEELS_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    for wheel in wheels:
        os.replace(wheel, folder / wheel.name)
    stages.baseline_path = folder
    result.detail = f"{what}: built {', '.join(w.name for w in wheels)}"
    return result


def _none(stages: Stages, status: str, why: str, result: StageResult | None = None) -> StageResult:
    """No baseline: why, for the ABI stage to say."""
    stages.baseline_missing = why
    if result is None:
        return StageResult(name="baseline", status=status, detail=why)
    result.status, result.detail = status, why
    return result


def run_abi(stages: Stages) -> StageResult:
    """``xcompat abi diff`` of the baseline against the new wheels, with the matrix's abi policy."""
    p = stages.pipe
    base = stages.baseline_path
    if base is None:
        required = stages.settings.abi.baseline_required
        why = stages.baseline_missing or "no baseline"
        return StageResult(name="abi", status="failed" if required else "skipped",
                           detail=f"not run: {why}" + (" (abi.baseline-required: true)" if required else ""))
    if not stages.wheels:
        return StageResult(name="abi", status="skipped", detail="not run: no wheel to diff (the build failed)")
    policy = p.path(".inputs", "abi-policy.json")  # an input, not a result: a hidden folder
    jsonio.write_json(policy, stages.settings.abi_policy_document())
    argv: list[str | os.PathLike[str]] = [
        "abi", "diff", base, p.path("wheels"), "--format", "markdown", "-o", p.path("abi.json"),
        "--against-version", "--policy", policy]
    if stages.cell_id:
        argv += ["--cell-id", stages.cell_id]
    return p.run_command("abi", p.xcompat(*argv), outputs=[p.path("abi.json")])


def baseline_envelope(result: StageResult) -> dict[str, object]:
    """The baseline's own result: ``passed`` with what was compared against, else ``skipped``
    with why (its absence is judged by the ABI stage, red only where the matrix requires it)."""
    return {"version": 1, "kind": "baseline", "cell_id": None,
            "status": "passed" if result.status == "passed" else "skipped",
            "summary": result.detail or f"baseline {result.status}", "stage": "baseline", "log": result.log}
