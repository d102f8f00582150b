"""Driver for OpenSSH's ``ssh-keygen``: signing (so ssh-agent and FIDO keys work), KRL checks.

Verification never depends on ssh-keygen (it is pure Python in ``verify.py``); signing
prefers it because only ssh-keygen can reach keys held by ssh-agent or a security key.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from xcompat.errors import ToolError, UnavailableError
from xcompat.signing.keys import PublicKey


def find_ssh_keygen(env: dict[str, str] | None = None) -> str | None:
    """Path of ssh-keygen (``$XCOMPAT_SSH_KEYGEN`` overrides), or None when absent."""
    env = dict(os.environ) if env is None else env
    override = env.get("XCOMPAT_SSH_KEYGEN")
    if override:
        return override if Path(override).is_file() else None
    return shutil.which("ssh-keygen", path=env.get("PATH"))


def sign(
    message: bytes,
    key: str | Path,
    *,
    namespace: str,
    hash_algorithm: str = "sha512",
    ssh_keygen: str | None = None,
    timeout: float = 300,
) -> str:
    """Armored signature of ``message`` made by ``ssh-keygen -Y sign`` (message on stdin)."""
    exe = ssh_keygen or find_ssh_keygen()
    if exe is None:
        raise UnavailableError(
            "ssh-keygen is not installed", hint="install openssh-client, or sign with a key file"
        )
    cmd = [exe, "-q", "-Y", "sign", "-n", namespace, "-f", str(key), "-O", f"hashalg={hash_algorithm}"]
    try:
        proc = subprocess.run(cmd, input=message, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise ToolError(
            f"ssh-keygen -Y sign did not finish within {timeout:.0f} s (waiting for a passphrase or a touch?)"
        ) from None
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ToolError(
            f"ssh-keygen -Y sign failed (exit {proc.returncode}): {err[-1] if err else 'no message'}",
            details=err[:-1][-10:],
        )
    return proc.stdout.decode("ascii")


def key_revoked_in_krl(krl: bytes, key: PublicKey, *, ssh_keygen: str | None = None) -> bool:
    """Whether ``key`` is revoked by the binary KRL ``krl`` (asks ``ssh-keygen -Q``)."""
    exe = ssh_keygen or find_ssh_keygen()
    if exe is None:
        raise UnavailableError(
            "the revoked-keys file is a binary KRL, which needs ssh-keygen to read",
            hint="install openssh-client or list revoked public keys as text",
        )
    with tempfile.TemporaryDirectory(prefix="xcompat-krl-") as tmp:
        krl_path = Path(tmp) / "krl"
        pub_path = Path(tmp) / "key.pub"
        krl_path.write_bytes(krl)
        pub_path.write_text(key.openssh_line() + "\n")
        proc = subprocess.run(
            [exe, "-Q", "-f", str(krl_path), str(pub_path)], capture_output=True, check=False
        )
    out = proc.stdout.decode("utf-8", "replace")
    if "REVOKED" in out:
        return True
    if proc.returncode == 0 and ": ok" in out:
        return False
    raise ToolError(f"ssh-keygen -Q could not read the KRL: {proc.stderr.decode('utf-8', 'replace').strip()}")


def cross_check_verify(
    message: bytes,
    signature: bytes,
    *,
    allowed_signers: bytes,
    principal: str,
    namespace: str,
    revoked: bytes | None = None,
    ssh_keygen: str | None = None,
    timeout: float = 60,
) -> tuple[bool, str]:
    """Run ``ssh-keygen -Y verify`` on the same bytes and trust inputs; (accepted, its message).

    The inputs are written to a private temporary folder, so the check sees exactly what
    xcompat verified (including trust files read from a git ref), never the working tree.
    """
    exe = ssh_keygen or find_ssh_keygen()
    if exe is None:
        raise UnavailableError("--cross-check needs ssh-keygen", hint="install openssh-client")
    with tempfile.TemporaryDirectory(prefix="xcompat-xcheck-") as tmp:
        folder = Path(tmp)
        (folder / "allowed_signers").write_bytes(allowed_signers)
        (folder / "sig").write_bytes(signature)
        cmd = [
            exe,
            "-Y",
            "verify",
            "-f",
            str(folder / "allowed_signers"),
            "-I",
            principal,
            "-n",
            namespace,
            "-s",
            str(folder / "sig"),
        ]
        if revoked is not None:
            (folder / "revoked").write_bytes(revoked)
            cmd += ["-r", str(folder / "revoked")]
        try:
            proc = subprocess.run(cmd, input=message, capture_output=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return False, f"ssh-keygen -Y verify did not finish within {timeout:.0f} s"
    text = (proc.stdout + proc.stderr).decode("utf-8", "replace").strip().splitlines()
    return proc.returncode == 0, text[-1] if text else f"exit {proc.returncode}"
