"""Verify a signed matrix: signature, trust list, revocation, repo binding, expiry, rollback.

Order of checks (each failure raises ``VerificationError``, exit code 3, with its own
message):

1. read the matrix bytes once and the armored signature (``FILE.sig`` by default);
2. the trust inputs: ``allowed_signers``, the revoked list and (with ``trust_ref``) the
   previous matrix, all from the trusted git commit when ``trust_ref`` is given;
3. strict SSHSIG parse (format, key type, hash), exact namespace ``xcompat-matrix-v1``;
4. the key is not revoked, and a byte-identical key in allowed_signers allows the
   namespace and is valid *now* (the CI clock, never a time from git);
5. the ECDSA signature over those bytes (security keys: user presence required);
6. only then parse the verified bytes (never a re-read of the file) and check ``repo``,
   ``expires`` and, with ``trust_ref``, that ``serial`` grew unless the bytes are identical.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from xcompat.errors import InputError, VerificationError
from xcompat.limits import LIMITS
from xcompat.matrix import Matrix, load_matrix, read_matrix_bytes
from xcompat.signing.allowed_signers import AllowedSigner, find_signer, match_pattern_list
from xcompat.signing.sshsig import (
    NAMESPACE,
    SK_USER_PRESENT,
    SignatureFormatError,
    SshSignature,
    check_signature,
    parse_signature,
)
from xcompat.signing.trust_inputs import TrustInputs, read_trust_inputs, read_verification_bytes

# Where CI services say which repository a job runs for.
REPO_ENV_VARS = ("GITHUB_REPOSITORY", "CI_PROJECT_PATH")


@dataclass(frozen=True, kw_only=True)
class VerifiedMatrix:
    """A matrix whose signature, signer and freshness were checked. ``matrix`` is parsed from ``data``."""

    matrix: Matrix
    data: bytes
    sha256: str
    principal: str
    fingerprint: str
    key_type: str
    hash_algorithm: str
    namespace: str
    matrix_path: str
    signature_path: str
    allowed_signers_source: str
    revoked_source: str | None = None
    repo_checked: str | None = None  # the repository the binding was checked against, None when unknown
    trust_ref: str | None = None
    trust_commit: str | None = None
    trusted_serial: int | None = None  # serial of the matrix at the trust ref (None: no matrix there)
    unchanged: bool = False  # bytes identical to the trusted matrix
    cross_checked: bool = False  # ssh-keygen -Y verify agreed on the same bytes
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, object]:
        """The verify result as JSON data (``schemas/verify.schema.json``)."""
        return {
            "version": 1,
            "verified": True,
            "matrix": self.matrix_path,
            "signature": self.signature_path,
            "sha256": self.sha256,
            "repo": self.matrix.repo,
            "serial": self.matrix.serial,
            "expires": self.matrix.expires.isoformat() if self.matrix.expires else None,
            "principal": self.principal,
            "fingerprint": self.fingerprint,
            "key_type": self.key_type,
            "hash_algorithm": self.hash_algorithm,
            "namespace": self.namespace,
            "allowed_signers": self.allowed_signers_source,
            "revoked": self.revoked_source,
            "repo_checked": self.repo_checked,
            "trust_ref": self.trust_ref,
            "trust_commit": self.trust_commit,
            "trusted_serial": self.trusted_serial,
            "unchanged": self.unchanged,
            "cross_checked": self.cross_checked,
            "notes": list(self.notes),
        }


def _now(now: _dt.datetime | None) -> _dt.datetime:
    if now is None:
        return _dt.datetime.now(_dt.timezone.utc)
    return now if now.tzinfo else now.replace(tzinfo=_dt.timezone.utc)


def _trusted_serial(previous: bytes, where: str) -> int:
    from xcompat.matrix.yamlload import load_yaml

    try:
        doc = load_yaml(previous, source=where).data
    except InputError as exc:
        raise VerificationError(
            f"cannot read the serial of the trusted matrix {where}: {exc.message}"
        ) from None
    serial = doc.get("serial") if isinstance(doc, dict) else None
    if not isinstance(serial, int) or isinstance(serial, bool):
        raise VerificationError(f"the trusted matrix {where} has no integer serial")
    return serial


def _checked_signature(sig_bytes: bytes, sig_path: Path, data: bytes, matrix_path: Path, trust: TrustInputs, *,
                       principal: str | None, now: _dt.datetime) -> tuple[SshSignature, AllowedSigner]:
    """The signature over ``data``, after every check of it and of its signer (steps 3 to 5)."""
    entries = trust.signers()
    revoked_keys = trust.revoked_keys()
    try:
        sig = parse_signature(sig_bytes)
    except SignatureFormatError as exc:
        raise VerificationError(f"malformed signature: {exc}", file=str(sig_path)) from None
    fp = sig.fingerprint
    if sig.namespace != NAMESPACE:
        raise VerificationError(
            f"signature namespace is {sig.namespace!r}, expected {NAMESPACE!r}",
            file=str(sig_path),
            hint=f"a signature made for another purpose is not valid here; sign with -n {NAMESPACE}",
        )
    if revoked_keys is not None and revoked_keys.is_revoked(sig.public_key):
        raise VerificationError(
            f"signing key {fp} is revoked (listed in {trust.revoked_source})",
            hint="re-sign the matrix with a key that is not revoked",
        )
    signer = _allowed_signer(sig, entries, trust.signers_source, principal=principal, now=now)
    if not check_signature(sig, data):
        raise VerificationError(
            f"signature does not match the contents of {matrix_path} (the file or the signature changed after signing)",
            file=str(matrix_path),
            hint="re-sign after reviewing the change: xcompat matrix sign",
        )
    if sig.sk_flags is not None and not sig.sk_flags & SK_USER_PRESENT:
        raise VerificationError(
            f"security-key signature by {fp} was made without user presence (the key was not touched)",
            hint="sign again and touch the security key",
        )
    return sig, signer


def _allowed_signer(sig: SshSignature, entries: list[AllowedSigner], signers_source: str, *,
                    principal: str | None, now: _dt.datetime) -> AllowedSigner:
    """The entry of the trust list that allows the signing key now (and names ``principal``)."""
    fp = sig.fingerprint
    match = find_signer(entries, sig.public_key, namespace=NAMESPACE, now=now)
    if match.signer is None:
        if match.reason is None:
            raise VerificationError(
                f"signing key {fp} ({sig.public_key.key_type}) is not in allowed_signers ({signers_source})",
                hint="the signer must be enrolled in the trusted allowed_signers",
            )
        raise VerificationError(
            f"signing key {fp} is not accepted by allowed_signers ({signers_source}): {match.reason}"
        )
    signer = match.signer
    if principal is not None and not match_pattern_list(principal, signer.principals):
        raise VerificationError(f"signed by {signer.principals!r}, expected principal {principal!r}")
    return signer


def _checked_binding(matrix: Matrix, matrix_path: Path, expected_repo: str | None, now: _dt.datetime) -> None:
    """The matrix names this repository and has not expired (step 6)."""
    if expected_repo is not None and matrix.repo.lower() != expected_repo.lower():
        raise VerificationError(
            f"matrix is bound to repository {matrix.repo!r}, but this is {expected_repo!r}",
            file=str(matrix_path),
            hint="a signed matrix cannot be replayed in another repository or fork",
        )
    if matrix.expired(now.date()):
        raise VerificationError(
            f"matrix signature expired on {matrix.expires}; review it and re-sign with a later expires:",
            file=str(matrix_path),
        )


def _checked_serial(matrix: Matrix, data: bytes, matrix_path: Path, trust: TrustInputs,
                    trust_ref: str | None) -> tuple[int | None, bool]:
    """(the trusted serial, whether the bytes are unchanged): a changed matrix must have a
    higher serial than the one at the trust ref (no rollback)."""
    if trust.root is None or trust.previous is None:
        return None, False
    unchanged = trust.previous == data
    trusted_serial = _trusted_serial(trust.previous, trust.root.describe(matrix_path))
    if not unchanged and matrix.serial <= trusted_serial:
        raise VerificationError(
            f"rollback refused: serial {matrix.serial} is not greater than the trusted serial "
            f"{trusted_serial} at {trust_ref}, and the file differs",
            file=str(matrix_path),
            hint="every change needs a higher serial (xcompat matrix sign bumps it)",
        )
    return trusted_serial, unchanged


def _cross_checked(data: bytes, sig_bytes: bytes, signer: AllowedSigner, trust: TrustInputs) -> None:
    """``ssh-keygen -Y verify`` accepts the same bytes with the same trust inputs."""
    from xcompat.signing.ssh_keygen import cross_check_verify

    first = signer.principals.split(",")[0].strip()
    identity = first if not any(c in first for c in "*?!") else signer.principals
    agreed, said = cross_check_verify(
        data,
        sig_bytes,
        allowed_signers=trust.signers_raw,
        principal=identity,
        namespace=NAMESPACE,
        revoked=trust.revoked_raw,
    )
    if not agreed:
        raise VerificationError(
            f"ssh-keygen -Y verify disagrees and refuses the signature: {said}",
            hint="xcompat fails closed when the two verifiers disagree",
        )


def verify_matrix(
    matrix_path: str | Path,
    *,
    allowed_signers: str | Path,
    signature: str | Path | None = None,
    revoked: str | Path | None = None,
    trust_ref: str | None = None,
    now: _dt.datetime | None = None,
    repo: str | None = None,
    principal: str | None = None,
    env: Mapping[str, str] | None = None,
    cross_check: bool = False,
) -> VerifiedMatrix:
    """Verify ``matrix_path`` and return the matrix parsed from the verified bytes.

    ``allowed_signers`` and ``revoked`` are paths; with ``trust_ref`` they (and the
    previous matrix at the same path) are read from that git ref instead of the working
    tree. ``repo`` is the repository the matrix must be bound to (default: from
    ``GITHUB_REPOSITORY`` / ``CI_PROJECT_PATH`` in ``env``; unchecked when unknown).
    ``principal``: optionally require that the signer's principals match this name.
    ``cross_check``: also run ``ssh-keygen -Y verify`` on the same bytes and trust inputs;
    a disagreement is a refusal. ``now`` exists for tests; production uses the current clock.
    Raises ``VerificationError`` (exit 3) or ``InputError`` (exit 2, malformed inputs).
    """
    env = os.environ if env is None else env
    matrix_path = Path(matrix_path)
    sig_path = Path(signature) if signature is not None else matrix_path.with_name(matrix_path.name + ".sig")
    now_dt = _now(now)

    data = read_matrix_bytes(matrix_path)
    sig_bytes = read_verification_bytes(sig_path, "signature", missing_is_verification=True,
                                        limit=LIMITS.signature_bytes)
    trust = read_trust_inputs(matrix_path, allowed_signers=allowed_signers, revoked=revoked, trust_ref=trust_ref)
    notes = list(trust.notes)
    sig, signer = _checked_signature(sig_bytes, sig_path, data, matrix_path, trust, principal=principal, now=now_dt)

    # Only now are the bytes parsed: the ones verified, never a re-read of the file.
    matrix = load_matrix(data, source=str(matrix_path))
    expected_repo = repo or next((env[v] for v in REPO_ENV_VARS if env.get(v)), None)
    _checked_binding(matrix, matrix_path, expected_repo, now_dt)
    if expected_repo is None:
        notes.append("repository binding not checked (pass --repo, or run under GitHub Actions / GitLab CI)")
    trusted_serial, unchanged = _checked_serial(matrix, data, matrix_path, trust, trust_ref)
    if cross_check:
        _cross_checked(data, sig_bytes, signer, trust)
    return VerifiedMatrix(
        matrix=matrix,
        data=data,
        sha256=hashlib.sha256(data).hexdigest(),
        principal=signer.principals,
        fingerprint=sig.fingerprint,
        key_type=sig.public_key.key_type,
        hash_algorithm=sig.hash_algorithm,
        namespace=sig.namespace,
        matrix_path=str(matrix_path),
        signature_path=str(sig_path),
        allowed_signers_source=trust.signers_source,
        revoked_source=trust.revoked_source,
        repo_checked=expected_repo,
        trust_ref=trust_ref,
        trust_commit=trust.root.commit if trust.root else None,
        trusted_serial=trusted_serial,
        unchanged=unchanged,
        cross_checked=cross_check,
        notes=tuple(notes),
    )
