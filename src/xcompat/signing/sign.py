"""Sign a matrix: validate, bump ``serial`` in place (comments and layout kept), sign, write both files.

Signing goes through ``ssh-keygen -Y sign`` when it is installed (so keys held by
ssh-agent and FIDO security keys work); otherwise, for a key file, the pure-Python
path in ``sshsig.sign_with_private_key``. Both files are written atomically, and the
new signature is checked before anything is written.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xcompat.errors import InputError, ToolError, UnavailableError, UsageError
from xcompat.jsonio import atomic_write_bytes
from xcompat.limits import LIMITS, read_bounded, read_bounded_text
from xcompat.matrix import load_matrix, read_matrix_bytes
from xcompat.signing import ssh_keygen
from xcompat.signing.keys import PublicKey, parse_public_key_line, refusal_for_key_type
from xcompat.signing.sshsig import (
    HASH_ALGORITHMS,
    NAMESPACE,
    SignatureFormatError,
    check_signature,
    parse_signature,
    sign_with_private_key,
)
from xcompat.signing.wire import WireError

PASSPHRASE_ENV = "XCOMPAT_SIGNING_KEY_PASSPHRASE"


@dataclass(frozen=True)
class SignResult:
    matrix_path: str
    signature_path: str
    serial_before: int
    serial_after: int
    fingerprint: str
    key_type: str
    method: str  # "ssh-keygen" | "python"


def set_serial(data: bytes, serial: int, *, source: str | None = None) -> bytes:
    """``data`` with its top-level ``serial:`` value replaced, every other byte unchanged."""
    from xcompat.matrix.yamlload import load_yaml

    loaded = load_yaml(data, source=source)
    mark = loaded.marks.get(("serial",))
    if mark is None:
        raise InputError("no top-level serial: to bump", file=source, hint="add 'serial: 1'")
    lines = data.split(b"\n")
    line = lines[mark.line - 1]
    # Columns count characters; convert to a byte offset on this line.
    prefix = line.decode("utf-8")[: mark.column - 1].encode("utf-8")
    rest = line[len(prefix) :]
    m = re.match(rb"[0-9A-Za-z_+]+", rest)
    if not m:
        raise InputError(
            "cannot rewrite the serial value in place",
            file=source,
            line=mark.line,
            hint="write it as a plain integer: serial: 7",
        )
    lines[mark.line - 1] = prefix + str(serial).encode("ascii") + rest[m.end() :]
    return b"\n".join(lines)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Byte-exact atomic write (no newline translation: the signature covers these bytes)."""
    atomic_write_bytes(path, data)


def signing_public_key(key: Path, *, allow_private: bool = True) -> PublicKey | None:
    """The public half of ``key``: ``KEY.pub`` beside a private key, the key itself when it is
    a ``.pub``, else (``allow_private``) derived from the private key file. None when it can
    only be learnt from the signature (an encrypted key that ssh-keygen will unlock)."""
    cand = key if key.suffix == ".pub" else Path(str(key) + ".pub")
    if cand.is_file():
        try:
            text = read_bounded_text(cand, what="public key file", limit=LIMITS.trust_file_bytes)
            return parse_public_key_line(text.strip(), str(cand))
        except WireError as exc:
            raise InputError(f"not an SSH public key: {exc}", file=str(cand)) from None
    if key.suffix != ".pub" and key.is_file():
        if not allow_private:
            return None
        from xcompat.signing.keys import public_key_from_crypto

        return public_key_from_crypto(_load_private_key(key).public_key())
    raise InputError(
        "signing key not found", file=str(key), hint="pass a private key file, or KEY.pub for an agent key"
    )


