"""One isolated test run, end to end: warm the parent, collect, fork per test, deep checks.

``run_tests(options)`` is the core behind ``xcompat test``; it returns a ``RunResult`` and
never prints (pytest's own terminal output aside) or exits.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from xcompat import interrupts
from xcompat.errors import UnavailableError, UsageError
from xcompat.isolate.devices import DeviceSlot, cpu_slots, detect_accelerator, plan_slots
from xcompat.isolate.leaks import LeakPolicy
from xcompat.isolate.outcomes import Isolation, RunResult, TestRecord

if TYPE_CHECKING:
    from xcompat.isolate.warmup import WarmState

StartMethod = Literal["auto", "fork", "spawn"]
Deep = Literal["valgrind", "compute-sanitizer"]


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    paths: tuple[str, ...] = ()
    pytest_args: tuple[str, ...] = ()
    isolation: Isolation = "test"
    timeout_s: float | None = 300.0
    cell_id: str | None = None
    leak_kinds: tuple[str, ...] = ()
    leak_policy: LeakPolicy = field(default_factory=LeakPolicy)
    deep: Deep | None = None
    devices: str = "auto"  # "auto" or a worker count
    start_method: StartMethod = "auto"
    warm_torch: bool | None = None  # None: warm torch when the suite imports it
    preload: tuple[str, ...] = ()
    rootdir: str | None = None


def choose_start_method(requested: StartMethod, platform: str = sys.platform) -> str:
    """fork from the warm parent where it is safe; spawn on macOS (fork-unsafe) and Windows."""
    if requested != "auto":
        if requested == "fork" and not hasattr(os, "fork"):
            raise UnavailableError("fork is not available on this platform", hint="use --start-method spawn")
        return requested
    if not hasattr(os, "fork") or platform == "darwin":
        return "spawn"
    return "fork"


def resolve_slots(devices: str, env: Mapping[str, str]) -> list[DeviceSlot]:
    """``auto``: one worker per visible accelerator (one CPU worker without one); ``N``: N workers."""
    backend, count = detect_accelerator(env)
    if devices == "auto":
        return plan_slots(backend, count, env)
    try:
        n = int(devices)
    except ValueError:
        raise UsageError(f"--devices must be 'auto' or a number, not {devices!r}") from None
    if n < 1:
        raise UsageError(f"--devices must be at least 1, not {n}")
    if backend in ("cuda", "rocm"):
        return plan_slots(backend, count, env, limit=n)
    return cpu_slots(n)


def import_pytest() -> Any:
    """pytest, or exit 5 with the install line: it is an optional dependency of xcompat."""
    try:
        import pytest
    except ImportError:
        raise UnavailableError(
            "pytest is not installed in this environment; xcompat test runs the project's tests with it",
            hint="pip install 'xcompat[runner]' (or the project's own pinned pytest)",
        ) from None
    return pytest


def run_tests(options: RunOptions, env: Mapping[str, str] | None = None) -> RunResult:
    import_pytest()
    env = os.environ if env is None else env
    _check_deep_tool(options.deep, env)
    if options.isolation == "none":
        from xcompat.isolate import supervised

        if supervised.available():
            # A test could end the in-process session (os._exit(0)): it runs in a child,
            # and this process decides the verdict.
            slot = resolve_slots(options.devices, env)[0]
            return supervised.run_supervised(
                lambda plugins: _run_session(options, env, plugins), device=slot.label,
                isolation=options.isolation, timeout_s=options.timeout_s, cell_id=options.cell_id)
    return _run_session(options, env)


def _run_session(options: RunOptions, env: Mapping[str, str], plugins: Sequence[Any] = ()) -> RunResult:
    pytest = import_pytest()
    start = time.monotonic()
    method = choose_start_method(options.start_method)
    isolation = options.isolation
    slots = resolve_slots(options.devices, env)
    if isolation == "none":
        slots = slots[:1]
    warm, warm_torch_late, numba_named = _warm_up(options, method)
    args = _pytest_args(options)
    runner = _make_runner(options, method, slots, warm.threads, warm_torch_late=warm_torch_late,
                          warm_numba=numba_named)
    try:
        exit_code = int(pytest.main(args, plugins=[runner, *plugins]))
        records = runner.results()
        collected = list(runner.collected)
        if getattr(runner, "late_warmup", None) is not None:
            warm = runner.late_warmup
        warm = warm.with_numba(*getattr(runner, "numba_warmup", (None, 0.0)))
        mapped = getattr(runner, "mapped", None)
    finally:
        runner.cleanup()
    if runner.interrupted:
        raise interrupts.error("no results were written")
    records = _records_of_session(options, runner, exit_code, records, collected, args)

    not_run = 0
    if getattr(runner, "collection_errors", None):
        recorded = {r.nodeid for r in records}
        not_run = sum(1 for nodeid in collected if nodeid not in recorded)

    findings: tuple[dict[str, Any], ...] = ()
    if options.deep:
        records, findings = _deep_checks(options, records, collected, env)

    return RunResult(
        records=tuple(records),
        isolation=isolation,
        start_method="in-process" if isolation == "none" else method,
        timeout_s=options.timeout_s,
        duration_s=time.monotonic() - start,
        cell_id=options.cell_id,
        leak_checks=options.leak_kinds,
        deep=options.deep,
        devices=tuple(slot.label for slot in slots),
        warmup=warm.to_dict(),
        findings=findings,
        pytest_exit=exit_code,
        not_run=not_run,
        mapped_libraries=mapped.to_dict() if mapped is not None else None,
    )


def _warm_up(options: RunOptions, method: str) -> tuple[WarmState, bool, bool]:
    """Warm this parent before collection, for forked test processes to inherit: the warm
    state, whether torch is to be warmed after collection should it be imported by then (the
    suite's files never named it), and whether the suite's files name numba."""
    from xcompat.isolate.warmup import WarmState, scan_roots, suite_imports, warm_parent

    if options.isolation == "none" or method != "fork":
        return WarmState(), False, False
    use_torch = options.warm_torch
    named = suite_imports(scan_roots(options.paths, Path.cwd()),
                          ("torch", "numba") if use_torch is None else ("numba",))
    warm_torch_late = False
    if use_torch is None:  # auto: only a suite that imports torch gets it warmed
        use_torch = "torch" in named
        warm_torch_late = not use_torch
    return warm_parent(preload=options.preload, use_torch=use_torch), warm_torch_late, "numba" in named


def _pytest_args(options: RunOptions) -> list[str]:
    # The plugin package is imported before pytest can mark it for assertion rewriting.
    args = [
        "-W",
        "ignore:Module already imported so cannot be rewritten; xcompat:pytest.PytestAssertRewriteWarning",
    ]
    args += [*options.paths, *options.pytest_args]
    if options.rootdir:
        args += ["--rootdir", options.rootdir]
    return args


def _make_runner(
    options: RunOptions,
    method: str,
    slots: list[DeviceSlot],
    threads: int | None,
    *,
    warm_torch_late: bool,
    warm_numba: bool,
) -> Any:
    """The pytest plugin that runs the session: spawns test processes, or runs them in place
    or forked from this warm process."""
    if method == "spawn" and options.isolation != "none":
        from xcompat.isolate.spawned import SpawnRunner

        return SpawnRunner(
            isolation=options.isolation,
            slots=slots,
            timeout_s=options.timeout_s,
            leak_kinds=options.leak_kinds,
            leak_policy=options.leak_policy,
            args=tuple(options.pytest_args),
        )
    from xcompat.isolate.runner import IsolatedRunner

    return IsolatedRunner(
        isolation=options.isolation,
        slots=slots,
        timeout_s=options.timeout_s,
        threads=threads,
        leak_kinds=options.leak_kinds,
        leak_policy=options.leak_policy,
        warm_torch_after_collection=warm_torch_late,
        warm_numba=warm_numba,
    )


def _records_of_session(
    options: RunOptions,
    runner: Any,
    exit_code: int,
    records: list[TestRecord],
    collected: list[str],
    args: list[str],
) -> list[TestRecord]:
    """The session's records, never green when it stopped early (what has no result is an
    error); a session that could not run, or ran no test, raises ``UsageError``."""
    import pytest

    from xcompat.isolate.classify import records_without_result

    exited = getattr(runner, "exited", None)
    if exited is not None:
        if not collected:
            raise UsageError(f"pytest.exit() stopped the session before any test was collected: {exited}",
                             hint="see the conftest or plugin that calls it")
        records += records_without_result(
            collected, {r.nodeid for r in records}, f"no result: the session was stopped by pytest.exit(): {exited}")
    if exit_code == pytest.ExitCode.INTERNAL_ERROR and collected:
        records += records_without_result(
            collected, {r.nodeid for r in records},
            "no result: pytest stopped with an internal error (INTERNALERROR in the output above) before it was recorded",
            after_all="pytest ended with an internal error after the tests (INTERNALERROR in the output)")
    if exit_code in (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERNAL_ERROR) and not records:
        raise UsageError(
            f"pytest could not run ({pytest.ExitCode(exit_code).name.lower()}) with arguments: {' '.join(args)}",
            hint="check the paths and the options after --",
        )
    if not records:
        raise UsageError(
            "no tests were collected from " + (" ".join(options.paths) or "the current folder"),
            hint="check the paths and any -k/-m selection after --",
        )
    return records


def _check_deep_tool(deep: str | None, env: Mapping[str, str]) -> None:
    """Refuse a missing memory checker before the run, not after it."""
    import shutil

    if deep == "valgrind" and shutil.which("valgrind", path=env.get("PATH")) is None:
        raise UnavailableError("valgrind is not installed", hint="apt-get install valgrind, or drop --deep")
    if deep == "compute-sanitizer":
        from xcompat.isolate.compute_sanitizer import find_compute_sanitizer

        if find_compute_sanitizer(env) is None:
            raise UnavailableError(
                "compute-sanitizer is not installed",
                hint="pip install nvidia-cuda-sanitizer-api, or put the CUDA toolkit's compute-sanitizer on PATH",
            )


def _deep_checks(
    options: RunOptions,
    records: Sequence[TestRecord],
    collected: Sequence[str],
    env: Mapping[str, str],
) -> tuple[list[TestRecord], tuple[dict[str, Any], ...]]:
    """Re-run the tests that ran under a memory checker; attach what each one adds."""
    from xcompat.isolate.sanitizers import dedupe, outcome_for

    ran = [r.nodeid for r in records if r.outcome in ("passed", "failed", "xfailed", "xpassed", "leaked")]
    nodeids = [n for n in collected if n in set(ran)]
    if options.deep == "valgrind":
        from xcompat.isolate.valgrind import run_valgrind

        per_test = run_valgrind(nodeids, args=list(options.pytest_args), timeout_s=options.timeout_s, env=env)
    else:
        from xcompat.isolate.compute_sanitizer import run_compute_sanitizer

        per_test = run_compute_sanitizer(
            nodeids, args=list(options.pytest_args), timeout_s=options.timeout_s, env=env
        )
    updated: list[TestRecord] = []
    all_findings = []
    for record in records:
        found = per_test.get(record.nodeid, [])
        if found:
            all_findings.extend(found)
            as_dicts = tuple(f.to_dict() for f in dedupe(found))
            outcome = outcome_for(found, record.outcome)
            message = record.message
            if outcome != record.outcome:
                message = f"{len(as_dicts)} {options.deep} finding(s): " + as_dicts[0]["summary"]
            record = replace(record, findings=as_dicts, outcome=outcome, message=message)
        updated.append(record)
    return updated, tuple(f.to_dict() for f in dedupe(all_findings))
