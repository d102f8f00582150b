"""Drive ``xcompat run``'s stages in order: the table of ``xcompat.pipeline.registry``.

The configuration is resolved once (``xcompat.pipeline.config``) and every stage gets the
same ``RunContext``. Each stage that did not write its own result (it failed, errored or was
skipped) gets an envelope under ``stages/``, so the report, computed by
``xcompat.results.judge``, sees it; the exit code is that verdict's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xcompat import interrupts, jsonio
from xcompat.errors import VerificationError
from xcompat.log import get_logger
from xcompat.outputs import write_bytes
from xcompat.pipeline.context import RunContext
from xcompat.pipeline.local import LocalPipeline, RunConfig, StageResult
from xcompat.pipeline.registry import selected
from xcompat.pipeline.stage import Stage

if TYPE_CHECKING:
    from xcompat.report.model import Report

RUN_VERSION = 1


def guarded(context: RunContext, stage: Stage) -> Callable[[], StageResult]:
    """The stage, or "skipped" when an earlier stage halted the run (the report always runs)."""

    def run() -> StageResult:
        ignore_output(context.pipe.stage_dir)
        if context.halted is not None and not stage.runs_when_halted:
            return StageResult(name=stage.name, status="skipped", detail=f"not run: {context.halted}")
        from xcompat.pipeline.lanes import skip_reason

        lane_skip = skip_reason(context, stage.name)  # a stage an emulated lane does not run
        if lane_skip is not None:
            return StageResult(name=stage.name, status="skipped", detail=lane_skip)
        return stage.run(context)

    return run


def ignore_output(folder: Path) -> None:
    """A ``.gitignore`` of ``*`` in the output folder (as pytest and mypy give their caches), so
    that a run's output in a checkout is never committed or shown as a change."""
    marker = folder / ".gitignore"
    if folder.is_dir() and not marker.exists():
        write_bytes(marker, b"# written by xcompat run: its output folder is not part of the project\n*\n")


def run_pipeline(config: RunConfig, *, isolation: str = "auto", stages: list[str] | None = None) -> int:
    """Run every stage of the table (only those ``stages`` names, when given); ``isolation`` is the
    build isolation of the project's and the baseline's builds (``xcompat build --isolation``)."""
    log = get_logger()
    pipe = LocalPipeline(config, log)
    context = RunContext(pipe, isolation=isolation)
    sequence = [(stage.name, guarded(context, stage)) for stage in selected(stages)]
    log.info(f"xcompat run: {config.project}")
    log.info(f"  matrix {config.matrix}" + ("" if config.signed else " (unsigned)"))
    if config.baseline:
        log.info(f"  ABI baseline {config.baseline}")
    start = time.monotonic()
    results = pipe.execute(sequence, current_cell=lambda: context.cell_id)
    elapsed = time.monotonic() - start
    if stages is not None and "report" not in stages:
        # no report stage to write them: the envelopes of the stages that ran, for whoever reads
        # this folder's results (a CI job, or the run that started this one for another Python)
        from xcompat.pipeline.envelopes import write_stage_envelopes

        write_stage_envelopes(context)
    out = _publish(pipe, {
        "version": RUN_VERSION,
        "project": str(config.project),
        "matrix": str(config.matrix),
        "cell_id": context.cell_id,
        "elapsed_s": round(elapsed, 2),
        "stages": [r.to_dict() for r in results],
    })
    _print_summary(log, out, results, context, elapsed)
    if stages is not None and "report" not in stages:
        # only the named stages ran (a CI job's one stage): there is no verdict, only their outcome
        failed = [r.name for r in results if r.status not in ("passed", "skipped")]
        if failed:
            log.error(f"stage(s) not passed: {', '.join(failed)}")
        return 1 if failed else 0
    return exit_code(results, context.report, log)


def _publish(pipe: LocalPipeline, summary: dict[str, Any]) -> Path:
    """run.json, then the staging folder moved into place whole: a signal waits until it is."""
    published = False
    try:
        with interrupts.deferred():
            jsonio.write_json(pipe.path("run.json"), summary, schema="run")
            out = pipe.publish()
            published = True
    except KeyboardInterrupt:
        if published:  # the signal waited for the move into place: the run is complete
            raise interrupts.error(f"the run had completed: {pipe.final}", where="after the last stage") from None
        pipe.abandon()
        raise interrupts.error(f"{pipe.final} was left as it was", where="after the last stage") from None
    return out


def exit_code(results: list[StageResult], report: Report | None, log: Any = None) -> int:
    """0 only when the report (the one verdict) is green and it was written; 3 when the matrix
    signature did not verify (as ``xcompat matrix verify``); 1 otherwise."""
    verify = next((r for r in results if r.name == "verify"), None)
    if verify is not None and verify.exit_code == VerificationError.exit_code:
        if log is not None:
            log.error(f"the matrix signature did not verify: {verify.detail.removeprefix('exit 3: ')}")
        return VerificationError.exit_code
    report_stage = next((r for r in results if r.name == "report"), None)
    if report is None or report_stage is None or report_stage.status != "passed":
        if log is not None:
            log.error("the report could not be written: the run is not green")
        return 1
    if report.conclusion != "success":
        if log is not None:
            log.error(f"report is red: {report.headline}")
            for problem in report.problems[:10]:
                log.error(f"  {problem}")
        return 1
    return 0


def _print_summary(log: Any, out: Path, results: list[StageResult], context: RunContext, elapsed: float) -> None:
    log.info("")
    log.info(f"xcompat run finished in {elapsed:.1f}s  (cell {context.cell_id or '-'})")
    for r in results:
        mark = {"passed": "ok", "failed": "FAIL", "error": "ERROR", "skipped": "skip"}.get(r.status, r.status)
        log.info(f"  {r.name:<9} {mark:<6} {r.elapsed:6.1f}s  {r.detail}")
    log.info("")
    for name in ("report.md", "report.html", "report.json"):
        if (out / name).exists():
            log.info(f"  {out / name}")
    log.info(f"  stage logs: {out / 'logs'}")
