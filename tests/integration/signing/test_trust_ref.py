"""--trust-ref in a real git repository: the trust root comes from the ref, never the working tree."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.helpers.matrix import git, make_key_with_python, matrix_text

from xcompat.errors import InputError, VerificationError
from xcompat.signing import verify_matrix
from xcompat.signing.sign import sign_matrix

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "proj"
    (root / ".xcompat").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    keys = {name: make_key_with_python(tmp_path, name) for name in ("alice", "mallory")}
    (root / ".xcompat" / "matrix.yml").write_text(matrix_text(serial=0 + 1))
    (root / ".xcompat" / "allowed_signers").write_text(keys["alice"].allowed_line() + "\n")
    (root / ".xcompat" / "revoked_keys").write_text("# none yet\n")
    sign_matrix(root / ".xcompat" / "matrix.yml", keys["alice"].private, method="python", bump=False)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    git(root, "tag", "base")
    return root, keys


def verify(root: Path, ref: str | None = "base", **kw):
    x = root / ".xcompat"
    return verify_matrix(
        x / "matrix.yml",
        allowed_signers=x / "allowed_signers",
        revoked=x / "revoked_keys",
        trust_ref=ref,
        env={},
        **kw,
    )


def test_unchanged_matrix_at_the_trust_ref(repo):
    root, _ = repo
    result = verify(root)
    assert result.unchanged and result.trusted_serial == 1
    assert result.trust_commit == git(root, "rev-parse", "base")
    assert result.allowed_signers_source == "base:.xcompat/allowed_signers"


def test_trust_list_edited_in_the_pr_head_is_ignored(repo):
    root, keys = repo
    x = root / ".xcompat"
    # The PR enrols its own key and signs a changed matrix with it.
    with open(x / "allowed_signers", "a") as fh:
        fh.write(keys["mallory"].allowed_line() + "\n")
    sign_matrix(x / "matrix.yml", keys["mallory"].private, method="python")
    assert verify(root, ref=None).principal == keys["mallory"].principal  # what a naive check would accept
    with pytest.raises(VerificationError, match=r"not in allowed_signers \(base:\.xcompat/allowed_signers\)"):
        verify(root)


def test_a_properly_bumped_change_passes(repo):
    root, keys = repo
    sign_matrix(root / ".xcompat" / "matrix.yml", keys["alice"].private, method="python")
    result = verify(root)
    assert (result.trusted_serial, result.matrix.serial, result.unchanged) == (1, 2, False)


def test_changed_content_with_the_same_serial_is_a_rollback(repo):
    root, keys = repo
    m = root / ".xcompat" / "matrix.yml"
    m.write_text(m.read_text().replace('"3.11", "3.12"', '"3.12"'))
    sign_matrix(m, keys["alice"].private, method="python", bump=False)
    with pytest.raises(
        VerificationError, match="rollback refused: serial 1 is not greater than the trusted serial 1"
    ):
        verify(root)


def test_replayed_older_serial_is_refused(repo):
    root, keys = repo
    x = root / ".xcompat"
    old_matrix, old_sig = (x / "matrix.yml").read_bytes(), (x / "matrix.yml.sig").read_bytes()
    sign_matrix(x / "matrix.yml", keys["alice"].private, method="python")
    git(root, "commit", "-q", "-am", "serial 2")
    # A later PR puts back the old, validly signed version.
    (x / "matrix.yml").write_bytes(old_matrix)
    (x / "matrix.yml.sig").write_bytes(old_sig)
    assert verify(root, ref=None).matrix.serial == 1  # the signature itself is fine
    with pytest.raises(VerificationError, match="serial 1 is not greater than the trusted serial 2 at HEAD"):
        verify(root, ref="HEAD")


def test_revocation_at_the_ref_cannot_be_undone_in_the_head(repo):
    root, keys = repo
    x = root / ".xcompat"
    (x / "revoked_keys").write_text(keys["alice"].public.read_text())
    git(root, "commit", "-q", "-am", "revoke alice")
    (x / "revoked_keys").write_text("# emptied by the PR\n")
    with pytest.raises(VerificationError, match=r"is revoked \(listed in HEAD:\.xcompat/revoked_keys\)"):
        verify(root, ref="HEAD")


def test_missing_trust_list_at_the_ref(repo):
    root, _ = repo
    git(root, "rm", "-q", ".xcompat/allowed_signers")
    git(root, "commit", "-q", "-m", "drop trust list")
    git(root, "checkout", "-q", "base", "--", ".xcompat/allowed_signers")
    with pytest.raises(VerificationError, match="allowed_signers does not exist at the trust ref"):
        verify(root, ref="HEAD")


def test_first_matrix_has_no_rollback_check(repo):
    root, _ = repo
    git(root, "rm", "-q", "--cached", ".xcompat/matrix.yml")
    git(root, "commit", "-q", "-m", "untrack matrix")
    result = verify(root, ref="HEAD")
    assert result.trusted_serial is None and any("first signed version" in n for n in result.notes)


def test_unknown_ref_and_option_like_ref(repo):
    root, _ = repo
    with pytest.raises(InputError, match="is not a commit"):
        verify(root, ref="no-such-branch")
    with pytest.raises(InputError, match="looks like an option"):
        verify(root, ref="--output=/tmp/x")


def test_outside_a_repository(tmp_path):
    alice = make_key_with_python(tmp_path, "alice")
    (tmp_path / "matrix.yml").write_text(matrix_text())
    (tmp_path / "allowed_signers").write_text(alice.allowed_line())
    sign_matrix(tmp_path / "matrix.yml", alice.private, method="python")
    with pytest.raises(InputError, match="not inside a git repository"):
        verify_matrix(
            tmp_path / "matrix.yml", allowed_signers=tmp_path / "allowed_signers", trust_ref="HEAD", env={}
        )


def test_symlink_in_the_head_cannot_redirect_the_trust_list(repo):
    """A PR that links allowed_signers to another trusted-commit file holding its key is refused."""
    root, keys = repo
    x = root / ".xcompat"
    # Some file at the trusted commit happens to list a key whose private half the attacker has.
    (root / "fixtures").mkdir()
    (root / "fixtures" / "allowed_signers").write_text(keys["mallory"].allowed_line() + "\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "test fixture")
    (x / "allowed_signers").unlink()
    (x / "allowed_signers").symlink_to("../fixtures/allowed_signers")
    sign_matrix(x / "matrix.yml", keys["mallory"].private, method="python")
    with pytest.raises(VerificationError, match=r"not in allowed_signers \(HEAD:\.xcompat/allowed_signers\)"):
        verify(root, ref="HEAD")


def test_relative_paths_from_a_subfolder(repo, monkeypatch):
    root, _ = repo
    monkeypatch.chdir(root / ".xcompat")
    result = verify_matrix("matrix.yml", allowed_signers="allowed_signers", trust_ref="base", env={})
    assert result.allowed_signers_source == "base:.xcompat/allowed_signers" and result.unchanged


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen is not installed")
def test_cross_check_uses_the_trust_ref_files(repo):
    root, keys = repo
    x = root / ".xcompat"
    sign_matrix(x / "matrix.yml", keys["alice"].private, method="python")
    # The working-tree trust list is emptied by the PR; ssh-keygen must see the trusted one.
    (x / "allowed_signers").write_text("# emptied\n")
    result = verify(root, cross_check=True)
    assert result.cross_checked and result.trusted_serial == 1
