"""OpenSSH signatures (SSHSIG) over the test matrix.

Public API::

    from xcompat.signing import verify_matrix, VerifiedMatrix, sign_matrix
    vm = verify_matrix(".xcompat/matrix.yml", allowed_signers=".xcompat/allowed_signers",
                       revoked=None, trust_ref="origin/main")
    vm.principal, vm.fingerprint, vm.key_type, vm.matrix      # matrix parsed from the verified bytes

``verify_matrix`` raises ``xcompat.errors.VerificationError`` (exit code 3) with a
distinct message for each refusal: malformed signature, wrong namespace, refused key
type or hash, revoked key, key not in allowed_signers, key not valid now, namespace not
allowed for the key, tampered file, missing user presence, wrong repository, expired
matrix, rollback. Lower layers: ``sshsig`` (format, maths), ``keys`` (key types,
fingerprints), ``allowed_signers`` (trust list, revocation), ``trust`` (git ref),
``trust_inputs`` (the trust list, revoked keys and previous matrix a verification reads),
``ssh_keygen`` (driver), ``sign`` (bump serial and sign).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xcompat.signing.sshsig import NAMESPACE

if TYPE_CHECKING:
    from xcompat.signing.sign import SignResult, sign_matrix
    from xcompat.signing.verify import VerifiedMatrix, verify_matrix

__all__ = ["NAMESPACE", "SignResult", "VerifiedMatrix", "sign_matrix", "verify_matrix"]


def __getattr__(name: str) -> Any:
    # Imported on first use so that importing xcompat.signing stays cheap.
    if name in ("verify_matrix", "VerifiedMatrix"):
        from xcompat.signing import verify

        return getattr(verify, name)
    if name in ("sign_matrix", "SignResult"):
        from xcompat.signing import sign

        return getattr(sign, name)
    raise AttributeError(name)
