"""Read the trust root from a git ref, never from the working tree.

In a pull-request run the working tree is the PR head, which its author controls: an
``allowed_signers`` read from there would let a PR enrol its own key. With
``--trust-ref`` (the PR base SHA, or the previous tip of a protected branch) the trust
list, the revoked list and the previous matrix come from ``git show COMMIT:path``. The
ref is resolved to one commit first, so every file is read from the same commit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from xcompat.errors import InputError, UnavailableError
from xcompat.limits import LIMITS


@dataclass(frozen=True)
class TrustRoot:
    """A git commit to read trusted files from."""

    ref: str  # as given
    commit: str  # resolved SHA
    toplevel: Path

    def relpath(self, path: str | Path) -> str:
        """``path`` (a working-tree path) relative to the repository root, in git's form.

        Symlinks *inside* the working tree are deliberately not followed: the PR head
        could turn ``.xcompat/allowed_signers`` into a link to some other file that
        exists at the trusted commit (a test fixture with a published key, say). Only
        the part of the path leading to the repository root is resolved.
        """
        absolute = Path(os.path.normpath(os.path.join(os.getcwd(), os.fspath(path))))
        top = Path(os.path.realpath(self.toplevel))
        parts = absolute.parts
        for i in range(len(parts), 0, -1):
            head = Path(*parts[:i])
            if head == top or Path(os.path.realpath(head)) == top:
                rel = Path(*parts[i:]) if i < len(parts) else Path(".")
                return rel.as_posix()
        raise InputError(
            f"{path} is outside the git repository at {self.toplevel}",
            hint="with --trust-ref, trusted files must be tracked in the repository",
        )

    def read(self, path: str | Path) -> bytes | None:
        """The file's bytes at the trusted commit, or None when it does not exist there."""
        rel = self.relpath(path)
        proc = _git(self.toplevel, "cat-file", "-t", f"{self.commit}:{rel}")
        if proc.returncode != 0:
            return None
        if proc.stdout.strip() != b"blob":
            raise InputError(f"{rel} at {self.ref} is not a file", file=str(path))
        size = _git(self.toplevel, "cat-file", "-s", f"{self.commit}:{rel}")
        if size.returncode != 0 or int(size.stdout.strip() or b"0") > LIMITS.trust_file_bytes:
            raise InputError(f"{rel} at {self.ref} is larger than {LIMITS.trust_file_bytes} bytes", file=str(path))
        proc = _git(self.toplevel, "show", "--no-textconv", f"{self.commit}:{rel}")
        if proc.returncode != 0:
            raise InputError(
                f"git show {self.ref}:{rel} failed: {proc.stderr.decode('utf-8', 'replace').strip()}"
            )
        return proc.stdout

    def describe(self, path: str | Path) -> str:
        return f"{self.ref}:{self.relpath(path)}"


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    exe = shutil.which("git")
    if exe is None:
        raise UnavailableError("git is not installed, and --trust-ref needs it")
    return subprocess.run([exe, "-C", str(cwd), *args], capture_output=True, check=False)


def open_trust_root(ref: str, near: str | Path) -> TrustRoot:
    """Resolve ``ref`` in the git repository containing ``near`` (a file or folder)."""
    start = Path(near)
    folder = start if start.is_dir() else start.parent
    folder = folder if str(folder) else Path(".")
    top = _git(folder, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise InputError(
            f"{near} is not inside a git repository, so --trust-ref {ref} cannot be read",
            hint=top.stderr.decode("utf-8", "replace").strip().splitlines()[-1] if top.stderr else None,
        )
    toplevel = Path(top.stdout.decode().strip())
    if ref.startswith("-"):
        raise InputError(f"trust ref {ref!r} looks like an option")
    proc = _git(toplevel, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    if proc.returncode != 0:
        raise InputError(
            f"trust ref {ref!r} is not a commit in {toplevel}",
            hint="fetch it first (actions/checkout with fetch-depth: 0, or git fetch origin BASE_SHA)",
        )
    return TrustRoot(ref=ref, commit=proc.stdout.decode().strip(), toplevel=toplevel)
