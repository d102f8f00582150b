"""The stages' side of an emulated lane (``xcompat run --arch``): what changes, stage by stage.

* plan: the cells of the lane's arch and its root's Python (other Pythons: "not run here");
* build: ``xcompat build --arch`` (``xcompat.pipeline.builds``);
* test: the same ``xcompat test`` command, run in the lane's root at its CPU model, its result
  recording the emulation (arch, QEMU version, CPU model, build route, time); a lane at an ISA
  floor runs the tests a second time at the feature-rich CPU model, and the one result holds
  both runs, each failure naming the model it happened on;
* kernels: the same ``xcompat kernels run`` in the root (torch installed there from a cached
  wheel), for an arch with a torch wheel; the project's own operators are not checked there;
* abi: natively (a foreign ELF file is read as data); the ISA floor scan for the cell's arch;
* coverage: not run, with the reason.

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
# a test outcome that fails the run, and the most failed tests a run's record lists
BAD_OUTCOMES = ("failed", "error", "crashed", "timeout", "leaked")
MAX_LISTED = 50
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
    if stage == "kernels" and lane.torch is None and not lane.has_torch:  # not passed: nothing was checked
        return (f"not run: there is no torch for {lane.name} (PyPI publishes torch for x86_64 and aarch64), "
                "which the conformance kernels run on (not passed: nothing was checked)")
    return None


def build_options(context: RunContext) -> list[str]:
    """What ``xcompat build`` is given for the lane."""
    lane = context.cfg.lane
    return [] if lane is None else ["--arch", lane.name]


def run_tests(context: RunContext, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path,
              outputs: Sequence[Path]) -> StageResult:
    """The test stage's command (``argv``) in the lane's root; the result records the emulation.
    A lane at an ISA floor runs it again at the feature-rich CPU model, into files of its own,
    and the test result becomes both runs' (:func:`merge_runs`)."""
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
    path = context.result_path("test")
    rich = lane.feature_rich()
    if rich is None:
        record_emulation(context, path, seconds=result.elapsed)
        return result
    moved = {str(o): str(o.with_name(f"{o.stem}-{rich.describe()['cpu']}{o.suffix}")) for o in outputs}
    rich_argv = [moved.get(a, a) for a in argv]
    second = p.run_command(f"test-{rich.describe()['cpu']}", rich.command(rich_argv, env=inner, cwd=cwd, binds=binds),
                           cwd=cwd, outputs=[Path(m) for m in moved.values()])
    runs = [run_entry(lane.describe(), path, result.elapsed), run_entry(rich.describe(), Path(moved[str(path)]),
                                                                      second.elapsed)]
    merge_runs(path, Path(moved[str(path)]), runs)
    for made in moved.values():  # merged into the run's own files: a second result would count twice
        Path(made).unlink(missing_ok=True)
    record_emulation(context, path, seconds=result.elapsed + second.elapsed, runs=runs)
    if result.status == "passed" and second.status != "passed":
        result.status, result.detail = second.status, f"at {runs[1]['cpu']}: {second.detail or second.status}"
    return result


def _model(run: Mapping[str, Any]) -> str:
    """``cortex-a57 (armv8.0-a floor)``, ``max``."""
    return f"{run['cpu']} ({run['floor']} floor)" if run.get("floor") else str(run["cpu"])


def _tests(document: Any) -> list[dict[str, Any]] | None:
    tests = document.get("tests") if isinstance(document, dict) else None
    return [t for t in tests if isinstance(t, dict) and isinstance(t.get("nodeid"), str)] \
        if isinstance(tests, list) else None


def run_entry(described: Mapping[str, Any], path: Path, seconds: float) -> dict[str, Any]:
    """One CPU model's test run: the model, its floor, its status and the tests that failed there."""
    try:
        document = jsonio.read_json(path)
    except (InputError, OSError):
        document = None
    tests = _tests(document)
    status = document.get("status") if isinstance(document, dict) else None
    failed = sorted(t["nodeid"] for t in tests or () if t.get("outcome") in BAD_OUTCOMES)
    return {"cpu": str(described["cpu"]), "floor": described.get("floor"),
            "status": status if isinstance(status, str) and tests is not None else "no result",
            "seconds": round(seconds, 3), "failed": failed[:MAX_LISTED]}


def _at(model: str, test: Mapping[str, Any]) -> str:
    crash = test.get("crash")
    signal = crash.get("signal") if isinstance(crash, dict) else None
    said = test.get("message") or (f"{test.get('outcome')} ({signal})" if signal else str(test.get("outcome")))
    return f"at {model}: {said}"


