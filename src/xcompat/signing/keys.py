"""SSH public keys: parsing, the key-type policy, and ``SHA256:`` fingerprints.

Fingerprints match ``ssh-keygen -l``: base64 (no padding) of SHA-256 over the key blob.
Only ``ecdsa-sha2-nistp256``, ``ecdsa-sha2-nistp384`` and
``sk-ecdsa-sha2-nistp256@openssh.com`` may sign a matrix (ECDSA on FIPS 186-5 curves);
any key can be fingerprinted.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass
from typing import Any

from xcompat.signing.wire import Reader, WireError

# key type -> (curve name in the blob, curve bits, hash used by the ECDSA signature)
ACCEPTED_KEY_TYPES: dict[str, tuple[str, int, str]] = {
    "ecdsa-sha2-nistp256": ("nistp256", 256, "sha256"),
    "ecdsa-sha2-nistp384": ("nistp384", 384, "sha384"),
    "sk-ecdsa-sha2-nistp256@openssh.com": ("nistp256", 256, "sha256"),
}

SK_ECDSA = "sk-ecdsa-sha2-nistp256@openssh.com"

_ACCEPTED_TEXT = "ecdsa-sha2-nistp256, ecdsa-sha2-nistp384 or sk-ecdsa-sha2-nistp256@openssh.com"


def refusal_for_key_type(key_type: str) -> str | None:
    """None when ``key_type`` may sign a matrix, else the reason it may not."""
    if key_type in ACCEPTED_KEY_TYPES:
        return None
    if key_type.endswith("-cert-v01@openssh.com"):
        why = "SSH certificates are not supported; enrol the plain key in allowed_signers"
    elif "ed25519" in key_type:
        why = "Ed25519 keys are not accepted for matrix signatures (ECDSA only)"
    elif key_type.startswith(("ssh-rsa", "rsa-sha2")):
        why = "RSA keys are not accepted for matrix signatures (ECDSA only)"
    elif key_type == "ssh-dss":
        why = "DSA keys are not accepted (deprecated and insecure)"
    elif key_type == "ecdsa-sha2-nistp521":
        why = "ECDSA P-521 keys are not accepted"
    elif "secp256k1" in key_type or "k1" in key_type:
        why = "secp256k1 is not an OpenSSH curve and not FIPS-approved"
    else:
        why = f"unknown key type {key_type!r}"
    return f"{why}; use {_ACCEPTED_TEXT} (ssh-keygen -t ecdsa -b 256, or -t ecdsa-sk)"


def fingerprint(blob: bytes) -> str:
    """``SHA256:...`` fingerprint of a public-key blob, identical to ``ssh-keygen -l``."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode("ascii").rstrip("=")


@dataclass(frozen=True)
class PublicKey:
    """An SSH public key as it appears on the wire (``blob``) with its parsed fields."""

    key_type: str
    blob: bytes
    comment: str = ""
    curve: str | None = None  # nistp256 / nistp384 for ECDSA keys
    point: bytes | None = None  # uncompressed EC point
    application: str | None = None  # sk keys: FIDO application (usually "ssh:")

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.blob)

    @property
    def bits(self) -> int:
        if self.key_type in ACCEPTED_KEY_TYPES:
            return ACCEPTED_KEY_TYPES[self.key_type][1]
        return _bits_of_other(self.key_type, self.blob)

    @property
    def display_type(self) -> str:
        """The type name ``ssh-keygen -l`` prints in parentheses."""
        kt = self.key_type
        if kt.startswith("sk-ecdsa"):
            return "ECDSA-SK"
        if kt.startswith("sk-ssh-ed25519"):
            return "ED25519-SK"
        if kt.startswith("ecdsa"):
            return "ECDSA"
        if "ed25519" in kt:
            return "ED25519"
        if kt.startswith(("ssh-rsa", "rsa")):
            return "RSA"
        if kt == "ssh-dss":
            return "DSA"
        return kt.upper()

    def openssh_line(self) -> str:
        text = f"{self.key_type} {base64.b64encode(self.blob).decode('ascii')}"
        return f"{text} {self.comment}" if self.comment else text

    def crypto_key(self) -> Any:
        """The ``cryptography`` public key object (the point is checked to lie on the curve)."""
        from cryptography.hazmat.primitives.asymmetric import ec

        if self.key_type not in ACCEPTED_KEY_TYPES or self.point is None:
            raise ValueError(refusal_for_key_type(self.key_type))
        curve = ec.SECP256R1() if self.curve == "nistp256" else ec.SECP384R1()
        return ec.EllipticCurvePublicKey.from_encoded_point(curve, self.point)


def _bits_of_other(key_type: str, blob: bytes) -> int:
    try:
        r = Reader(blob, "public key")
        r.string("key type")
        if key_type == "ssh-rsa":
            r.string("e")
            n = r.string("n")
            return int.from_bytes(n, "big").bit_length()
        if "ed25519" in key_type:
            return 256
        if key_type == "ecdsa-sha2-nistp521":
            return 521
    except WireError:
        pass
    return 0


def parse_public_key_blob(blob: bytes, *, comment: str = "", strict: bool = True) -> PublicKey:
    """Parse a public-key blob. ``strict``: ECDSA blobs must be exact (no trailing bytes).

    Key types outside the accepted set are returned with only ``key_type`` and ``blob``
    filled (so they can still be fingerprinted and named in messages).
    """
    r = Reader(blob, "public key")
    key_type = r.text("key type")
    if key_type not in ACCEPTED_KEY_TYPES:
        return PublicKey(key_type=key_type, blob=bytes(blob), comment=comment)
    expected_curve, bits, _ = ACCEPTED_KEY_TYPES[key_type]
    curve = r.text("curve name")
    if curve != expected_curve:
        raise WireError(f"public key of type {key_type} names curve {curve!r}, expected {expected_curve!r}")
    point = r.string("EC point")
    size = (bits + 7) // 8
    if len(point) != 1 + 2 * size or point[0] != 4:
        raise WireError(f"public key: EC point is not an uncompressed {curve} point")
    application = None
    if key_type == SK_ECDSA:
        application = r.text("FIDO application")
    if strict:
        r.end()
    return PublicKey(
        key_type=key_type,
        blob=bytes(blob),
        comment=comment,
        curve=curve,
        point=point,
        application=application,
    )


def decode_base64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise WireError(f"{what} is not valid base64") from None


def parse_public_key_line(line: str, what: str = "public key") -> PublicKey:
    """Parse ``TYPE BASE64 [COMMENT]`` (an OpenSSH ``.pub`` line)."""
    parts = line.strip().split(None, 2)
    if len(parts) < 2:
        raise WireError(f"{what}: expected 'TYPE BASE64 [COMMENT]'")
    key_type, b64 = parts[0], parts[1]
    blob = decode_base64(b64, what)
    key = parse_public_key_blob(blob, comment=parts[2].strip() if len(parts) > 2 else "", strict=False)
    if key.key_type != key_type:
        raise WireError(f"{what}: line says {key_type!r} but the key inside is {key.key_type!r}")
    return key


def public_key_from_crypto(key: Any, comment: str = "") -> PublicKey:
    """An ``ecdsa-sha2-nistp*`` PublicKey from a ``cryptography`` EC public key."""
    from cryptography.hazmat.primitives import serialization

    line = key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode(
        "ascii"
    )
    pk = parse_public_key_line(line)
    return PublicKey(pk.key_type, pk.blob, comment, pk.curve, pk.point, pk.application)
