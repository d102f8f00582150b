"""The release gate's checks. Each returns ``CheckOutcome`` objects and never raises for a
negative verdict; malformed input still raises ``InputError`` (exit 2), because a gate that
cannot read its evidence must not guess.

Every reason reads "got X, expected Y" so a refused release says what to change.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xcompat.errors import InputError, XcompatError
from xcompat.gate.results import Plan, StageResult
from xcompat.gate.versions import BUMP_ORDER, ReleaseStep, bump_rank


@dataclass(frozen=True, kw_only=True)
class CheckOutcome:
    name: str
    passed: bool
    reason: str
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "passed": self.passed, "reason": self.reason}
        if self.details:
            data["details"] = dict(self.details)
        return data


# -- cells --------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CellVerdict:
    id: str
    required: bool
    status: str  # passed | failed | crashed | skipped | fallback | missing
    kinds: tuple[str, ...]


def _worst(statuses: Sequence[str]) -> str:
    # The order a cell's overall status is picked in: a crash hides nothing behind it.
    for status in ("crashed", "failed", "fallback", "skipped"):
        if status in statuses:
            return status
    return "passed"


def check_cells(
    plan: Plan, results: Sequence[StageResult], *, require_kinds: Sequence[str] = ()
) -> tuple[list[CheckOutcome], list[CellVerdict], list[str]]:
    """One check per required cell: it has results, each of them passed, and every required stage kind ran.

    Required means marked ``required`` in the matrix, or on a backend the matrix's gate
    settings list in ``required-backends``.
    A missing result fails (the runner never came, the job was skipped); a ``fallback``
    (ran, but on a fallback backend, not the one the cell names) fails; ``skipped`` fails.
    Returns the checks, a verdict for every planned cell, and warnings (results for cells
    the plan does not name).
    """
    by_cell: dict[str, list[StageResult]] = defaultdict(list)
    for result in results:
        if result.cell_id is not None:
            by_cell[result.cell_id].append(result)
    planned_ids = {cell.id for cell in plan.cells}
    warnings = [
        f"{len(items)} result(s) for cell {cid!r}, which the plan does not name (e.g. {items[0].path})"
        for cid, items in sorted(by_cell.items())
        if cid not in planned_ids
    ]
    checks: list[CheckOutcome] = []
    verdicts: list[CellVerdict] = []
    for cell in plan.cells:
        required = plan.required(cell)
        items = by_cell.get(cell.id, [])
        kinds = tuple(sorted({r.kind for r in items}))
        status = _worst([r.status for r in items]) if items else "missing"
        missing_kinds = [k for k in require_kinds if k not in kinds]
        if items and missing_kinds and status == "passed":
            status = "missing"
        verdicts.append(CellVerdict(id=cell.id, required=required, status=status, kinds=kinds))
        if not required:
            continue
        name = f"cell:{cell.id}"
        if not items:
            checks.append(CheckOutcome(
                name=name, passed=False,
                reason="got no result, expected a passing result (its job did not run or uploaded nothing)",
            ))
            continue
        bad = [r for r in items if r.status != "passed"]
        if bad:
            first = bad[0]
            more = f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""
            why = f": {first.summary}" if first.summary else ""
            checks.append(CheckOutcome(
                name=name, passed=False,
                reason=f"got {first.kind} {first.status}{why}{more}, expected passed",
                details={"results": [{"kind": r.kind, "status": r.status, "path": str(r.path)} for r in bad]},
            ))
            continue
        if missing_kinds:
            checks.append(CheckOutcome(
                name=name, passed=False,
                reason=f"got results for {', '.join(kinds)}, expected also {', '.join(missing_kinds)}",
            ))
            continue
        checks.append(CheckOutcome(
            name=name, passed=True,
            reason=f"got {len(items)} passing result(s) ({', '.join(kinds)}), expected passed",
        ))
    if not plan.cells:
        checks.append(CheckOutcome(name="plan", passed=False, reason="got an empty plan, expected cells"))
    elif not any(plan.required(cell) for cell in plan.cells):
        checks.append(CheckOutcome(
            name="plan", passed=False,
            reason=f"got {len(plan.cells)} cell(s), none required; expected at least one required cell",
        ))
    backends = {cell.backend for cell in plan.cells}
    for backend in plan.required_backends:
        if backend not in backends:
            checks.append(CheckOutcome(
                name="plan", passed=False,
                reason=f"got no cell for required backend {backend}, expected at least one "
                "(matrix gate.required-backends)",
            ))
    return checks, verdicts, warnings


def check_tag_pattern(plan: Plan, tag: str | None) -> CheckOutcome | None:
    """The tag must match the matrix's ``gate.tag-pattern`` (shell-style): other tags are not releases."""
    import fnmatch

    if plan.tag_pattern is None or tag is None:
        return None
    passed = fnmatch.fnmatchcase(tag, plan.tag_pattern)
    return CheckOutcome(
        name="tag-pattern", passed=passed,
        reason=f"got tag {tag!r}, expected one matching {plan.tag_pattern!r} (matrix gate.tag-pattern)",
    )


