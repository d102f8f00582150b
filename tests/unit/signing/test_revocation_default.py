"""Revocation is on without a flag: revoked_keys next to the trust list applies, from the trust ref.

Its absence means no revocations; a list named with --revoked that does not exist fails closed.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from tests.helpers.action import GIT_ENV, git
from tests.helpers.cli import xcompat_in_process
from tests.helpers.matrix import make_key_with_python, matrix_text

from xcompat.errors import VerificationError
from xcompat.signing import verify_matrix
from xcompat.signing.sign import sign_matrix

NOW = dt.datetime(2030, 6, 1, tzinfo=dt.timezone.utc)


@pytest.fixture
def repo(tmp_path: Path):
    """A git repository whose base commit trusts alice; the working tree holds a signed matrix."""
    root = tmp_path / "repo"
    (root / ".xcompat").mkdir(parents=True)
    alice = make_key_with_python(tmp_path, "alice")
    (root / ".xcompat" / "allowed_signers").write_text(alice.allowed_line() + "\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "trust alice")
    matrix = root / ".xcompat" / "matrix.yml"
    matrix.write_text(matrix_text(serial=1))
    sign_matrix(matrix, alice.private, method="python")
    return root, alice, matrix


def _verify(root: Path, matrix: Path, **kw):
    return verify_matrix(matrix, allowed_signers=root / ".xcompat" / "allowed_signers", now=NOW, env={}, **kw)


def _revoke_at_base(root: Path, alice) -> None:
    (root / ".xcompat" / "revoked_keys").write_text(alice.public.read_text())
    git(root, "add", ".xcompat/revoked_keys")
    git(root, "commit", "-q", "-m", "revoke alice")


def test_revoked_keys_at_the_trust_ref_apply_without_a_flag(repo) -> None:
    root, alice, matrix = repo
    _revoke_at_base(root, alice)
    with pytest.raises(VerificationError, match="is revoked"):
        _verify(root, matrix, trust_ref="HEAD")


def test_no_revoked_keys_file_means_no_revocations(repo) -> None:
    root, _, matrix = repo
    result = _verify(root, matrix, trust_ref="HEAD")
    assert result.revoked_source is None and result.to_dict()["revoked"] is None


def test_a_pull_request_cannot_drop_the_revoked_list(repo) -> None:
    """The list comes from the trust ref: deleting it in the working tree changes nothing."""
    root, alice, matrix = repo
    _revoke_at_base(root, alice)
    (root / ".xcompat" / "revoked_keys").unlink()
    with pytest.raises(VerificationError, match="is revoked"):
        _verify(root, matrix, trust_ref="HEAD")


def test_a_named_revoked_list_missing_at_the_trust_ref_fails_closed(repo) -> None:
    root, _, matrix = repo
    with pytest.raises(VerificationError, match="named but does not exist") as info:
        _verify(root, matrix, trust_ref="HEAD", revoked=root / ".xcompat" / "revoked")
    assert info.value.exit_code == 3


def test_a_named_revoked_list_missing_in_the_working_tree_fails_closed(repo) -> None:
    root, _, matrix = repo
    with pytest.raises(VerificationError, match="named but does not exist"):
        _verify(root, matrix, revoked=root / "nowhere")


def test_without_trust_ref_the_default_list_next_to_allowed_signers_applies(repo) -> None:
    root, alice, matrix = repo
    _verify(root, matrix)  # no list: verifies
    (root / ".xcompat" / "revoked_keys").write_text(alice.public.read_text())
    with pytest.raises(VerificationError, match="is revoked"):
        _verify(root, matrix)


def test_revoked_keys_must_be_a_regular_file(repo, tmp_path: Path) -> None:
    root, _, matrix = repo
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    from xcompat.errors import InputError

    with pytest.raises(InputError, match="not a regular file"):
        _verify(root, matrix, revoked=fifo)


def test_cli_matrix_verify_refuses_a_revoked_key_with_exit_3(repo) -> None:
    root, alice, matrix = repo
    _revoke_at_base(root, alice)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_"))}
    proc = xcompat_in_process(
        "matrix", "verify", str(matrix), "--allowed-signers", str(root / ".xcompat" / "allowed_signers"),
        "--trust-ref", "HEAD", cwd=root, env={**env, **GIT_ENV},
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "revoked" in proc.stderr and "Traceback" not in proc.stderr
