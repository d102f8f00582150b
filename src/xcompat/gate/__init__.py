"""The release gate: allow a tag only when the evidence says the signed matrix was satisfied.

Checks, all of which must pass (an empty set of checks is refused, never "valid"):

* ``matrix-signature``: the matrix is signed by a key in the trust list of a protected ref;
* ``plan-source``: with ``--matrix``, the plan was made from that (signed) matrix: it names
  its sha256, and it is the plan those bytes yield (a plan edited after it was made, its
  ``matrix_sha256`` kept, is refused with exit 3);
* ``tag-pattern``: the tag matches the matrix's ``gate.tag-pattern``;
* ``cell:<id>``: every required cell **of the verified matrix** (expanded here, not read
  from the plan, so a plan filtered with ``--backend cpu`` cannot drop one) has results,
  all ``passed`` (missing, ``skipped`` and ``fallback`` fail); judged by the one verdict
  the report uses (``xcompat.results.judge``);
* ``version-bump``: the ABI diff's ``required_bump`` does not exceed the bump from the last
  release tag to this tag;
* ``coverage``: the merged coverage result passed its thresholds;
* ``wheels``: with ``--dist``, the wheels to publish are byte for byte the ones passing
  builds recorded (name and sha256), no more, no fewer.

The plan is read by ``xcompat.results.collect.load_plan`` (the report's reader) and the cells
are judged by ``xcompat.results.judge``: the gate renders its verdict's cells and texts, and
never edits them.

``evaluate_gate`` returns a ``GateDecision``; ``decision_document`` renders ``gate.json``.
The environment is passed in as a mapping, never read from ``os.environ`` here.

Without a verified matrix (no ``matrix``) the gate refuses with exit 3, unless the
request says ``insecure_no_verify`` (``--insecure-no-verify``): then the plan's cells and
settings are judged as they are, and gate.json says so in its warnings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xcompat.errors import UsageError, VerificationError
from xcompat.gate.cell_checks import check_cells
from xcompat.gate.checks import (
    CheckOutcome,
    check_abi_bump,
    check_coverage,
    check_matrix_signature,
    check_plan_source,
    check_tag_pattern,
    check_wheels,
    load_abi_diff,
)
from xcompat.gate.results import StageResult, load_results
from xcompat.gate.versions import ReleaseStep, release_step
from xcompat.results.stages import STAGES
from xcompat.results.verdict import CellVerdict
from xcompat.settings import Settings

__all__ = [
    "CheckOutcome",
    "GateDecision",
    "GateRequest",
    "decision_document",
    "evaluate_gate",
    "tag_from_env",
]

GATE_FORMAT_VERSION = 1


@dataclass(frozen=True, kw_only=True)
class GateRequest:
    plan: Path | None = None
    results: tuple[Path, ...] = ()
    require_kinds: tuple[str, ...] = ()
    abi: tuple[Path, ...] = ()
    coverage: tuple[Path, ...] = ()
    dist: Path | None = None
    matrix: Path | None = None
    allowed_signers: Path | None = None
    trust_ref: str | None = None
    signature: Path | None = None
    revoked: Path | None = None
    bound_repo: str | None = None  # owner/name the matrix must name; None: from the environment
    tag: str | None = None
    previous_tag: str | None = None
    tag_prefix: str = ""
    git_dir: Path = Path(".")
    insecure_no_verify: bool = False  # judge the plan without a verified matrix (documented, never a default)


@dataclass(frozen=True, kw_only=True)
class GateDecision:
    checks: tuple[CheckOutcome, ...]
    cells: tuple[CellVerdict, ...] = ()  # judge()'s verdict of each planned cell
    step: ReleaseStep | None = None
    tag: str | None = None
    warnings: tuple[str, ...] = field(default=())

    @property
    def allowed(self) -> bool:
        # An empty policy is refused: "nothing was checked" must never read as a pass.
        return bool(self.checks) and all(check.passed for check in self.checks)

    @property
    def failed(self) -> tuple[CheckOutcome, ...]:
        return tuple(check for check in self.checks if not check.passed)

    @property
    def summary(self) -> str:
        if not self.checks:
            return "release refused: no checks were requested"
        if self.allowed:
            return f"release allowed: all {len(self.checks)} checks passed"
        names = ", ".join(check.name for check in self.failed[:5])
        more = f" and {len(self.failed) - 5} more" if len(self.failed) > 5 else ""
        return f"release refused: {len(self.failed)} of {len(self.checks)} checks failed ({names}{more})"


def tag_from_env(env: Mapping[str, str]) -> str | None:
    """The tag this pipeline runs for: GitHub ``refs/tags/*`` runs or GitLab tag pipelines."""
    if env.get("GITHUB_REF_TYPE") == "tag" and env.get("GITHUB_REF_NAME"):
        return env["GITHUB_REF_NAME"]
    ref = env.get("GITHUB_REF", "")
    if ref.startswith("refs/tags/"):
        return ref[len("refs/tags/") :]
    return env.get("CI_COMMIT_TAG") or None


def evaluate_gate(request: GateRequest, env: Mapping[str, str] | None = None) -> GateDecision:
    env = env or {}
    checks: list[CheckOutcome] = []
    warnings: list[str] = []
    verdicts: tuple[CellVerdict, ...] = ()
    tag = request.tag or tag_from_env(env)

    if request.matrix is None and not request.insecure_no_verify:
        raise VerificationError(
            "the gate judges the verified matrix, and none was given",
            hint="pass --matrix .xcompat/matrix.yml --allowed-signers PATH --trust-ref REF; "
            "--insecure-no-verify judges the plan as it is (docs/gate.md)",
        )
    if request.matrix is None:
        warnings.append("the matrix was not verified (--insecure-no-verify): the plan's cells and settings "
                        "were judged as they are")
    verified = None
    if request.matrix is not None:
        if request.allowed_signers is None:
            raise UsageError("--matrix needs --allowed-signers (with --trust-ref, the path inside that ref)")
        outcome, verified = check_matrix_signature(
            request.matrix, request.allowed_signers, trust_ref=request.trust_ref,
            signature=request.signature, revoked=request.revoked, repo=request.bound_repo, env=env,
        )
        checks.append(outcome)
    verified_matrix = None if verified is None else verified.matrix

    results: tuple[StageResult, ...] = ()
    if request.plan is not None:
        from xcompat.results.collect import load_plan

        plan = load_plan(request.plan)
        if request.matrix is not None:
            checks.append(check_plan_source(plan, verified, plan_path=request.plan, matrix=request.matrix))
        if verified_matrix is not None:
            from xcompat.matrix.plan import expand
            from xcompat.settings import resolve_settings

            cells = [c.to_dict() for c in expand(verified_matrix)]
            settings: Settings | None = resolve_settings(verified_matrix, signed=True)
        else:  # the plan's own cells and settings, taken on trust (or refused by the checks above)
            from xcompat.settings import settings_from_plan

            cells = plan["cells"]
            settings = (settings_from_plan(plan, source=str(request.plan))
                        if isinstance(plan.get("settings"), dict) else None)
        pattern = check_tag_pattern(settings, tag)
        if pattern is not None:
            checks.append(pattern)
        results = load_results(request.results) if request.results else ()
        cell_checks, verdict = check_cells(cells, results, require_kinds=request.require_kinds, settings=settings)
        if verified_matrix is not None:
            planned = {c["id"] for c in plan["cells"]}
            dropped = [c["id"] for c in cells if c["id"] not in planned]
            if dropped:
                warnings.append(f"the plan lists {len(planned)} cell(s); the verified matrix has {len(cells)}: "
                                f"judged every cell of the matrix ({len(dropped)} not in the plan, e.g. {dropped[0]})")
        checks.extend(cell_checks)
        verdicts = tuple(cell for cell in verdict.cells if cell.planned)
        warnings.extend(verdict.unplanned)

    step: ReleaseStep | None = None
    if request.abi:
        evidence = [load_abi_diff(path) for path in request.abi]
        if tag:
            step = release_step(request.git_dir, tag, previous_tag=request.previous_tag, prefix=request.tag_prefix)
        checks.append(check_abi_bump(evidence, step))

    for path in request.coverage:
        checks.append(check_coverage(path, None if verified_matrix is None else verified_matrix.coverage))

    if request.dist is not None:
        required_ids = None if request.plan is None else {v.id for v in verdicts if v.required}
        checks.append(check_wheels(request.dist, results, required_ids))

    return GateDecision(checks=tuple(checks), cells=verdicts, step=step, tag=tag, warnings=tuple(warnings))


def decision_document(decision: GateDecision) -> dict[str, Any]:
    """``gate.json``: the common envelope plus every check and every cell's verdict."""
    step = decision.step
    document: dict[str, Any] = {
        "version": GATE_FORMAT_VERSION,
        "kind": "gate",
        "cell_id": None,
        "status": "passed" if decision.allowed else "failed",
        "summary": decision.summary,
        "allowed": decision.allowed,
        "tag": decision.tag,
        "release": None if step is None else {
            "tag": step.tag,
            "version": step.version,
            "previous_tag": step.previous_tag,
            "previous_version": step.previous_version,
            "bump": step.bump,
            "found_by": step.how_found,
        },
        "checks": [check.to_dict() for check in decision.checks],
        # gate.json names stage kinds only; a refused result of no known kind is in the "results" check
        "cells": [
            {"id": v.id, "required": v.required, "status": v.status,
             "kinds": [k for k in v.kinds if k in STAGES]}
            for v in decision.cells
        ],
        "warnings": list(decision.warnings),
    }
    return document
