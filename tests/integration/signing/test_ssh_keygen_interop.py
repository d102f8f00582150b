"""Interoperability with the real ssh-keygen, in both directions, and the same refusals as it."""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from tests.helpers.matrix import (
    NAMESPACE,
    make_sk_signature,
    matrix_text,
    sk_public_line,
    ssh_keygen,
    ssh_keygen_sign,
    ssh_keygen_verify,
)

from xcompat.errors import VerificationError
from xcompat.signing import verify_matrix
from xcompat.signing.sign import sign_matrix


@pytest.fixture
def workdir(tmp_path, keys):
    (tmp_path / "matrix.yml").write_text(matrix_text(serial=5))
    lines = [keys[k].allowed_line() for k in ("p256", "p384", "ed25519")]
    (tmp_path / "allowed_signers").write_text("\n".join(lines) + "\n")
    return tmp_path


def ours(folder: Path, **kw):
    kw.setdefault("allowed_signers", folder / "allowed_signers")
    kw.setdefault("env", {})
    return verify_matrix(folder / "matrix.yml", **kw)


def theirs(folder: Path, principal: str, **kw) -> subprocess.CompletedProcess[bytes]:
    return ssh_keygen_verify(
        folder / kw.pop("allowed", "allowed_signers"),
        principal,
        folder / "matrix.yml",
        folder / "matrix.yml.sig",
        **kw,
    )