# -- ABI bump ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class AbiEvidence:
    path: Path
    required_bump: str
    findings: int


def load_abi_diff(path: Path) -> AbiEvidence:
    from xcompat.jsonio import read_json

    document = read_json(path)
    if not isinstance(document, dict):
        raise InputError("an ABI diff must be a JSON object", file=path)
    required = document.get("required_bump")
    if required not in BUMP_ORDER:
        raise InputError(
            f"$.required_bump: got {required!r}, expected one of {', '.join(BUMP_ORDER)}",
            file=path, hint="write it with: xcompat abi diff OLD NEW --format json",
        )
    findings = document.get("findings", [])
    gating = [f for f in findings if isinstance(f, dict) and f.get("required_bump") == required] \
        if isinstance(findings, list) else []
    return AbiEvidence(path=path, required_bump=required, findings=len(gating))


def check_abi_bump(evidence: Sequence[AbiEvidence], step: ReleaseStep | None) -> CheckOutcome:
    worst = max(evidence, key=lambda e: bump_rank(e.required_bump))
    need = worst.required_bump
    where = f"{worst.path}" + (f", {worst.findings} finding(s) at that level" if worst.findings else "")
    details: dict[str, Any] = {"required_bump": need, "abi_diff": str(worst.path)}
    if step is None:
        return CheckOutcome(
            name="version-bump", passed=False,
            reason=f"got no release tag, expected one to compare the ABI diff's {need} bump with "
            "(pass --tag, or run on a tag pipeline)",
            details=details,
        )
    details.update(tag=step.tag, previous_tag=step.previous_tag)
    if step.previous_tag is None:
        return CheckOutcome(
            name="version-bump", passed=True,
            reason=f"got a first release {step.tag} (no earlier release tag), so any bump is allowed; "
            f"the ABI diff requires {need}",
            details=details,
        )
    if step.bump is None:
        return CheckOutcome(
            name="version-bump", passed=False,
            reason=f"got {step.previous_tag} -> {step.tag} ({step.previous_version} -> {step.version}), "
            "expected a version greater than the last release",
            details=details,
        )
    details["actual_bump"] = step.bump
    passed = bump_rank(need) <= bump_rank(step.bump)
    return CheckOutcome(
        name="version-bump", passed=passed,
        reason=f"got a {step.bump} bump ({step.previous_tag} -> {step.tag}), "
        f"expected at least {need} (ABI diff {where})",
        details=details,
    )


# -- coverage ---------------------------------------------------------------------------


def check_coverage(path: Path) -> CheckOutcome:
    """The merged coverage passed: its ``status``, and each threshold check it carries (``gate``)."""
    from xcompat.jsonio import read_json

    document = read_json(path)
    if not isinstance(document, dict) or "status" not in document:
        raise InputError("a coverage result needs the envelope field 'status'", file=path,
                         hint="write it with: xcompat coverage merge")
    status = document["status"]
    if status not in ("passed", "failed", "crashed", "skipped", "fallback"):
        raise InputError(f"$.status: unexpected value {status!r}", file=path)
    thresholds = document.get("gate", [])
    if not isinstance(thresholds, list) or not all(
        isinstance(t, dict) and isinstance(t.get("passed"), bool) for t in thresholds
    ):
        raise InputError("$.gate: expected a list of threshold checks with 'passed'", file=path)
    details: dict[str, Any] = {"coverage": str(path), "status": status, "thresholds": thresholds}
    failing = [t for t in thresholds if not t["passed"]]

    def describe(t: dict[str, Any]) -> str:
        actual = t.get("actual")
        got = "not measured" if actual is None else f"{actual:.1f}%"
        return f"{t.get('name', '?')} {got} (threshold {t.get('threshold', '?')}%)"

    if status == "passed" and not failing:
        held = ", ".join(describe(t) for t in thresholds) or "no threshold set"
        return CheckOutcome(name="coverage", passed=True, reason=f"got passed ({held}), expected passed",
                            details=details)
    if failing:
        why = "; ".join(describe(t) for t in failing)
    else:
        why = document.get("summary") or "a threshold does not hold"
    return CheckOutcome(name="coverage", passed=False, reason=f"got {status} ({why}), expected passed",
                        details=details)


