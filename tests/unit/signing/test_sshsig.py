"""SSHSIG parsing, verification and pure-Python signing, without ssh-keygen."""

from __future__ import annotations

import base64
import hashlib

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, utils
from tests.helpers.matrix import NAMESPACE, build_sshsig, make_sk_signature

from xcompat.signing import wire
from xcompat.signing.keys import (
    fingerprint,
    parse_public_key_blob,
    parse_public_key_line,
    refusal_for_key_type,
)
from xcompat.signing.sshsig import (
    SignatureFormatError,
    check_signature,
    dearmor,
    parse_signature,
    sign_with_private_key,
)

MESSAGE = b"xcompat: 1\nrepo: acme/widget\nserial: 3\n"


@pytest.fixture(scope="module")
def p256():
    return ec.generate_private_key(ec.SECP256R1())


@pytest.fixture(scope="module")
def p384():
    return ec.generate_private_key(ec.SECP384R1())


def _blob(key) -> bytes:
    line = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return base64.b64decode(line.split()[1])


def _inner(key_type: str, r: int, s: int, extra: bytes = b"") -> bytes:
    return wire.string(key_type) + wire.string(wire.mpint(r) + wire.mpint(s) + extra)


@pytest.mark.parametrize("curve", ["p256", "p384"])
@pytest.mark.parametrize("hashalg", ["sha256", "sha512"])
def test_sign_then_verify_round_trip(curve, hashalg, p256, p384):
    key = p256 if curve == "p256" else p384
    armored = sign_with_private_key(MESSAGE, key, hash_algorithm=hashalg)
    sig = parse_signature(armored)
    assert sig.namespace == NAMESPACE and sig.hash_algorithm == hashalg
    assert sig.public_key.key_type == ("ecdsa-sha2-nistp256" if curve == "p256" else "ecdsa-sha2-nistp384")
    assert check_signature(sig, MESSAGE)
    assert not check_signature(sig, MESSAGE + b" ")
    # ssh-keygen's armor: 70 columns.
    assert max(len(line) for line in armored.splitlines()) == 70


def test_fingerprint_matches_cryptography(p256):
    if not hasattr(serialization, "ssh_key_fingerprint"):
        pytest.skip("cryptography < 45 has no ssh_key_fingerprint to compare with")
    blob = _blob(p256)
    expected = serialization.ssh_key_fingerprint(p256.public_key(), hashes_sha256())
    assert fingerprint(blob) == "SHA256:" + base64.b64encode(expected).decode().rstrip("=")


def hashes_sha256():
    from cryptography.hazmat.primitives import hashes

    return hashes.SHA256()


