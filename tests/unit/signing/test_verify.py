"""verify_matrix refusals, each with its own message (pure Python keys; ssh-keygen in integration)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from tests.helpers.matrix import (
    NAMESPACE,
    make_key_with_python,
    make_sk_signature,
    matrix_text,
    sk_public_line,
)

from xcompat.errors import InputError, VerificationError
from xcompat.signing import verify_matrix
from xcompat.signing.sign import sign_matrix
from xcompat.signing.sshsig import sign_with_private_key

NOW = dt.datetime(2030, 6, 1, tzinfo=dt.timezone.utc)


@pytest.fixture
def signed(tmp_path: Path):
    alice = make_key_with_python(tmp_path, "alice")
    matrix = tmp_path / "matrix.yml"
    matrix.write_text(matrix_text(serial=1))
    (tmp_path / "allowed_signers").write_text(alice.allowed_line() + "\n")
    sign_matrix(matrix, alice.private, method="python")
    return tmp_path, alice, matrix


def _verify(folder: Path, **kw):
    kw.setdefault("allowed_signers", folder / "allowed_signers")
    kw.setdefault("now", NOW)
    kw.setdefault("env", {})
    return verify_matrix(folder / "matrix.yml", **kw)


def _refusal(folder: Path, **kw) -> str:
    with pytest.raises(VerificationError) as info:
        _verify(folder, **kw)
    assert info.value.exit_code == 3
    return str(info.value)


def test_good_signature(signed):
    folder, alice, matrix = signed
    result = _verify(folder, repo="acme/widget")
    assert result.principal == alice.principal
    assert result.key_type == "ecdsa-sha2-nistp256"
    assert result.fingerprint.startswith("SHA256:")
    assert result.matrix.serial == 2  # sign bumped it
    assert result.data == matrix.read_bytes()
    assert result.repo_checked == "acme/widget"


def test_each_refusal_has_its_own_message(signed, tmp_path):
    folder, alice, matrix = signed
    messages = {}
    good = matrix.read_bytes()

    matrix.write_bytes(good.replace(b"3.12", b"3.13"))
    messages["tamper"] = _refusal(folder)
    matrix.write_bytes(good)

    sig = folder / "matrix.yml.sig"
    good_sig = sig.read_text()
    from xcompat.signing.sshsig import armor, dearmor

    blob = bytearray(dearmor(good_sig))
    blob[-5] ^= 0x01  # one byte of s
    sig.write_text(armor(bytes(blob)))
    messages["sig-tamper"] = _refusal(folder)
    sig.write_text(good_sig)

    other = tmp_path / "other.sig"
    other.write_text(sign_with_private_key(good, ec.generate_private_key(ec.SECP256R1())))
    messages["stranger"] = _refusal(folder, signature=other)

    key = __import__("cryptography.hazmat.primitives.serialization", fromlist=["x"]).load_ssh_private_key(
        alice.private.read_bytes(), None
    )
    other.write_text(sign_with_private_key(good, key, namespace="file"))
    messages["namespace"] = _refusal(folder, signature=other)

    (folder / "revoked").write_text(alice.public.read_text())
    messages["revoked"] = _refusal(folder, revoked=folder / "revoked")

    (folder / "expired_signers").write_text(
        alice.allowed_line(f'namespaces="{NAMESPACE}",valid-before="20300101Z"')
    )
    messages["expired-key"] = _refusal(folder, allowed_signers=folder / "expired_signers")

    (folder / "future_signers").write_text(alice.allowed_line('valid-after="20310101Z"'))
    messages["not-yet-valid"] = _refusal(folder, allowed_signers=folder / "future_signers")

    (folder / "git_signers").write_text(alice.allowed_line('namespaces="git"'))
    messages["namespace-option"] = _refusal(folder, allowed_signers=folder / "git_signers")

    messages["repo"] = _refusal(folder, repo="evil/fork")
    messages["repo-env"] = _refusal(folder, env={"GITHUB_REPOSITORY": "evil/fork"})
    messages["principal"] = _refusal(folder, principal="bob@example.org")

    (folder / "missing.sig").unlink(missing_ok=True)
    messages["no-signature"] = _refusal(folder, signature=folder / "missing.sig")
    other.write_text("-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n")
    messages["malformed"] = _refusal(folder, signature=other)
    (folder / "empty_signers").write_text("# nobody\n")
    messages["empty-trust"] = _refusal(folder, allowed_signers=folder / "empty_signers")

    expected = {
        "tamper": "signature does not match the contents",
        "sig-tamper": "signature does not match the contents",
        "stranger": "is not in allowed_signers",
        "namespace": "signature namespace is 'file', expected 'xcompat-matrix-v1'",
        "revoked": "is revoked",
        "expired-key": "expired at 2030-01-01",
        "not-yet-valid": "is not valid before 2031-01-01",
        "namespace-option": "does not allow namespace 'xcompat-matrix-v1'",
        "repo": "bound to repository 'acme/widget', but this is 'evil/fork'",
        "repo-env": "but this is 'evil/fork'",
        "principal": "expected principal 'bob@example.org'",
        "no-signature": "signature not found",
        "malformed": "malformed signature",
        "empty-trust": "lists no keys",
    }
    for name, text in expected.items():
        assert text in messages[name], (name, messages[name])
    # A changed file and a changed signature are the same mathematical failure.
    distinct = {k: v for k, v in messages.items() if k not in ("repo-env", "sig-tamper")}
    assert len(set(distinct.values())) == len(distinct)


def test_expired_matrix(tmp_path):
    alice = make_key_with_python(tmp_path, "alice")
    (tmp_path / "matrix.yml").write_text(matrix_text(extra="expires: 2030-05-31\n"))
    (tmp_path / "allowed_signers").write_text(alice.allowed_line())
    sign_matrix(tmp_path / "matrix.yml", alice.private, method="python")
    with pytest.raises(VerificationError, match="matrix signature expired on 2030-05-31"):
        _verify(tmp_path)
    assert _verify(tmp_path, now=dt.datetime(2030, 5, 31, 23, 0, tzinfo=dt.timezone.utc)).matrix.serial == 2


def test_security_key_user_presence(tmp_path):
    key = ec.generate_private_key(ec.SECP256R1())
    data = matrix_text().encode()
    (tmp_path / "matrix.yml").write_bytes(data)
    (tmp_path / "allowed_signers").write_text(f"fido@example.org {sk_public_line(key)}\n")
    (tmp_path / "matrix.yml.sig").write_text(make_sk_signature(key, data, flags=0x01))
    result = _verify(tmp_path)
    assert result.key_type == "sk-ecdsa-sha2-nistp256@openssh.com" and result.principal == "fido@example.org"
    (tmp_path / "matrix.yml.sig").write_text(make_sk_signature(key, data, flags=0x04))
    with pytest.raises(VerificationError, match="without user presence"):
        _verify(tmp_path)


def test_signed_but_invalid_matrix_is_an_input_error(tmp_path):
    alice = make_key_with_python(tmp_path, "alice")
    key = __import__("cryptography.hazmat.primitives.serialization", fromlist=["x"]).load_ssh_private_key(
        alice.private.read_bytes(), None
    )
    data = b"xcompat: 1\nrepo: a/b\nserial: 1\nserial: 2\n"
    (tmp_path / "matrix.yml").write_bytes(data)
    (tmp_path / "matrix.yml.sig").write_text(sign_with_private_key(data, key))
    (tmp_path / "allowed_signers").write_text(alice.allowed_line())
    with pytest.raises(InputError, match="duplicate key 'serial'"):
        _verify(tmp_path)


def test_malformed_trust_list_is_an_input_error(signed):
    folder, _, _ = signed
    (folder / "bad").write_text("alice@example.org ecdsa-sha2-nistp256 !!!\n")
    with pytest.raises(InputError, match="bad allowed_signers line"):
        _verify(folder, allowed_signers=folder / "bad")