def merge_runs(first: Path, second: Path, runs: Sequence[Mapping[str, Any]]) -> None:
    """The test result at ``first`` becomes the two runs' (``runs``: the floor's, the feature-rich
    model's): each test's worst outcome, its message naming the model it failed on; the counts,
    status and summary of both. Results that are not valid are left as they are, for the report."""
    try:
        floor_doc, rich_doc = jsonio.read_json(first), jsonio.read_json(second)
    except (InputError, OSError):
        return
    floor_tests, rich_tests = _tests(floor_doc), _tests(rich_doc)
    if floor_tests is None or rich_tests is None or not isinstance(floor_doc.get("counts"), dict):
        return
    low, high = _model(runs[0]), _model(runs[1])
    others = {t["nodeid"]: t for t in rich_tests}
    merged = []
    for test in floor_tests:
        other = others.pop(test["nodeid"], None)
        there = other is not None and other.get("outcome") in BAD_OUTCOMES
        if test.get("outcome") in BAD_OUTCOMES:
            test = {**test, "message": _at(low + (f" and at {high}" if there else ""), test)}
        elif there and other is not None:
            test = {**other, "message": _at(f"{high} (not at {low})", other)}
        merged.append(test)
    merged += [{**t, "message": _at(high, t)} for t in others.values() if t.get("outcome") in BAD_OUTCOMES]
    counts = dict.fromkeys(floor_doc["counts"], 0)
    for test in merged:
        if test.get("outcome") in counts:
            counts[test["outcome"]] += 1
    status = floor_doc.get("status")
    if status == "passed" and rich_doc.get("status") in ("failed", "crashed"):
        status = rich_doc["status"]
    summary = f"at {low}: {floor_doc.get('summary', '')}; at {high}: {rich_doc.get('summary', '')}"
    try:
        jsonio.write_json(first, {**floor_doc, "tests": merged, "counts": counts, "status": status,
                                  "summary": summary}, schema="test-result")
    except InputError:
        return


def run_kernels(context: RunContext, argv: Sequence[str], result: Path) -> StageResult:
    """``xcompat kernels run`` (``argv``) in the lane's root, torch installed there first (once).
    Its build of the kernels is cached in a folder of the lane's own, bound into the root. A lane
    at an ISA floor runs them again at the feature-rich CPU model: ``kernels.json`` is the floor's
    run, its ``emulation.runs`` both runs, and either run failing fails the stage."""
    from xcompat.results.kernel_operators import merge, not_run_section, read_kernels, write_merged

    lane = context.cfg.lane
    assert lane is not None
    p = context.pipe
    why = lane.ensure_torch()
    if why is not None:
        return StageResult(name="kernels", status="error", detail=f"no torch in the emulated {lane.name} root: {why}")
    base = os.environ.get("XCOMPAT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "xcompat")
    cache = Path(base) / "lanes" / lane.name
    cache.mkdir(parents=True, exist_ok=True)
    env, binds = {"XCOMPAT_CACHE": str(cache)}, [p.stage_dir, cache, result.parent]
    runner = p.run_command("kernels", lane.command(list(argv), env=env, cwd=p.stage_dir, binds=binds),
                           cwd=p.stage_dir, outputs=[result])
    seconds, runs = runner.elapsed, []
    rich = lane.feature_rich()
    if rich is not None:
        cpu = rich.describe()["cpu"]
        other = result.with_name(f"{result.stem}-{cpu}{result.suffix}")
        second = p.run_command(f"kernels-{cpu}", rich.command([str(other) if a == str(result) else a for a in argv],
                                                             env=env, cwd=p.stage_dir, binds=binds),
                               cwd=p.stage_dir, outputs=[other])
        runs = [kernels_entry(lane.describe(), result, runner.elapsed),
                kernels_entry(rich.describe(), other, second.elapsed)]
        other.unlink(missing_ok=True)  # its facts are in runs; a second kernels result would count twice
        seconds += second.elapsed
        if runner.status == "passed" and second.status != "passed":
            runner.status, runner.detail = second.status, f"at {cpu}: {second.detail or second.status}"
    record_emulation(context, result, seconds=seconds, schema="kernels", runs=runs)
    document = read_kernels(result)
    if document is not None:  # the operators need the wheel loaded in the root, which is not done yet
        section = not_run_section(f"not checked on the emulated {lane.name} lane (the native cells check them)",
                                  context.settings.tests.operators, counts_against=False)
        try:
            write_merged(result, merge(document, section))
        except InputError:
            return runner
    return runner


def kernels_entry(described: Mapping[str, Any], path: Path, seconds: float) -> dict[str, Any]:
    """One CPU model's kernels run: the model, its floor, its status and the kernels that failed."""
    try:
        document = jsonio.read_json(path)
    except (InputError, OSError):
        document = None
    kernels = document.get("kernels") if isinstance(document, dict) else None
    status = document.get("status") if isinstance(document, dict) else None
    failed = sorted(str(k.get("name")) for k in kernels if isinstance(k, dict) and k.get("status") == "failed") \
        if isinstance(kernels, list) else []
    return {"cpu": str(described["cpu"]), "floor": described.get("floor"),
            "status": status if isinstance(status, str) and kernels is not None else "no result",
            "seconds": round(seconds, 3), "failed": failed[:MAX_LISTED]}


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


def record_emulation(context: RunContext, result: Path, *, seconds: float, schema: str = "test-result",
                     runs: Sequence[Mapping[str, Any]] = ()) -> None:
    """Add the ``emulation`` object to a result the lane wrote (``schema``: test-result, kernels;
    ``runs``: each CPU model's test run). The file came out of the root, where the project's code
    ran: it is read bounded, and one that is not a valid result is left as it is, for the report
    to refuse."""
    try:
        document = jsonio.read_json(result)
        found = emulation(context, seconds=round(seconds, 3))
        if found is not None and runs:
            found["runs"] = list(runs)
        if isinstance(document, dict) and found is not None:
            jsonio.write_json(result, {**document, "emulation": found}, schema=schema)
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
