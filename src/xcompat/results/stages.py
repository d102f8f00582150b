"""The stage kinds: one table of what each kind of stage result is and how it is judged.

Each stage writes one kind of result (``kind`` in its envelope). What the results model, the
verdict, the report, the gate and ``xcompat run`` need to know about a kind is one ``StageKind``
in ``STAGES``, a dict by name in display order (the order a grid cell names its stages in):

* ``result_file``: where the stage's own command writes its result in a run's output folder;
* ``per_cell``: an envelope ``xcompat run`` writes for the stage belongs to the run's cell
  (``abi`` compares two builds: its envelope is the run's);
* ``items`` and ``status_of_items``: the result's own items decide its status when they say
  worse than its ``status`` (a test result is never greener than its tests);
* ``requirement``: whether a cell must pass it, and why, from the settings and the project
  (``None``: informational, a skipped result never counts against its cell);
* ``demanded``: when a required cell without a result of it is ``missing``: ``"settings"``
  whenever the settings are known (a plan carries them), ``"run"`` only when the project is
  known too (``xcompat run``), ``None`` never: it is judged by the results there are, and a
  skipped one that is not tied to a cell is red when its requirement says required;
* ``quiet``: a grid cell names it only when it did not pass; ``label``: its name there;
* ``schemas``: the schemas of its documents (``schemas/<name>.schema.json``);
* ``checks``: the readers of its own fields (``xcompat.results.kinds``), all run when a
  result is loaded, so a field of the wrong type is refused there;
* ``excused``: why a result that did not pass is not counted under the settings (a matrix key
  in ``report`` mode: the contract kinds, ``xcompat.results.contracts``); None: it counts.

A result of a kind not in the table is read and judged by its envelope alone (a failed one is
red) and listed by the report among the other results.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from xcompat.results import contracts as C
from xcompat.results import kinds as K
from xcompat.results.kernel_operators import gating_failed
from xcompat.results.stage_result import StageResult
from xcompat.results.status import test_stage_status

if TYPE_CHECKING:
    from xcompat.settings import ProjectFacts, Settings


@dataclass(frozen=True, kw_only=True)
class StageRequirement:
    kind: str
    required: bool
    reason: str


Requirement = Callable[["Settings | None", "ProjectFacts | None"], StageRequirement]


@dataclass(frozen=True, kw_only=True)
class StageKind:
    name: str
    result_file: str
    per_cell: bool
    schemas: tuple[str, ...]
    checks: tuple[Callable[[StageResult], object], ...] = ()
    items: str = ""  # how a summary names the items that decide its status
    status_of_items: Callable[[Mapping[str, Any]], str | None] | None = None
    requirement: Requirement | None = None
    demanded: Literal["settings", "run"] | None = None
    quiet: bool = False
    label: str = ""
    excused: Callable[[StageResult, Settings | None], str | None] | None = None

    @property
    def shown_as(self) -> str:
        return self.label or self.name


# -- when a stage is required ------------------------------------------------------------------


def build_requirement(settings: Settings | None, project: ProjectFacts | None) -> StageRequirement:
    return StageRequirement(kind="build", required=True, reason="every cell builds its wheel")


def tests_requirement(settings: Settings | None, project: ProjectFacts | None) -> StageRequirement:
    if settings is not None and not settings.tests.pytest_paths:
        return StageRequirement(kind="test", required=False, reason="tests.pytest is empty")
    return StageRequirement(kind="test", required=True, reason="the project's tests must pass")


def kernels_requirement(settings: Settings | None, project: ProjectFacts | None) -> StageRequirement:
    """Only when the matrix asks for kernels (``tests.kernels`` is not ``none``) and the project
    uses torch; not known (a CI report without the project): required."""
    if settings is not None and not settings.kernels_requested:
        return StageRequirement(kind="kernels", required=False, reason="the matrix sets tests.kernels: none")
    if project is not None and project.uses_torch is False:
        return StageRequirement(kind="kernels", required=False,
                                reason=f"{project.name or 'the project'} does not use torch "
                                f"({project.torch_evidence})")
    if project is None or project.uses_torch is None:
        # Not known here (a CI report without the project): a skipped kernels stage stays red.
        return StageRequirement(kind="kernels", required=True, reason="the matrix asks for kernels")
    return StageRequirement(kind="kernels", required=True,
                            reason=f"the matrix asks for kernels and the project uses torch ({project.torch_evidence})")


def coverage_requirement(settings: Settings | None, project: ProjectFacts | None = None) -> StageRequirement:
    """Coverage is required only when the signed matrix sets ``coverage.overall`` or ``coverage.diff``."""
    c = settings.coverage if settings is not None else None
    thresholds = [f"{name} {value:g}%" for name, value in (("overall", getattr(c, "overall", None)),
                                                            ("diff", getattr(c, "diff", None))) if value is not None]
    if not thresholds:
        return StageRequirement(kind="coverage", required=False,
                                reason="coverage is informational: the matrix sets no coverage threshold")
    return StageRequirement(kind="coverage", required=True,
                            reason=f"the matrix sets coverage thresholds ({', '.join(thresholds)})")


# -- when a result's own items decide its status -------------------------------------------------
# Each runs after the kind's checks; an item that is still not a string where one is expected
# (a caller that skipped the checks) is ignored, never hashed.


def _statuses(document: Mapping[str, Any], items: str, key: str) -> set[str]:
    found = document.get(items)
    if not isinstance(found, list):
        return set()
    return {item[key] for item in found if isinstance(item, dict) and isinstance(item.get(key), str)}


def _status_of_tests(document: Mapping[str, Any]) -> str | None:
    """As ``xcompat test`` derives it from its tests' outcomes (no tests at all: skipped)."""
    if not isinstance(document.get("tests"), list):
        return None
    found = test_stage_status(_statuses(document, "tests", "outcome"))
    return None if found == "passed" else found


