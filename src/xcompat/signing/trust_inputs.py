"""The trust inputs of a verification: the ``allowed_signers`` list, the revoked-keys list and
(with a trust ref) the previous matrix, read either from the working tree or from the trusted
git commit, and parsed.

Revocation is always on: without ``--revoked``, ``revoked_keys`` next to the trust list applies
when it exists; a list named explicitly must exist (a missing one fails closed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xcompat.errors import InputError, VerificationError
from xcompat.limits import LIMITS, read_bounded
from xcompat.signing.allowed_signers import AllowedSigner, RevokedKeys, parse_allowed_signers, parse_revoked
from xcompat.signing.trust import TrustRoot, open_trust_root

REVOKED_KEYS_NAME = "revoked_keys"


def default_revoked_path(allowed_signers: str | Path) -> Path:
    """Where the revoked-keys list lives when none is named: next to the trust list."""
    return Path(allowed_signers).with_name(REVOKED_KEYS_NAME)


def read_verification_bytes(path: Path, what: str, *, missing_is_verification: bool, limit: int) -> bytes:
    """The bytes of ``path``; with ``missing_is_verification``, a missing file fails the
    verification (exit 3) instead of being a bad input."""
    try:
        return read_bounded(path, what=what, limit=limit)
    except InputError as exc:
        if missing_is_verification and isinstance(exc.__cause__, FileNotFoundError):
            raise VerificationError(
                f"{what} not found: {path}",
                file=str(path),
                hint="sign the matrix with: xcompat matrix sign FILE --key KEY",
            ) from None
        raise


def _read_revoked(path: Path) -> bytes:
    try:
        return read_bounded(path, what="revoked-keys file", limit=LIMITS.trust_file_bytes)
    except InputError as exc:
        if isinstance(exc.__cause__, FileNotFoundError):
            raise VerificationError(
                f"the revoked-keys file {path} was named but does not exist",
                file=str(path),
                hint="create it, or drop --revoked to use revoked_keys next to the trust list",
            ) from None
        raise


@dataclass(frozen=True, kw_only=True)
class TrustInputs:
    """The raw trust inputs, where each came from, and what was noted on the way."""

    signers_raw: bytes
    signers_source: str
    revoked_raw: bytes | None
    revoked_source: str | None
    root: TrustRoot | None = None
    previous: bytes | None = None  # the matrix at the trust ref; None: none there (or no ref)
    notes: tuple[str, ...] = ()

    def signers(self) -> list[AllowedSigner]:
        """The parsed trust list; one that lists no keys trusts nothing and is refused."""
        try:
            text = self.signers_raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("allowed_signers is not UTF-8 text", file=self.signers_source) from None
        entries = parse_allowed_signers(text, source=self.signers_source)
        if not entries:
            raise VerificationError(
                f"allowed_signers ({self.signers_source}) lists no keys, so nothing can be trusted"
            )
        return entries

    def revoked_keys(self) -> RevokedKeys | None:
        if self.revoked_raw is None:
            return None
        return parse_revoked(self.revoked_raw, source=self.revoked_source or "")


def _at_trust_ref(trust_ref: str, matrix_path: Path, allowed_signers: str | Path,
                  revoked: str | Path | None) -> TrustInputs:
    revoked_path = revoked if revoked is not None else default_revoked_path(allowed_signers)
    root = open_trust_root(trust_ref, matrix_path)
    signers_raw = root.read(allowed_signers)
    signers_source = root.describe(allowed_signers)
    if signers_raw is None:
        raise VerificationError(
            f"allowed_signers does not exist at the trust ref ({signers_source})",
            hint="the trust list must be committed on the base branch before it can vouch for a signature",
        )
    revoked_source: str | None = root.describe(revoked_path)
    revoked_raw = root.read(revoked_path)
    if revoked_raw is None:
        if revoked is not None:
            raise VerificationError(
                f"the revoked-keys file {revoked_source} was named but does not exist at the trust ref",
                hint="commit it on the base branch, or drop --revoked to use revoked_keys next to the trust list",
            )
        revoked_source = None  # the default list is optional: its absence means no revocations
    previous = root.read(matrix_path)
    notes = () if previous is not None else (
        f"no matrix at {root.describe(matrix_path)}: first signed version, no rollback check",)
    return TrustInputs(signers_raw=signers_raw, signers_source=signers_source, revoked_raw=revoked_raw,
                       revoked_source=revoked_source, root=root, previous=previous, notes=notes)


def _in_working_tree(allowed_signers: str | Path, revoked: str | Path | None) -> TrustInputs:
    revoked_path = revoked if revoked is not None else default_revoked_path(allowed_signers)
    signers_raw = read_verification_bytes(Path(allowed_signers), "allowed_signers", missing_is_verification=False,
                                          limit=LIMITS.trust_file_bytes)
    if revoked is not None or Path(revoked_path).exists():
        return TrustInputs(signers_raw=signers_raw, signers_source=str(allowed_signers),
                           revoked_raw=_read_revoked(Path(revoked_path)), revoked_source=str(revoked_path))
    return TrustInputs(signers_raw=signers_raw, signers_source=str(allowed_signers), revoked_raw=None,
                       revoked_source=None)


def read_trust_inputs(matrix_path: Path, *, allowed_signers: str | Path, revoked: str | Path | None,
                      trust_ref: str | None) -> TrustInputs:
    """The trust inputs: from ``trust_ref`` when given (and the matrix there), else the working tree."""
    if trust_ref:
        return _at_trust_ref(trust_ref, matrix_path, allowed_signers, revoked)
    return _in_working_tree(allowed_signers, revoked)
