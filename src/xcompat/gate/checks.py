"""The release gate's checks. Each returns ``CheckOutcome`` objects and never raises for a
negative verdict; malformed input still raises ``InputError`` (exit 2), because a gate that
cannot read its evidence must not guess, and a forged plan ``VerificationError`` (exit 3).

Every reason reads "got X, expected Y" so a refused release says what to change. The checks
of the plan's cells are ``xcompat.gate.cell_checks``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xcompat.errors import InputError, VerificationError, XcompatError
from xcompat.gate.results import StageResult, wheels_of
from xcompat.gate.versions import ReleaseStep
from xcompat.results.status import BUMP_ORDER, bump_rank
from xcompat.settings import Settings


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


# -- tag ----------------------------------------------------------------------------------


def check_tag_pattern(settings: Settings | None, tag: str | None) -> CheckOutcome | None:
    """The tag must match the matrix's ``gate.tag-pattern`` (shell-style): other tags are not releases."""
    import fnmatch

    if settings is None or tag is None:
        return None
    pattern = settings.gate.tag_pattern
    passed = fnmatch.fnmatchcase(tag, pattern)
    return CheckOutcome(
        name="tag-pattern", passed=passed,
        reason=f"got tag {tag!r}, expected one matching {pattern!r} (matrix gate.tag-pattern)",
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
    reason = (f"got a {step.bump} bump ({step.previous_tag} -> {step.tag}), "
              f"expected at least {need} (ABI diff {where})")
    if not passed and step.previous_version:
        from xcompat.abi.semver import next_version

        # the same suggestion the report makes (one function computes it)
        suggested = next_version(step.previous_version, need)  # type: ignore[arg-type]
        if suggested:
            details["suggested_version"] = suggested
            reason += f"; release as {suggested}"
    return CheckOutcome(name="version-bump", passed=passed, reason=reason, details=details)


# -- coverage ---------------------------------------------------------------------------


def check_coverage(path: Path, signed: Any = None) -> CheckOutcome:
    """The merged coverage passed: its ``status``, and each threshold check it carries (``gate``).

    The file must be a coverage result (kind, integer version, finite numbers), and with
    ``signed`` (the verified matrix's ``coverage`` settings) those thresholds are applied again
    to the percentages it measured: the file's own verdict is a claim (xcompat.coverage.result_check).
    """
    from xcompat.coverage.result_check import check_coverage_document, matrix_thresholds, recheck_coverage
    from xcompat.jsonio import read_json

    document = read_json(path)
    if not isinstance(document, dict) or "status" not in document:
        raise InputError("a coverage result needs the envelope field 'status'", file=path,
                         hint="write it with: xcompat coverage merge")
    check_coverage_document(document, source=str(path), schema=False)
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
    if signed is not None:
        rechecked = [c.to_dict() for c in recheck_coverage(document, source=str(path),
                                                           thresholds=matrix_thresholds(signed))]
        details["signed_thresholds"] = rechecked
        failing += [t for t in rechecked if not t["passed"]]

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


def check_plan_source(plan: Mapping[str, Any], verified: Any, *, plan_path: Path, matrix: Path) -> CheckOutcome:
    """The plan judged must be the plan of the matrix whose signature was checked.

    ``verified``: the ``VerifiedMatrix`` (None when its signature was refused). A plan of
    another matrix (its ``matrix_sha256`` names other bytes) fails this check. A plan that
    names the verified bytes but is not the plan they yield (``plan_mismatch``: the plan is
    recomputed from the verified matrix and compared whole, cells and settings) was edited
    after it was made, keeping the field: it is refused outright (``VerificationError``,
    exit 3), as ``xcompat matrix settings --plan --matrix --expect-sha256`` refuses it.
    """
    from xcompat.matrix.plan import plan_mismatch

    if verified is None:
        return CheckOutcome(name="plan-source", passed=False,
                            reason=f"got an unverified matrix {matrix}, expected the plan of a verified one")
    sha = plan.get("matrix_sha256")
    if not isinstance(sha, str) or not sha:
        return CheckOutcome(name="plan-source", passed=False,
                            reason="got a plan without matrix_sha256, expected one made by `xcompat matrix plan`")
    reason = (f"got a plan of matrix sha256 {sha[:16]}, expected {verified.sha256[:16]} "
              f"(the verified {matrix})")
    if sha != verified.sha256:
        return CheckOutcome(name="plan-source", passed=False, reason=reason)
    mismatch = plan_mismatch(plan, verified.matrix)
    if mismatch is not None:
        raise VerificationError(
            f"{mismatch} is not what the verified matrix {matrix} (sha256 {verified.sha256[:16]}) yields; "
            "refusing the plan",
            file=plan_path, hint="pass the plan `xcompat matrix plan` wrote from this matrix, unedited",
        )
    return CheckOutcome(name="plan-source", passed=True, reason=reason)


# -- the exact wheel set ---------------------------------------------------------------


def _sha256(path: Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_wheels(dist: Path, results: Sequence[StageResult], required_ids: set[str] | None = None) -> CheckOutcome:
    """The wheels about to be published are exactly the ones passing builds of required cells recorded.

    Every ``*.whl`` in ``dist`` must match, by name and sha256, a wheel recorded by a
    passing build result; every wheel name those builds recorded must be in ``dist``; and
    nothing else may lie there that an upload would publish too (``twine upload dist/*``, as
    pypa/gh-action-pypi-publish runs it, takes every file: an sdist dropped there by a build
    step would go out ungated). Provenance is then attested over these bytes, not over
    whatever a later step rebuilt. ``required_ids``: the required cells whose builds count
    (None: every build).
    """
    if not dist.is_dir():
        raise InputError("wheel folder not found", file=dist, hint="download the wheel artifacts there first")
    from xcompat.results.verdict import expand

    results = expand(results)
    recorded: dict[str, set[str]] = defaultdict(set)
    for result in results:
        if result.kind != "build" or result.status != "passed":
            continue
        if required_ids is not None and result.cell_id is not None and result.cell_id not in required_ids:
            continue
        for wheel in wheels_of(result):
            recorded[wheel.file].add(wheel.sha256)
    on_disk = {path.name: _sha256(path) for path in sorted(dist.glob("*.whl"))}
    details: dict[str, Any] = {"dist": str(dist), "wheels": sorted(on_disk)}
    if not on_disk:
        return CheckOutcome(name="wheels", passed=False,
                            reason=f"got no wheel in {dist}, expected the wheels the builds recorded",
                            details=details)
    unknown = [name for name, digest in on_disk.items() if digest not in recorded.get(name, set())]
    missing = sorted(set(recorded) - set(on_disk))
    # dotfiles are not matched by the upload's glob; folders are not uploaded
    others = sorted(p.name for p in dist.iterdir() if p.suffix != ".whl" and not p.name.startswith(".")
                    and not p.is_dir())
    if unknown or missing or others:
        parts = []
        if others:
            parts.append(f"{len(others)} file(s) that are not recorded wheels but would be uploaded too "
                         f"({', '.join(others[:3])})")
            details["others"] = others
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