def test_security_key_signature_needs_user_presence(p256):
    good = parse_signature(make_sk_signature(p256, MESSAGE, flags=0x05, counter=42))
    assert good.sk_flags == 0x05 and good.sk_counter == 42 and check_signature(good, MESSAGE)
    no_touch = parse_signature(make_sk_signature(p256, MESSAGE, flags=0x00))
    assert check_signature(no_touch, MESSAGE)  # the maths hold; verify.py refuses the missing flag
    assert no_touch.sk_flags == 0
    # The flags and counter are covered by the signature.
    forged = no_touch.blob.replace(bytes([0x00]) + wire.uint32(7), bytes([0x01]) + wire.uint32(7))
    assert forged != no_touch.blob
    from xcompat.signing.sshsig import armor

    assert not check_signature(parse_signature(armor(forged)), MESSAGE)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda k, r, s: {"magic": b"SSHSIH"}, "bad magic"),
        (lambda k, r, s: {"version": 2}, "unsupported SSHSIG version 2"),
        (lambda k, r, s: {"trailer": b"\x00"}, "1 unexpected trailing byte"),
        (lambda k, r, s: {"hashalg": "sha1"}, "hash algorithm 'sha1' is not accepted"),
        (lambda k, r, s: {"hashalg": "md5"}, "hash algorithm 'md5' is not accepted"),
        (lambda k, r, s: {"reserved": b"x"}, "reserved field"),
        (
            lambda k, r, s: {"inner": _inner("ecdsa-sha2-nistp256", r, s, b"\x00")},
            "ECDSA signature has 1 unexpected",
        ),
        (
            lambda k, r, s: {"inner": _inner("ecdsa-sha2-nistp256", r, s) + b"\x01"},
            "inner signature has 1 unexpected",
        ),
        (lambda k, r, s: {"inner": _inner("ecdsa-sha2-nistp384", r, s)}, "does not match key type"),
        (lambda k, r, s: {"inner": _inner("ecdsa-sha2-nistp256", 0, s)}, "r is out of range"),
        (lambda k, r, s: {"inner": _inner("ecdsa-sha2-nistp256", r, 1 << 300)}, "s is out of range"),
        (
            lambda k, r, s: {
                "inner": wire.string("ecdsa-sha2-nistp256")
                + wire.string(wire.string(b"\x00\x01") + wire.mpint(s))
            },
            "needless leading zero",
        ),
        (
            lambda k, r, s: {
                "inner": wire.string("ecdsa-sha2-nistp256")
                + wire.string(wire.string(b"\x80\x01") + wire.mpint(s))
            },
            "negative",
        ),
        (lambda k, r, s: {"key_blob": k + b"\x00"}, "public key has 1 unexpected trailing byte"),
        (lambda k, r, s: {"key_blob": k[:-3]}, "EC point claims 65 bytes but only 62 remain"),
        (lambda k, r, s: {"key_blob": k.replace(b"nistp256\x00", b"nistp384\x00", 1)}, "curve"),
    ],
)
def test_malformed_signatures_are_refused_with_their_own_message(p256, mutate, message):
    base = parse_signature(sign_with_private_key(MESSAGE, p256))
    fields = {"key_blob": base.public_key.blob, "inner": _inner(base.signature_type, base.r, base.s)}
    fields.update(mutate(base.public_key.blob, base.r, base.s))
    with pytest.raises(SignatureFormatError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_signature(build_sshsig(**fields))


def test_rebuilt_valid_signature_still_parses(p256):
    """The field-by-field builder itself produces a valid signature when nothing is changed."""
    base = parse_signature(sign_with_private_key(MESSAGE, p256))
    rebuilt = parse_signature(
        build_sshsig(key_blob=base.public_key.blob, inner=_inner(base.signature_type, base.r, base.s))
    )
    assert check_signature(rebuilt, MESSAGE)


def test_refused_key_types_each_have_a_reason():
    ed = ed25519.Ed25519PrivateKey.generate()
    line = ed.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    blob = base64.b64decode(line.split()[1])
    inner = wire.string("ssh-ed25519") + wire.string(b"\x00" * 64)
    with pytest.raises(SignatureFormatError, match="Ed25519 keys are not accepted"):
        parse_signature(build_sshsig(key_blob=blob, inner=inner))
    reasons = {
        kt: refusal_for_key_type(kt)
        for kt in (
            "ssh-rsa",
            "ecdsa-sha2-nistp521",
            "ssh-dss",
            "ecdsa-sha2-secp256k1",
            "ecdsa-sha2-nistp256-cert-v01@openssh.com",
            "webauthn-sk-ecdsa-sha2-nistp256@openssh.com",
        )
    }
    assert "RSA" in reasons["ssh-rsa"] and "P-521" in reasons["ecdsa-sha2-nistp521"]
    assert "secp256k1 is not an OpenSSH curve and not FIPS-approved" in reasons["ecdsa-sha2-secp256k1"]
    assert "certificates" in reasons["ecdsa-sha2-nistp256-cert-v01@openssh.com"]
    assert "unknown key type" in reasons["webauthn-sk-ecdsa-sha2-nistp256@openssh.com"]
    assert len(set(reasons.values())) == len(reasons)
    assert refusal_for_key_type("ecdsa-sha2-nistp384") is None


def test_secp256k1_private_key_cannot_sign():
    with pytest.raises(SignatureFormatError, match="only ECDSA P-256 or P-384"):
        sign_with_private_key(MESSAGE, ec.generate_private_key(ec.SECP256K1()))


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "does not start with"),
        ("-----BEGIN SSH SIGNATURE-----\nAAAA\n", "does not end with"),
        ("-----BEGIN SSH SIGNATURE-----\nAA!A\n-----END SSH SIGNATURE-----\n", "not valid base64"),
        ("-----BEGIN SSH SIGNATURE-----\nAAAA\n\nAAAA\n-----END SSH SIGNATURE-----\n", "blank line"),
        ("-----BEGIN SSH SIGNATURE-----\n\n-----END SSH SIGNATURE-----\n", "blank line"),
        (b"\xff\xfe", "not ASCII"),
        (b"x" * 20000, "larger than"),
    ],
)
def test_armor_errors(text, message):
    with pytest.raises(SignatureFormatError, match=message):
        dearmor(text)


def test_empty_blob_is_truncated():
    with pytest.raises(SignatureFormatError, match="truncated"):
        parse_signature("-----BEGIN SSH SIGNATURE-----\n-----END SSH SIGNATURE-----\n")


def test_public_key_line_parsing(p256):
    line = (
        p256.public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode()
    )
    key = parse_public_key_line(line + " alice@example.org")
    assert key.comment == "alice@example.org" and key.bits == 256 and key.display_type == "ECDSA"
    assert key.crypto_key().public_numbers() == p256.public_key().public_numbers()
    from xcompat.signing.wire import WireError

    with pytest.raises(WireError, match="says 'ecdsa-sha2-nistp384'"):
        parse_public_key_line(line.replace("ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", 1))
    with pytest.raises(WireError, match="base64"):
        parse_public_key_line("ecdsa-sha2-nistp256 ***")
    with pytest.raises(WireError, match="expected 'TYPE BASE64"):
        parse_public_key_line("justoneword")
    # A point that is not on the curve parses but is refused when used.
    blob = bytearray(key.blob)
    blob[-1] ^= 1
    bad = parse_public_key_blob(bytes(blob))
    with pytest.raises(ValueError):
        bad.crypto_key()


def test_digest_is_over_the_exact_bytes(p256):
    sig = parse_signature(sign_with_private_key(MESSAGE, p256, hash_algorithm="sha256"))
    assert hashlib.sha256(MESSAGE).digest()  # sanity
    assert check_signature(sig, MESSAGE)
    assert not check_signature(sig, MESSAGE.replace(b"\n", b"\r\n"))
    r, s = sig.r, sig.s
    der = utils.encode_dss_signature(r, s)
    assert len(der) in range(8, 73)