@pytest.mark.parametrize("which", ["p256", "p384"])
@pytest.mark.parametrize("hashalg", ["sha256", "sha512"])
def test_ssh_keygen_signatures_verify_here(workdir, keys, which, hashalg):
    ssh_keygen_sign(keys[which], workdir / "matrix.yml", hashalg=hashalg)
    result = ours(workdir)
    assert result.principal == keys[which].principal
    assert result.hash_algorithm == hashalg
    fp = subprocess.run(
        [ssh_keygen(), "-l", "-f", str(keys[which].public)], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    assert result.fingerprint == fp


@pytest.mark.parametrize("which", ["p256", "p384"])
@pytest.mark.parametrize("hashalg", ["sha256", "sha512"])
def test_our_signatures_verify_in_ssh_keygen(workdir, keys, which, hashalg):
    res = sign_matrix(workdir / "matrix.yml", keys[which].private, method="python", hash_algorithm=hashalg)
    assert res.serial_after == 6 and res.method == "python"
    proc = theirs(workdir, keys[which].principal)
    assert proc.returncode == 0, proc.stderr
    assert b'Good "xcompat-matrix-v1" signature' in proc.stdout


def test_sign_through_ssh_keygen_keeps_layout(workdir, keys):
    before = (workdir / "matrix.yml").read_text()
    res = sign_matrix(workdir / "matrix.yml", keys["p256"].private, method="ssh-keygen")
    after = (workdir / "matrix.yml").read_text()
    assert res.method == "ssh-keygen" and res.serial_before == 5 and res.serial_after == 6
    assert after == before.replace("serial: 5", "serial: 6")  # comments and layout unchanged
    assert theirs(workdir, keys["p256"].principal).returncode == 0
    assert ours(workdir).matrix.serial == 6


def test_security_key_signature_verifies_in_ssh_keygen_too(tmp_path):
    """Our U2F construction is the one ssh-keygen checks (only the touch flag is ours to require)."""
    key = ec.generate_private_key(ec.SECP256R1())
    data = matrix_text().encode()
    (tmp_path / "matrix.yml").write_bytes(data)
    (tmp_path / "allowed_signers").write_text(f"fido@example.org {sk_public_line(key)}\n")
    (tmp_path / "matrix.yml.sig").write_text(make_sk_signature(key, data, flags=0x01))
    assert theirs(tmp_path, "fido@example.org").returncode == 0
    assert ours(tmp_path).key_type.startswith("sk-ecdsa")
    # Without the user-presence flag ssh-keygen still says "Good"; xcompat refuses.
    (tmp_path / "matrix.yml.sig").write_text(make_sk_signature(key, data, flags=0x00))
    assert theirs(tmp_path, "fido@example.org").returncode == 0
    with pytest.raises(VerificationError, match="without user presence"):
        ours(tmp_path)


def _refused(folder: Path, principal: str, match: str, theirs_kw=None, **kw) -> None:
    """Both verifiers refuse; ours with the expected message."""
    with pytest.raises(VerificationError, match=match):
        ours(folder, **kw)
    proc = theirs(folder, principal, **(theirs_kw or {}))
    assert proc.returncode != 0, proc.stdout


def test_refusals_agree_with_ssh_keygen(workdir, keys):
    alice = keys["p256"]
    m = workdir / "matrix.yml"
    ssh_keygen_sign(alice, m)
    good, good_sig = m.read_bytes(), (workdir / "matrix.yml.sig").read_text()

    # one-byte tamper of the file
    m.write_bytes(good.replace(b"serial: 5", b"serial: 6"))
    _refused(workdir, alice.principal, "does not match the contents")
    m.write_bytes(good)

    # stranger key
    ssh_keygen_sign(keys["stranger"], m)
    _refused(workdir, keys["stranger"].principal, "is not in allowed_signers")

    # wrong namespace
    ssh_keygen_sign(alice, m, namespace="file")
    _refused(workdir, alice.principal, "namespace is 'file'")
    (workdir / "matrix.yml.sig").write_text(good_sig)

    # expired key (valid-before in the past) and a key not valid yet
    (workdir / "expired").write_text(alice.allowed_line(f'namespaces="{NAMESPACE}",valid-before="20200101Z"'))
    _refused(
        workdir,
        alice.principal,
        "expired at 2020-01-01",
        theirs_kw={"allowed": "expired"},
        allowed_signers=workdir / "expired",
    )
    (workdir / "future").write_text(alice.allowed_line('valid-after="29990101Z"'))
    _refused(
        workdir,
        alice.principal,
        "not valid before 2999",
        theirs_kw={"allowed": "future"},
        allowed_signers=workdir / "future",
    )

    # revoked: plain list, then a binary KRL made by ssh-keygen
    (workdir / "revoked").write_text(alice.public.read_text())
    _refused(
        workdir,
        alice.principal,
        "is revoked",
        theirs_kw={"revoked": workdir / "revoked"},
        revoked=workdir / "revoked",
    )
    subprocess.run([ssh_keygen(), "-q", "-k", "-f", str(workdir / "krl"), str(alice.public)], check=True)
    _refused(
        workdir,
        alice.principal,
        "is revoked",
        theirs_kw={"revoked": workdir / "krl"},
        revoked=workdir / "krl",
    )
    subprocess.run(
        [ssh_keygen(), "-q", "-k", "-f", str(workdir / "krl2"), str(keys["stranger"].public)], check=True
    )
    assert ours(workdir, revoked=workdir / "krl2").principal == alice.principal

    # a one-byte change anywhere in the signature's base64 body
    lines = good_sig.splitlines()
    for i in (1, len(lines) // 2, len(lines) - 2):
        body = lines[i]
        j = len(body) // 2
        lines_t = list(lines)
        lines_t[i] = body[:j] + ("A" if body[j] != "A" else "B") + body[j + 1 :]
        (workdir / "matrix.yml.sig").write_text("\n".join(lines_t) + "\n")
        _refused(workdir, alice.principal, ".")
    (workdir / "matrix.yml.sig").write_text(good_sig)
    assert ours(workdir).principal == alice.principal


def test_ed25519_is_refused_here_although_ssh_keygen_accepts_it(workdir, keys):
    ssh_keygen_sign(keys["ed25519"], workdir / "matrix.yml")
    assert theirs(workdir, keys["ed25519"].principal).returncode == 0
    with pytest.raises(VerificationError, match="Ed25519 keys are not accepted"):
        ours(workdir)


def test_sign_refuses_an_ed25519_key(workdir, keys):
    from xcompat.errors import UsageError

    with pytest.raises(UsageError, match="Ed25519 keys are not accepted"):
        sign_matrix(workdir / "matrix.yml", keys["ed25519"].private)
    assert "serial: 5" in (workdir / "matrix.yml").read_text()  # nothing written
    assert not (workdir / "matrix.yml.sig").exists()


def test_clock_is_the_only_time_source(workdir, keys):
    alice = keys["p256"]
    ssh_keygen_sign(alice, workdir / "matrix.yml")
    (workdir / "expiring").write_text(alice.allowed_line('valid-before="20200101Z"'))
    before = dt.datetime(2019, 12, 31, tzinfo=dt.timezone.utc)
    assert ours(workdir, allowed_signers=workdir / "expiring", now=before).principal == alice.principal
    with pytest.raises(VerificationError, match="expired"):
        ours(workdir, allowed_signers=workdir / "expiring")  # today: the real clock


def test_encrypted_key_without_pub_file(tmp_path, monkeypatch):
    """ssh-keygen unlocks the key (here through SSH_ASKPASS); the public half comes from the signature."""
    key = tmp_path / "k"
    subprocess.run(
        [ssh_keygen(), "-q", "-t", "ecdsa", "-b", "256", "-N", "pw-123", "-C", "enc@x", "-f", str(key)],
        check=True,
    )
    pub_line = " ".join(Path(str(key) + ".pub").read_text().split()[:2])
    Path(str(key) + ".pub").unlink()
    (tmp_path / "matrix.yml").write_text(matrix_text())
    (tmp_path / "allowed_signers").write_text(f"enc@x {pub_line}\n")
    askpass = tmp_path / "askpass.sh"
    askpass.write_text("#!/bin/sh\necho pw-123\n")
    askpass.chmod(0o755)
    monkeypatch.setenv("SSH_ASKPASS", str(askpass))
    monkeypatch.setenv("SSH_ASKPASS_REQUIRE", "force")
    monkeypatch.setenv("DISPLAY", ":0")
    res = sign_matrix(tmp_path / "matrix.yml", key, method="ssh-keygen")
    assert res.method == "ssh-keygen" and ours(tmp_path).principal == "enc@x"
    from xcompat.errors import UsageError

    with pytest.raises(UsageError, match="passphrase-protected"):
        sign_matrix(tmp_path / "matrix.yml", key, method="python")
    monkeypatch.setenv("XCOMPAT_SIGNING_KEY_PASSPHRASE", "pw-123")
    try:
        import bcrypt  # noqa: F401
    except ImportError:
        from xcompat.errors import UnavailableError

        with pytest.raises(UnavailableError, match="needs the bcrypt package"):
            sign_matrix(tmp_path / "matrix.yml", key, method="python")
        return
    assert sign_matrix(tmp_path / "matrix.yml", key, method="python").serial_after == 3
    assert theirs(tmp_path, "enc@x").returncode == 0


def test_ssh_keygen_failure_is_a_tool_error_and_writes_nothing(workdir, keys, tmp_path):
    from xcompat.errors import ToolError

    broken = tmp_path / "broken"
    broken.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n")
    broken.chmod(0o600)
    Path(str(broken) + ".pub").write_text(keys["p256"].public.read_text())
    before = (workdir / "matrix.yml").read_bytes()
    with pytest.raises(ToolError, match=r"ssh-keygen -Y sign failed \(exit 255\)") as info:
        sign_matrix(workdir / "matrix.yml", broken, method="ssh-keygen")
    assert info.value.exit_code == 4
    assert (workdir / "matrix.yml").read_bytes() == before
    assert not (workdir / "matrix.yml.sig").exists()


def test_cross_check_agrees_on_the_trusted_bytes(workdir, keys, monkeypatch):
    alice = keys["p256"]
    ssh_keygen_sign(alice, workdir / "matrix.yml")
    (workdir / "revoked").write_text(keys["stranger"].public.read_text())
    result = ours(workdir, revoked=workdir / "revoked", cross_check=True)
    assert result.cross_checked and result.principal == alice.principal
    # A verifier that disagrees makes the verification fail closed.
    stub = workdir / "fake-ssh-keygen"
    stub.write_text("#!/bin/sh\necho 'Signature verification failed: fake' >&2\nexit 255\n")
    stub.chmod(0o755)
    monkeypatch.setenv("XCOMPAT_SSH_KEYGEN", str(stub))
    with pytest.raises(VerificationError, match="ssh-keygen -Y verify disagrees.*fake"):
        ours(workdir, cross_check=True)
    assert not ours(workdir).cross_checked
