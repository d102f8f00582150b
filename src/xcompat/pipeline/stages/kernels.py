"""The kernels stage: the runner's conformance kernels, then the project's own torch operators.

The conformance kernels (``xcompat kernels run``, through the fallback chain) prove the runner:
toolchain, device, fallback. They say nothing about the operators the project registers, so
after them the stage checks those (``xcompat kernels operators``) from the wheel the build
stage made, with the samples in the project's ``.xcompat/operators.py``, on each device of the
cell: the CPU, and the cell's accelerator. Both go into one result, ``kernels.json``: the
operators in its ``operators`` section (``xcompat.results.kernel_operators``), whose gating
findings (the matrix's ``tests.operators``) make the stage red. When the project's build
failed, the operators are "not run", never passed.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xcompat.errors import InputError
from xcompat.pipeline.context import RunContext
from xcompat.pipeline.local import StageResult
from xcompat.results.kernel_operators import (
    OPERATORS_TIMEOUT_S,
    SAMPLES,
    DeviceRun,
    build_section,
    check_device,
    device_argv,
    device_run,
    merge,
    not_run_section,
    operator_devices,
    output_detail,
    read_kernels,
    write_merged,
)

__all__ = ["STAGE", "KernelsStage", "merge", "operator_devices", "operators_section", "with_operators"]

@dataclass(frozen=True)
class KernelsStage:
    name: str = "kernels"
    runs_when_halted: bool = False

    def run(self, context: RunContext) -> StageResult:
        from xcompat.results.required import kernels_requirement

        requirement = kernels_requirement(context.settings, context.cfg.facts)
        if not requirement.required:
            return StageResult(name="kernels", status="skipped", detail=f"not required: {requirement.reason}")
        p = context.pipe
        result = context.result_path("kernels")
        argv: list[str | os.PathLike[str]] = ["kernels", "run", "--backend", context.cfg.backend, "--json", result]
        if context.settings.tests.kernels != "all":
            for name in context.settings.tests.kernels:
                argv += ["--kernel", name]
        if context.cell_id:
            argv += ["--cell-id", context.cell_id]
            backend = context.cell_backend()
            if backend and backend != "cpu":
                argv += ["--required-backend", backend]
        if context.cfg.lane is not None:  # an emulated lane: the same command, in the lane's root
            from xcompat.pipeline.lanes import run_kernels

            return run_kernels(context, p.xcompat(*argv), result)
        runner = p.run_command("kernels", p.xcompat(*argv), outputs=[result])
        return with_operators(context, runner, result)


def _samples(context: RunContext) -> Path | None:
    path = context.cfg.project / SAMPLES
    return path if path.is_file() else None


def _no_wheel(context: RunContext) -> tuple[str, bool] | None:
    """Why there is no wheel to check, and whether that counts against the cell; None: there is one."""
    build = next((r for r in context.pipe.results if r.name == "build"), None)
    if build is None:
        return "no wheel to check (the build stage did not run)", False
    if build.status != "passed" or not context.wheels:
        return "no wheel to check (the project's build failed)", True
    return None


def check_on(context: RunContext, site: Path, device: str, samples: Path | None) -> DeviceRun:
    """``xcompat kernels operators`` on ``device``, its log in logs/operators-<device>.log; again
    without an operator that crashed it (logs/operators-<device>-2.log, ...)."""
    p = context.pipe

    def attempt(skip: list[str], tries: int) -> DeviceRun:
        with tempfile.TemporaryDirectory(prefix="xcompat-operators-") as tmp:
            out = Path(tmp) / "operators.json"
            argv = device_argv(site, device, out, samples, context.cell_id, skip)
            name = f"operators-{device.replace(':', '-')}" + (f"-{tries + 1}" if tries else "")
            res = p.run_command(name, p.xcompat(*argv), timeout=OPERATORS_TIMEOUT_S)
            detail = res.detail or res.status
            if res.exit_code not in (None, 0, 1) and res.log:  # the error line, not the details after it
                detail = output_detail(res.exit_code, _tail(p.stage_dir / res.log))
            return device_run(device, res.exit_code, out, detail)

    return check_device(device, attempt)


def _tail(log: Path, size: int = 64 * 1024) -> str:
    try:
        with open(log, "rb") as fh:
            fh.seek(max(0, log.stat().st_size - size))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def operators_section(context: RunContext) -> dict[str, Any]:
    """The ``operators`` section of this run's kernels result."""
    from xcompat.pipeline.stages.test import install_site

    setting = context.settings.tests.operators
    samples = _samples(context)
    shown = str(SAMPLES) if samples is not None else None
    missing = _no_wheel(context)
    if missing is not None:
        reason, counts_against = missing
        return not_run_section(reason, setting, counts_against=counts_against, samples=shown)
    site = install_site(context)
    if site is None:
        return not_run_section("the wheel could not be installed to check it (logs/install.log)", setting,
                               counts_against=True, samples=shown)
    backend = context.cell_backend() or context.cfg.backend
    runs = [check_on(context, site, device, samples) for device in operator_devices(backend)]
    return build_section(runs, setting, shown)


def with_operators(context: RunContext, runner: StageResult, path: Path) -> StageResult:
    """Check the project's operators and add them to the kernels result at ``path``."""
    document = read_kernels(path)
    if document is None:
        runner.detail = "; ".join(filter(None, [runner.detail, "project operators not run: the runner's "
                                                "kernels wrote no result to add them to"]))
        return runner
    section = operators_section(context)
    merged = merge(document, section)
    try:
        write_merged(path, merged)
    except InputError as exc:  # xcompat's own bug: the run goes on, the stage says what was lost
        runner.status = "error"
        runner.detail = f"project operators not recorded: {exc.message}"
        return runner
    if runner.status == "passed" and merged["status"] != "passed":
        runner.status = "failed"  # a gating operator finding; the runner's kernels passed
    runner.detail = "; ".join(filter(None, [runner.detail, section["summary"]]))
    return runner


STAGE = KernelsStage()