# -- matrix signature -----------------------------------------------------------------


def check_matrix_signature(
    matrix: Path, allowed_signers: Path, *, trust_ref: str | None, signature: Path | None,
    revoked: Path | None, env: Mapping[str, str], repo: str | None = None,
) -> tuple[CheckOutcome, Any]:
    """Verify the matrix with ``xcompat.signing.verify_matrix``.

    Returns the outcome and the ``VerifiedMatrix`` (None when refused). A refusal of the
    signature (exit 3) is a failed check; a malformed input (exit 2) still raises.
    """
    from xcompat.signing import verify_matrix

    details: dict[str, Any] = {"matrix": str(matrix), "trust_ref": trust_ref}
    try:
        verified = verify_matrix(matrix, allowed_signers=allowed_signers, signature=signature,
                                 revoked=revoked, trust_ref=trust_ref, repo=repo, env=env)
    except XcompatError as exc:
        if exc.exit_code == 2:
            raise
        return CheckOutcome(name="matrix-signature", passed=False,
                            reason=f"got {exc}, expected a signature by a trusted key", details=details), None
    source = f"the trust list at {trust_ref}" if trust_ref else f"the trust list {allowed_signers} (no trust ref)"
    details.update(principal=verified.principal, fingerprint=verified.fingerprint, sha256=verified.sha256,
                   serial=verified.matrix.serial)
    return CheckOutcome(
        name="matrix-signature", passed=True,
        reason=f"got a valid signature by {verified.principal} ({verified.fingerprint}), "
        f"expected one verified against {source}",
        details=details,
    ), verified


def check_plan_source(plan: Plan, verified_sha256: str | None, matrix: Path) -> CheckOutcome:
    """The plan judged must be the plan of the matrix whose signature was checked (same sha256)."""
    if verified_sha256 is None:
        return CheckOutcome(name="plan-source", passed=False,
                            reason=f"got an unverified matrix {matrix}, expected the plan of a verified one")
    if plan.matrix_sha256 is None:
        return CheckOutcome(name="plan-source", passed=False,
                            reason="got a plan without matrix_sha256, expected one made by `xcompat matrix plan`")
    return CheckOutcome(
        name="plan-source", passed=plan.matrix_sha256 == verified_sha256,
        reason=f"got a plan of matrix sha256 {plan.matrix_sha256[:16]}, expected {verified_sha256[:16]} "
        f"(the verified {matrix})",
    )


# -- the exact wheel set ---------------------------------------------------------------


def _sha256(path: Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_wheels(dist: Path, plan: Plan | None, results: Sequence[StageResult]) -> CheckOutcome:
    """The wheels about to be published are exactly the ones passing builds of required cells recorded.

    Every ``*.whl`` in ``dist`` must match, by name and sha256, a wheel recorded by a
    passing build result; every wheel name those builds recorded must be in ``dist``.
    Provenance is then attested over these bytes, not over whatever a later step rebuilt.
    """
    if not dist.is_dir():
        raise InputError("wheel folder not found", file=dist, hint="download the wheel artifacts there first")
    required = None if plan is None else {c.id for c in plan.cells if plan.required(c)}
    recorded: dict[str, set[str]] = defaultdict(set)
    for result in results:
        if result.kind != "build" or result.status != "passed":
            continue
        if required is not None and result.cell_id is not None and result.cell_id not in required:
            continue
        for wheel in result.wheels:
            recorded[wheel.file].add(wheel.sha256)
    on_disk = {path.name: _sha256(path) for path in sorted(dist.glob("*.whl"))}
    details: dict[str, Any] = {"dist": str(dist), "wheels": sorted(on_disk)}
    if not on_disk:
        return CheckOutcome(name="wheels", passed=False,
                            reason=f"got no wheel in {dist}, expected the wheels the builds recorded",
                            details=details)
    unknown = [name for name, digest in on_disk.items() if digest not in recorded.get(name, set())]
    missing = sorted(set(recorded) - set(on_disk))
    if unknown or missing:
        parts = []
        if unknown:
            parts.append(f"{len(unknown)} wheel(s) no passing build recorded with these bytes ({', '.join(unknown[:3])})")
        if missing:
            parts.append(f"{len(missing)} recorded wheel(s) absent ({', '.join(missing[:3])})")
        details.update(unrecorded=unknown, missing=missing)
        return CheckOutcome(name="wheels", passed=False,
                            reason=f"got {'; '.join(parts)}, expected exactly the built and tested set",
                            details=details)
    return CheckOutcome(
        name="wheels", passed=True,
        reason=f"got {len(on_disk)} wheel(s) matching the sha256 their builds recorded, expected exactly those",
        details=details,
    )
