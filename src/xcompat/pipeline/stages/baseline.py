"""The baseline stage of ``xcompat run``: the last release the ABI stage diffs against.

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
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from xcompat.errors import XcompatError
from xcompat.pipeline.builds import finish_build, start_build
from xcompat.pipeline.context import RunContext
from xcompat.pipeline.local import RunningCommand, StageResult

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


def start_baseline(context: RunContext) -> None:
    """Find the baseline and, when it has to be built, start its build without waiting for it.

    The build stage calls this first, so that the baseline builds alongside the project (its
    own log, logs/baseline.log, and its own work folder); :func:`run_baseline`, the baseline
    stage, then waits for it. Called again, it does nothing."""
    if context.baseline_started is None:
        context.baseline_started = _prepare(context)


@dataclass(frozen=True)
class BaselineStage:
    name: str = "baseline"
    runs_when_halted: bool = False

    def run(self, context: RunContext) -> StageResult:
        start_baseline(context)
        started = context.baseline_started
        if isinstance(started, _Building):
            return _finish(context, started)
        assert isinstance(started, StageResult)
        return started


def _prepare(context: RunContext) -> StageResult | _Building:
    base = context.cfg.baseline
    if base is None:
        return _from_git(context)
    from xcompat.pipeline.preflight import baseline_kind

    try:
        kind = baseline_kind(base)  # checked before the first build; looked at again in case it changed since
    except XcompatError as exc:
        return _none(context, "error", str(exc))
    if kind == "project":
        return _start(context, base, f"the project {base}")
    if kind == "sdist":
        from xcompat.pipeline.baseline_ref import extract_sdist

        try:
            source = extract_sdist(base, context.pipe.path(SOURCE_DIR))
        except XcompatError as exc:
            return _none(context, "error", f"the sdist {base.name} could not be extracted: {exc}")
        return _start(context, source, f"the sdist {base.name}")
    context.baseline_path = base
    return StageResult(name="baseline", status="passed", detail=f"the {_KIND_WORDS[kind]} {base}, used as it is")


_KIND_WORDS = {"wheel": "wheel", "wheels": "folder of wheels", "snapshot": "ABI snapshot"}


def _from_git(context: RunContext) -> StageResult | _Building:
    """No --baseline: the matrix's abi.baseline (last release tag or base branch), built from git."""
    from xcompat.pipeline.baseline_ref import export_ref, resolve_baseline_ref

    which = context.settings.abi.baseline
    ref, what = resolve_baseline_ref(context.cfg.project, which)
    if ref is None:
        return _none(context, "skipped", f"abi.baseline {which}: {what}; pass --baseline PATH to diff against one")
    try:
        source = export_ref(context.cfg.project, ref, context.pipe.path(SOURCE_DIR))
    except XcompatError as exc:
        return _none(context, "error", f"abi.baseline {which}: {exc}")
    return _start(context, source, f"abi.baseline {which}: {what}")


def _start(context: RunContext, source: Path, what: str) -> _Building:
    """Start building the baseline's sources as the project is built, into a hidden work folder."""
    work = context.pipe.path(BUILD_DIR)
    return _Building(running=start_build(context, "baseline", source, work), work=work, what=what)


def _finish(context: RunContext, building: _Building) -> StageResult:
    """Wait for the baseline's build; its wheels go to ``baseline/``."""
    work, what = building.work, building.what
    result = finish_build(context, building.running, work)
    wheels = sorted(work.glob("*.whl"))
    if result.status != "passed" or not wheels:
        why = result.detail or "its build produced no wheel"
        return _none(context, result.status if result.status != "passed" else "error",
                     f"{what}: the baseline's build failed: {why}", result)
    folder = context.pipe.path(WHEELS_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    for wheel in wheels:
        os.replace(wheel, folder / wheel.name)
    context.baseline_path = folder
    result.detail = f"{what}: built {', '.join(w.name for w in wheels)}"
    return result


def _none(context: RunContext, status: str, why: str, result: StageResult | None = None) -> StageResult:
    """No baseline: why, for the ABI stage to say."""
    context.baseline_missing = why
    if result is None:
        return StageResult(name="baseline", status=status, detail=why)
    result.status, result.detail = status, why
    return result


STAGE = BaselineStage()
