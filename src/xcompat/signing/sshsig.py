"""OpenSSH signatures (PROTOCOL.sshsig): strict parsing, ECDSA verification, pure-Python signing.

Interoperable with ``ssh-keygen -Y sign`` / ``-Y verify`` in both directions. The
parser is strict on purpose: exact armor, magic, version 1, no trailing bytes at any
level, canonical integers, one of the accepted key types, the exact namespace, hash
``sha256`` or ``sha512``. Security-key (FIDO) signatures must carry the user-presence
flag, which ``ssh-keygen -Y verify`` itself does not require.

Hand-written with ``cryptography`` doing the maths: the PyPI ``sshsig`` package does not
handle ECDSA keys and nothing else implements SSHSIG in Python.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass
from typing import Any

from xcompat.signing import wire
from xcompat.signing.keys import (
    ACCEPTED_KEY_TYPES,
    SK_ECDSA,
    PublicKey,
    parse_public_key_blob,
    refusal_for_key_type,
)
from xcompat.signing.wire import Reader, WireError

NAMESPACE = "xcompat-matrix-v1"
MAGIC = b"SSHSIG"
VERSION = 1
HASH_ALGORITHMS = ("sha256", "sha512")
ARMOR_BEGIN = "-----BEGIN SSH SIGNATURE-----"
ARMOR_END = "-----END SSH SIGNATURE-----"
ARMOR_WIDTH = 70  # what ssh-keygen writes
MAX_SIGNATURE_BYTES = 16 * 1024
SK_USER_PRESENT = 0x01


class SignatureFormatError(ValueError):
    """The signature is malformed or uses something outside the accepted policy."""


@dataclass(frozen=True)
class SshSignature:
    """A parsed SSHSIG blob."""

    public_key: PublicKey
    namespace: str
    reserved: bytes
    hash_algorithm: str
    signature_type: str
    r: int
    s: int
    sk_flags: int | None = None  # security-key signatures only
    sk_counter: int | None = None
    blob: bytes = b""

    @property
    def fingerprint(self) -> str:
        return self.public_key.fingerprint


def dearmor(text: bytes | str) -> bytes:
    """The SSHSIG blob inside an armored signature; ``SignatureFormatError`` if the armor is wrong."""
    if isinstance(text, bytes):
        if len(text) > MAX_SIGNATURE_BYTES:
            raise SignatureFormatError(f"signature file is larger than {MAX_SIGNATURE_BYTES} bytes")
        try:
            text = text.decode("ascii")
        except UnicodeDecodeError:
            raise SignatureFormatError(
                "signature file is not ASCII text (expected an armored SSH signature)"
            ) from None
    lines = [ln.strip() for ln in text.strip().splitlines()]
    if not lines or lines[0] != ARMOR_BEGIN:
        raise SignatureFormatError(f"signature does not start with {ARMOR_BEGIN}")
    if lines[-1] != ARMOR_END:
        raise SignatureFormatError(f"signature does not end with {ARMOR_END}")
    body = lines[1:-1]
    if any(not ln for ln in body):
        raise SignatureFormatError("blank line inside the armored signature")
    try:
        return base64.b64decode("".join(body).encode("ascii"), validate=True)
    except (binascii.Error, ValueError):
        raise SignatureFormatError("armored signature body is not valid base64") from None


def armor(blob: bytes) -> str:
    b64 = base64.b64encode(blob).decode("ascii")
    lines = [b64[i : i + ARMOR_WIDTH] for i in range(0, len(b64), ARMOR_WIDTH)]
    return "\n".join([ARMOR_BEGIN, *lines, ARMOR_END]) + "\n"


def parse_signature(data: bytes | str) -> SshSignature:
    """Parse an armored SSHSIG signature strictly. Does not check namespace or trust."""
    blob = dearmor(data)
    try:
        return _parse_blob(blob)
    except WireError as exc:
        raise SignatureFormatError(str(exc)) from None


def _parse_blob(blob: bytes) -> SshSignature:
    r = Reader(blob, "signature")
    if r.take(6, "magic") != MAGIC:
        raise SignatureFormatError("not an SSHSIG signature (bad magic)")
    version = r.uint32("version")
    if version != VERSION:
        raise SignatureFormatError(f"unsupported SSHSIG version {version} (expected {VERSION})")
    key_blob = r.string("public key")
    namespace_raw = r.string("namespace")
    reserved = r.string("reserved")
    hash_raw = r.string("hash algorithm")
    sig_blob = r.string("signature")
    r.end()
    try:
        namespace = namespace_raw.decode("ascii")
        hash_algorithm = hash_raw.decode("ascii")
    except UnicodeDecodeError:
        raise SignatureFormatError("signature namespace or hash algorithm is not ASCII") from None
    key = parse_public_key_blob(key_blob)
    refusal = refusal_for_key_type(key.key_type)
    if refusal:
        raise SignatureFormatError(f"signed with key type {key.key_type}: {refusal}")
    if hash_algorithm not in HASH_ALGORITHMS:
        raise SignatureFormatError(
            f"hash algorithm {hash_algorithm!r} is not accepted (use sha256 or sha512)"
        )
    if reserved:
        raise SignatureFormatError("the reserved field of the signature is not empty")

    inner = Reader(sig_blob, "inner signature")
    sig_type = inner.text("signature type")
    if sig_type != key.key_type:
        raise SignatureFormatError(f"signature type {sig_type!r} does not match key type {key.key_type!r}")
    ecdsa = Reader(inner.string("ECDSA signature"), "ECDSA signature")
    r_val = ecdsa.mpint("r")
    s_val = ecdsa.mpint("s")
    ecdsa.end()
    flags = counter = None
    if key.key_type == SK_ECDSA:
        flags = inner.byte("security-key flags")
        counter = inner.uint32("security-key counter")
    inner.end()
    bits = ACCEPTED_KEY_TYPES[key.key_type][1]
    for name, value in (("r", r_val), ("s", s_val)):
        if value <= 0 or value.bit_length() > bits:
            raise SignatureFormatError(f"ECDSA {name} is out of range for a {bits}-bit curve")
    return SshSignature(
        public_key=key,
        namespace=namespace,
        reserved=reserved,
        hash_algorithm=hash_algorithm,
        signature_type=sig_type,
        r=r_val,
        s=s_val,
        sk_flags=flags,
        sk_counter=counter,
        blob=bytes(blob),
    )


def signed_data(message: bytes, namespace: str, hash_algorithm: str, reserved: bytes = b"") -> bytes:
    """The bytes the signer's key actually signs (PROTOCOL.sshsig, "Signed Data")."""
    digest = hashlib.new(hash_algorithm, message).digest()
    return (
        MAGIC
        + wire.string(namespace)
        + wire.string(reserved)
        + wire.string(hash_algorithm)
        + wire.string(digest)
    )


