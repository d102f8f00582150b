"""The table of ``xcompat run``'s stages, in the order they run.

Each entry satisfies ``xcompat.pipeline.stage.Stage``. A stage that writes a kind of result
is named after that kind (``xcompat.results.stages.STAGES``), which says where its result is
and how the report and the gate judge it. A new stage takes its module (a ``Stage``), its
kind (a ``StageKind`` with the schema of its result) and :func:`register`; the report and
the gate then read and judge its results with the others.
"""

from __future__ import annotations

from xcompat.errors import UsageError
from xcompat.pipeline.stage import Stage
from xcompat.pipeline.stages import (
    abi,
    baseline,
    build,
    contracts_python_floor,
    contracts_runtime_libraries,
    contracts_stubs,
    coverage,
    kernels,
    plan,
    probe,
    pythons,
    report,
    test,
    verify,
)
from xcompat.results.stages import StageKind, register_kind

PIPELINE: dict[str, Stage] = {stage.name: stage for stage in (
    verify.STAGE,
    plan.STAGE,
    build.STAGE,
    baseline.STAGE,
    probe.STAGE,
    kernels.STAGE,
    test.STAGE,
    abi.STAGE,
    coverage.STAGE,
    contracts_stubs.STAGE,
    contracts_runtime_libraries.STAGE,
    contracts_python_floor.STAGE,
    pythons.STAGE,
    report.STAGE,
)}
_BUILT_IN = frozenset(PIPELINE)


def register(stage: Stage, kind: StageKind | None = None, *, before: str = "report") -> None:
    """Add ``stage`` to the run, just before the stage ``before`` (default: the report, which
    reads every result), and its result ``kind`` to the kinds the report and the gate judge."""
    if stage.name in PIPELINE:
        raise UsageError(f"a stage named {stage.name!r} is already registered")
    if before not in PIPELINE:
        raise UsageError(f"no stage named {before!r} to register {stage.name!r} before")
    if kind is not None:
        if kind.name != stage.name:
            raise UsageError(f"the stage {stage.name!r} writes results of its own name, not {kind.name!r}")
        register_kind(kind)
    entries = list(PIPELINE.items())
    at = [name for name, _ in entries].index(before)
    entries.insert(at, (stage.name, stage))
    PIPELINE.clear()
    PIPELINE.update(entries)


def unregister(name: str) -> None:
    """Remove a stage :func:`register` added, and its kind; the built-in stages stay."""
    from xcompat.results.stages import unregister_kind

    if name not in _BUILT_IN:
        PIPELINE.pop(name, None)
        unregister_kind(name)


def selected(names: list[str] | None = None) -> list[Stage]:
    """The stages of the table, in order; only those ``names`` lists when given (unknown: refused)."""
    if names is None:
        return list(PIPELINE.values())
    unknown = [n for n in names if n not in PIPELINE]
    if unknown:
        raise UsageError(f"no stage named {', '.join(unknown)}", hint=f"the stages: {', '.join(PIPELINE)}")
    return [stage for name, stage in PIPELINE.items() if name in names]