def _load_private_key(key: Path) -> Any:
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.serialization import load_ssh_private_key

    data = read_bounded(key, what="signing key", limit=LIMITS.trust_file_bytes)
    passphrase = os.environ.get(PASSPHRASE_ENV)
    try:
        return load_ssh_private_key(data, password=passphrase.encode() if passphrase else None)
    except TypeError:
        raise UsageError(
            "the signing key is passphrase-protected",
            hint=f"install ssh-keygen (it prompts), or set {PASSPHRASE_ENV}",
        ) from None
    except (ValueError, UnsupportedAlgorithm) as exc:
        if "bcrypt" in str(exc):
            raise UnavailableError(
                "decrypting an encrypted OpenSSH key in Python needs the bcrypt package",
                hint="pip install bcrypt, or sign through ssh-keygen",
            ) from None
        raise InputError(f"not an OpenSSH private key: {exc}", file=str(key)) from None


def sign_matrix(
    matrix_path: str | Path,
    key: str | Path,
    *,
    bump: bool = True,
    serial: int | None = None,
    signature: str | Path | None = None,
    hash_algorithm: str = "sha512",
    method: str = "auto",
) -> SignResult:
    """Bump ``serial`` (or set it), sign with ``key`` and write ``FILE`` and ``FILE.sig``.

    ``method``: ``auto`` (ssh-keygen when installed, else Python), ``ssh-keygen`` or ``python``.
    """
    matrix_path = Path(matrix_path)
    key = Path(key)
    sig_path = Path(signature) if signature is not None else matrix_path.with_name(matrix_path.name + ".sig")
    if hash_algorithm not in HASH_ALGORITHMS:
        raise UsageError(f"hash algorithm {hash_algorithm!r} is not accepted (use sha256 or sha512)")
    data = read_matrix_bytes(matrix_path)
    before = load_matrix(data, source=str(matrix_path))
    if serial is not None and serial <= before.serial and data:
        raise UsageError(f"--serial {serial} is not greater than the current serial {before.serial}")
    new_serial = serial if serial is not None else (before.serial + 1 if bump else before.serial)
    new_data = set_serial(data, new_serial, source=str(matrix_path)) if new_serial != before.serial else data
    load_matrix(new_data, source=str(matrix_path))

    exe = ssh_keygen.find_ssh_keygen()
    if method == "auto":
        method = "ssh-keygen" if exe else "python"
    if method not in ("ssh-keygen", "python"):
        raise UsageError(f"unknown signing method {method!r}")
    # With ssh-keygen an encrypted private key is unlocked by its prompt, so its public
    # half may only be known from the signature.
    pub = signing_public_key(key, allow_private=method == "python")
    if pub is not None:
        refusal = refusal_for_key_type(pub.key_type)
        if refusal:
            raise UsageError(f"{key}: key type {pub.key_type} cannot sign a matrix: {refusal}")

    if method == "ssh-keygen":
        armored = ssh_keygen.sign(
            new_data, key, namespace=NAMESPACE, hash_algorithm=hash_algorithm, ssh_keygen=exe
        )
    else:
        if key.suffix == ".pub":
            raise UnavailableError(
                "signing with an agent or security key needs ssh-keygen",
                hint="install openssh-client, or pass the private key file",
            )
        armored = sign_with_private_key(new_data, _load_private_key(key), hash_algorithm=hash_algorithm)

    try:
        sig = parse_signature(armored)
    except SignatureFormatError as exc:
        raise UsageError(f"{key}: {exc}") from None
    if pub is None:
        pub = sig.public_key
    if sig.public_key.blob != pub.blob or not check_signature(sig, new_data) or sig.namespace != NAMESPACE:
        raise ToolError("the new signature does not verify against the signing key; nothing was written")
    write_bytes_atomic(matrix_path, new_data)
    write_bytes_atomic(sig_path, armored.encode("ascii"))
    return SignResult(
        matrix_path=str(matrix_path),
        signature_path=str(sig_path),
        serial_before=before.serial,
        serial_after=new_serial,
        fingerprint=pub.fingerprint,
        key_type=pub.key_type,
        method=method,
    )
