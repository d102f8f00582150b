"""The stages' side of an emulated lane (``xcompat run --arch``): what changes, stage by stage.

* plan: the cells of the lane's arch and its root's Python (other Pythons: "not run here");
* build: ``xcompat build --arch`` (``xcompat.pipeline.builds``);
* test: the same ``xcompat test`` command, run in the lane's root at its CPU model, its result
  recording the emulation (arch, QEMU version, CPU model, build route, time);
* abi: natively (a foreign ELF file is read as data); the ISA floor scan for the cell's arch;
* kernels without torch in the root, and coverage: not run, with the reason.

Each function here is a no-op (or returns the native answer) when the run has no lane.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from xcompat import jsonio
from xcompat.errors import InputError
from xcompat.pipeline.context import RunContext
from xcompat.pipeline.local import StageResult
from xcompat.settings import Settings

ISA_RESULT = "isa.json"
# Stages that load the wheel's compiled code (or describe this machine) in a host process.
IMPORTS_ON_HOST = {
    "probe": "it describes the devices and frameworks",
    "contracts-runtime-libraries": "it imports the wheel",
    "contracts-stubs": "stubtest imports the wheel's modules",
}


def lane_settings(settings: Settings) -> Settings:
    """The settings of a lane's run: coverage is measured by the native cells, so a lane neither
    runs it nor is judged by its thresholds (else every lane of a project that sets them is red)."""
    return replace(settings, coverage=replace(settings.coverage, overall=None, diff=None))


def plan_target(context: RunContext, arch: str, python: str, backends: list[str]) -> tuple[str, str, list[str]]:
    """(arch, Python, backends) the plan is made for: the lane's, else the given native ones."""
    lane = context.cfg.lane
    if lane is None:
        return arch, python, backends
    return lane.name, lane.python, ["cpu"]  # a lane has no device but its CPU


def elsewhere_python(context: RunContext, python: str, here: str) -> str:
    """Why a cell of ``python`` is not run here."""
    lane = context.cfg.lane
    if lane is None:
        return f"Python {python} (this is {here})"
    return f"Python {python}: the emulated {lane.name} root has only Python {lane.python}"


def elsewhere_arch(context: RunContext, where: str, here: str) -> str:
    """Why a cell of another platform or arch (``where``: linux/x86_64) is not run here."""
    lane = context.cfg.lane
    if lane is None:
        return f"{where} (this is {here})"
    return f"{where} (this run is the emulated {lane.name} lane; without --arch it runs this machine's own)"


def skip_reason(context: RunContext, stage: str) -> str | None:
    """Why ``stage`` is not run on the lane (None: it runs)."""
    lane = context.cfg.lane
    if lane is None:
        return None
    if stage == "coverage":
        return (f"not run on the emulated {lane.name} lane: coverage is measured by the native cells "
                "(an instrumented build under QEMU proves nothing more)")
    if stage in IMPORTS_ON_HOST:
        return (f"not run on the emulated {lane.name} lane: {IMPORTS_ON_HOST[stage]} on this machine, "
                f"which cannot load {lane.name} code")
    if stage == "kernels":  # not passed either way: nothing was checked
        if not lane.has_torch:
            return (f"not run: the emulated {lane.name} root has no torch, which the conformance kernels "
                    "run on (not passed: nothing was checked)")
        return (f"not run: the kernels stage runs on this machine only, not yet in the emulated {lane.name} "
                "root (not passed: nothing was checked)")
    return None


def build_options(context: RunContext) -> list[str]:
    """What ``xcompat build`` is given for the lane."""
    lane = context.cfg.lane
    return [] if lane is None else ["--arch", lane.name]


def run_tests(context: RunContext, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path,
              outputs: Sequence[Path]) -> StageResult:
    """The test stage's command (``argv``) in the lane's root; the result records the emulation."""
    lane = context.cfg.lane
    assert lane is not None
    p = context.pipe
    context.rerun = None  # the native rerun command cannot load the lane's wheel
    binds = [p.stage_dir, context.cfg.project, *(o.parent for o in outputs)]
    if context.site is not None:
        binds.append(context.site)
    # the host's own PYTHONPATH means nothing in the root: only the wheels' folder goes in
    inner = {**env, "PYTHONPATH": str(context.site) if context.site is not None else ""}
    result = p.run_command("test", lane.command(argv, env=inner, cwd=cwd, binds=binds), cwd=cwd,
                           outputs=list(outputs))
    record_emulation(context, context.result_path("test"), seconds=result.elapsed)
    return result


def emulation(context: RunContext, **extra: Any) -> dict[str, Any] | None:
    """The ``emulation`` object of the run's results: the lane and how its wheel was built."""
    lane = context.cfg.lane
    if lane is None:
        return None
    found = {**lane.describe(), **extra}
    try:
        build = jsonio.read_json(context.result_path("build"))
    except (InputError, OSError):
        build = None  # no build record: the report says why the build has none
    built = build.get("emulation") if isinstance(build, dict) else None
    if isinstance(built, dict):
        found.update({k: built[k] for k in ("build", "build_seconds", "why_emulated") if k in built})
    return found


def record_emulation(context: RunContext, result: Path, *, seconds: float) -> None:
    """Add the ``emulation`` object to a result the lane wrote (test-result schema). The file
    came out of the root, where the project's code ran: it is read bounded, and one that is not
    a valid result is left as it is, for the report to refuse."""
    try:
        document = jsonio.read_json(result)
        found = emulation(context, seconds=round(seconds, 3))
        if isinstance(document, dict) and found is not None:
            jsonio.write_json(result, {**document, "emulation": found}, schema="test-result")
    except (InputError, OSError):
        return


def isa_floor(context: RunContext, arch: str) -> str | None:
    """The ISA floor of ``arch``'s wheels: the lane's ``--floor``, else ``abi.isa-floors``."""
    lane = context.cfg.lane
    if lane is not None and lane.name == arch and lane.floor is not None:
        return lane.floor
    return context.settings.abi.isa_floors.get(arch)


def isa_scan(context: RunContext) -> StageResult | None:
    """``xcompat abi isa`` of the run's wheels against the floor of the cell's arch, into isa.json
    (None: no floor set for that arch, or no wheel). The scan reads the machine code natively."""
    from xcompat.isa.levels import all_levels
    from xcompat.model import runner_arch

    lane = context.cfg.lane
    arch = lane.name if lane is not None else runner_arch()
    floor = isa_floor(context, arch)
    if floor is None or not context.wheels:
        return None
    p = context.pipe
    out = p.path(ISA_RESULT)
    levels = all_levels().get(arch)
    if levels is None:  # the run at the floor's CPU model is the lane's only floor check
        return StageResult(name="isa", status="skipped",
                           detail=f"no machine-code scan of {arch} code (the scan reads {', '.join(all_levels())})")
    if floor not in levels.levels:  # a typo in the matrix must not read as a clean scan
        jsonio.write_json(out, {
            "version": 1, "kind": "isa", "cell_id": context.cell_id, "status": "failed", "arch": arch,
            "floor": floor, "objects": [],
            "summary": f"abi.isa-floors names {floor} for {arch}, which is not one of its levels: "
                       f"{', '.join(levels.levels)}; fix the matrix"}, schema="isa")
        return StageResult(name="isa", status="failed", detail=f"unknown ISA level {floor} for {arch}")
    argv: list[str | os.PathLike[str]] = ["abi", "isa", *context.wheels, "--floor", floor, "--json", out]
    if context.cell_id:
        argv += ["--cell-id", context.cell_id]
    return p.run_command("isa", p.xcompat(*argv), outputs=[out])