def _status_of_kernels(document: Mapping[str, Any]) -> str | None:
    seen = _statuses(document, "kernels", "status")
    if "crashed" in seen:
        return "crashed"
    # a gating finding of the project's own operators (tests.operators) fails it as a kernel does
    return "failed" if "failed" in seen or gating_failed(document) else None


def _status_of_gating(document: Mapping[str, Any]) -> str | None:
    gating = document.get("gating")
    return "failed" if isinstance(gating, int) and not isinstance(gating, bool) and gating > 0 else None


def _abi_fields(result: StageResult) -> None:
    # ``gating`` is not read here: its status is counted only when it is an integer.
    K.abi_required_bump(result)
    K.abi_findings(result)
    K.abi_versions(result)


def _coverage_fields(result: StageResult) -> None:
    if not K.is_cell_coverage_artifact(result):
        K.coverage_data(result)


# -- the table ------------------------------------------------------------------------------------

STAGES: dict[str, StageKind] = {kind.name: kind for kind in (
    StageKind(name="build", result_file="wheels/build.json", per_cell=True, schemas=("build",),
              checks=(K.build_cells, K.build_wheels, K.build_errors),
              requirement=build_requirement, demanded="run", quiet=True),
    StageKind(name="probe", result_file="probe.json", per_cell=True, schemas=("probe",),
              checks=(K.probe_frameworks,), quiet=True),
    StageKind(name="kernels", result_file="kernels.json", per_cell=True, schemas=("kernels",),
              checks=(K.kernel_results, K.kernel_operators), items="kernels", status_of_items=_status_of_kernels,
              requirement=kernels_requirement, demanded="run", quiet=True),
    StageKind(name="test", result_file="test.json", per_cell=True, schemas=("test-result",),
              checks=(K.test_cases, K.tests_not_run), items="tests", status_of_items=_status_of_tests,
              requirement=tests_requirement, demanded="settings", label="tests"),
    StageKind(name="abi", result_file="abi.json", per_cell=False, schemas=("abi-diff",),
              checks=(_abi_fields,), items="gating findings", status_of_items=_status_of_gating),
    StageKind(name="coverage", result_file="coverage/coverage.json", per_cell=True,
              schemas=("coverage", "coverage-cell"), checks=(_coverage_fields,),
              requirement=coverage_requirement, quiet=True),
    *(StageKind(name=c.kind, result_file=c.result_file, per_cell=c is not C.FLOOR, schemas=(c.kind,),
                checks=(C.check_contract,), quiet=True, label=c.label, excused=C.not_counted)
      for c in C.CONTRACTS.values()),
)}


_BUILT_IN = frozenset(STAGES)


def register_kind(kind: StageKind) -> None:
    """Add a stage kind after the built-in ones: its results are then read, judged, reported
    and gated as theirs (``xcompat.pipeline.registry.register`` adds its stage to the run)."""
    if kind.name in STAGES:
        raise ValueError(f"the stage kind {kind.name!r} is already registered")
    STAGES[kind.name] = kind


def unregister_kind(name: str) -> None:
    """Remove a kind :func:`register_kind` added; the built-in kinds stay."""
    if name not in _BUILT_IN:
        STAGES.pop(name, None)


def display_rank(kind: str) -> int:
    """A kind's place among a cell's stages: the table's order, kinds not in it after every known one."""
    return list(STAGES).index(kind) if kind in STAGES else len(STAGES)


def result_file(stage: str) -> str | None:
    """Where ``stage``'s own command writes its result in a run's output folder (None: not a stage kind)."""
    kind = STAGES.get(stage)
    return kind.result_file if kind is not None else None


def requirements(settings: Settings | None, project: ProjectFacts | None) -> dict[str, StageRequirement]:
    """Whether each kind with a requirement is required, and why (informational kinds are absent)."""
    return {name: kind.requirement(settings, project) for name, kind in STAGES.items()
            if kind.requirement is not None}


def demanded_kinds(settings: Settings | None, project: ProjectFacts | None) -> list[str]:
    """The kinds a required cell must have a result of, from what is known: the settings (a plan
    carries them) and the project (``xcompat run``, whose settings.json says what it is)."""
    run = project is not None and project.uses_torch is not None
    known = {"run": run, "settings": run or settings is not None}
    needed = requirements(settings, project)
    return [name for name, kind in STAGES.items()
            if kind.demanded is not None and known[kind.demanded] and name in needed and needed[name].required]


def check_fields(result: StageResult) -> None:
    """Read every field the readers of ``result``'s kind give: a field of the wrong type is an
    ``InputError`` naming its JSON path here, where the result is loaded, rather than in
    whichever consumer (report, gate, run) would have read it first. Kinds not in the table
    are shown by their envelope alone."""
    kind = STAGES.get(result.kind)
    for read in kind.checks if kind is not None else ():
        read(result)


def excused(result: StageResult, settings: Settings | None) -> str | None:
    """Why ``result`` does not count under ``settings`` though it did not pass (its kind's
    ``excused``); None: it counts as its status says."""
    kind = STAGES.get(result.kind)
    return kind.excused(result, settings) if kind is not None and kind.excused is not None else None


def status_of_items(kind: str, document: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(status, what decided it)`` the result's own items give (its tests, its kernels, its
    gating ABI findings); None when its kind has no such items or they say nothing."""
    stage = STAGES.get(kind)
    if stage is None or stage.status_of_items is None:
        return None
    found = stage.status_of_items(document)
    return (found, stage.items) if found is not None else None
