"""matrix sign: serial bump in place, refusals, atomic writes (pure Python path)."""

from __future__ import annotations

import pytest
from tests.helpers.matrix import make_key_with_python, matrix_text

from xcompat.errors import InputError, UnavailableError, UsageError
from xcompat.signing.sign import set_serial, sign_matrix
from xcompat.signing.sshsig import check_signature, parse_signature


def test_set_serial_changes_only_that_value():
    text = b"# c\nxcompat: 1\nrepo: a/b\nserial:   41   # keep this comment\npython: ['3.12']\n"
    assert set_serial(text, 42) == text.replace(b"41", b"42")
    quoted_elsewhere = b"xcompat: 1\nrepo: a/b\nnote: 'serial: 1'\nserial: 1\n"
    assert set_serial(quoted_elsewhere, 2).endswith(b"serial: 2\n")
    assert b"'serial: 1'" in set_serial(quoted_elsewhere, 2)
    with pytest.raises(InputError, match="no top-level serial"):
        set_serial(b"xcompat: 1\n", 2)


def test_sign_bumps_and_signs_the_written_bytes(tmp_path):
    key = make_key_with_python(tmp_path, "alice")
    m = tmp_path / "matrix.yml"
    m.write_text(matrix_text(serial=9))
    res = sign_matrix(m, key.private, method="python", hash_algorithm="sha256")
    assert (res.serial_before, res.serial_after, res.method) == (9, 10, "python")
    sig = parse_signature((tmp_path / "matrix.yml.sig").read_text())
    assert sig.hash_algorithm == "sha256" and check_signature(sig, m.read_bytes())
    assert m.read_text() == matrix_text(serial=10)
    assert sign_matrix(m, key.private, method="python", serial=20).serial_after == 20
    assert sign_matrix(m, key.private, method="python", bump=False).serial_after == 20


def test_sign_refusals_write_nothing(tmp_path, monkeypatch):
    key = make_key_with_python(tmp_path, "alice")
    m = tmp_path / "matrix.yml"
    m.write_text(matrix_text(serial=3))
    with pytest.raises(UsageError, match="not greater than the current serial 3"):
        sign_matrix(m, key.private, method="python", serial=3)
    with pytest.raises(UsageError, match="hash algorithm 'sha1'"):
        sign_matrix(m, key.private, method="python", hash_algorithm="sha1")
    with pytest.raises(InputError, match="signing key not found"):
        sign_matrix(m, tmp_path / "nope", method="python")
    with pytest.raises(UnavailableError, match="needs ssh-keygen"):
        sign_matrix(m, key.public, method="python")
    monkeypatch.setenv("XCOMPAT_SSH_KEYGEN", str(tmp_path / "no-such-ssh-keygen"))
    with pytest.raises(UnavailableError, match="ssh-keygen is not installed"):
        sign_matrix(m, key.private, method="ssh-keygen")
    bad = tmp_path / "bad.yml"
    bad.write_text(matrix_text().replace("xcompat: 1", "xcompat: 1\nxcompat: 1"))
    with pytest.raises(InputError, match="duplicate key"):
        sign_matrix(bad, key.private, method="python")
    garbage = tmp_path / "garbage"
    garbage.write_text("not a key\n")
    with pytest.raises(InputError, match="not an OpenSSH private key"):
        sign_matrix(m, garbage, method="python")
    assert m.read_text() == matrix_text(serial=3)
    assert not (tmp_path / "matrix.yml.sig").exists() and not (tmp_path / "bad.yml.sig").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temp files left


def test_auto_uses_python_when_ssh_keygen_is_absent(tmp_path, monkeypatch):
    key = make_key_with_python(tmp_path, "alice")
    (tmp_path / "matrix.yml").write_text(matrix_text())
    monkeypatch.setenv("XCOMPAT_SSH_KEYGEN", str(tmp_path / "absent"))
    assert sign_matrix(tmp_path / "matrix.yml", key.private).method == "python"