def _hash_for(key_type: str) -> Any:
    from cryptography.hazmat.primitives import hashes

    return {"sha256": hashes.SHA256(), "sha384": hashes.SHA384()}[ACCEPTED_KEY_TYPES[key_type][2]]


def check_signature(sig: SshSignature, message: bytes) -> bool:
    """True when ``sig`` is a mathematically valid signature of ``message`` by ``sig.public_key``.

    Checks the maths only (like ``ssh-keygen -Y check-novalidate``); the namespace,
    trust list and security-key flags are the caller's job (see ``verify.py``).
    """
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric import ec, utils

    try:
        key = sig.public_key.crypto_key()
    except ValueError:
        return False
    data = signed_data(message, sig.namespace, sig.hash_algorithm, sig.reserved)
    if sig.public_key.key_type == SK_ECDSA:
        assert sig.sk_flags is not None and sig.sk_counter is not None
        application = (sig.public_key.application or "").encode("utf-8")
        data = (
            hashlib.sha256(application).digest()
            + bytes([sig.sk_flags])
            + wire.uint32(sig.sk_counter)
            + hashlib.sha256(data).digest()
        )
    der = utils.encode_dss_signature(sig.r, sig.s)
    try:
        key.verify(der, data, ec.ECDSA(_hash_for(sig.public_key.key_type)))
    except InvalidSignature:
        return False
    return True


def sign_with_private_key(
    message: bytes,
    private_key: Any,
    *,
    namespace: str = NAMESPACE,
    hash_algorithm: str = "sha512",
) -> str:
    """Sign ``message`` with a ``cryptography`` EC private key (P-256/P-384); armored SSHSIG.

    The pure-Python path for when ``ssh-keygen`` is not installed; its output verifies
    with ``ssh-keygen -Y verify``.
    """
    from cryptography.hazmat.primitives.asymmetric import ec, utils

    from xcompat.signing.keys import public_key_from_crypto

    if not isinstance(private_key, ec.EllipticCurvePrivateKey) or private_key.curve.name not in (
        "secp256r1",
        "secp384r1",
    ):
        raise SignatureFormatError(
            "only ECDSA P-256 or P-384 private keys can sign in pure Python "
            "(security keys and agent keys sign through ssh-keygen)"
        )
    if hash_algorithm not in HASH_ALGORITHMS:
        raise SignatureFormatError(
            f"hash algorithm {hash_algorithm!r} is not accepted (use sha256 or sha512)"
        )
    pub = public_key_from_crypto(private_key.public_key())
    data = signed_data(message, namespace, hash_algorithm)
    der = private_key.sign(data, ec.ECDSA(_hash_for(pub.key_type)))
    r_val, s_val = utils.decode_dss_signature(der)
    inner = wire.string(pub.key_type) + wire.string(wire.mpint(r_val) + wire.mpint(s_val))
    blob = (
        MAGIC
        + wire.uint32(VERSION)
        + wire.string(pub.blob)
        + wire.string(namespace)
        + wire.string(b"")
        + wire.string(hash_algorithm)
        + wire.string(inner)
    )
    return armor(blob)
