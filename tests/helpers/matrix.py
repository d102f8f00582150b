"""Shared helpers for the matrix and signing tests: matrix texts, keys, signatures, a git repo."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from xcompat.resources import data_dir

NAMESPACE = "xcompat-matrix-v1"

MINIMAL_MATRIX = """\
# minimal matrix used by the tests
xcompat: 1
repo: acme/widget
serial: {serial}
python: ["3.11", "3.12"]
platforms:
  linux:
    archs: [x86_64]
backends:
  cpu:
    required: true
frameworks:
  torch: ["2.13"]
"""


def matrix_text(serial: int = 1, extra: str = "") -> str:
    return MINIMAL_MATRIX.format(serial=serial) + extra


def sample_matrix_path() -> Path:
    return data_dir("examples") / "sample-ext" / ".xcompat" / "matrix.yml"


def example_files(kind: str) -> list[Path]:
    return sorted((data_dir("examples") / "matrices" / kind).glob("*.yml"))


def ssh_keygen() -> str | None:
    return shutil.which("ssh-keygen")


@dataclass(frozen=True)
class Key:
    private: Path
    public: Path
    principal: str

    @property
    def public_line(self) -> str:
        return " ".join(self.public.read_text().split()[:2])

    def allowed_line(self, options: str = f'namespaces="{NAMESPACE}"') -> str:
        return f"{self.principal} {options} {self.public_line}".replace("  ", " ")


def make_key_with_ssh_keygen(folder: Path, name: str, key_type: str = "ecdsa", bits: int = 256) -> Key:
    exe = ssh_keygen()
    assert exe, "ssh-keygen is required"
    path = folder / name
    cmd = [exe, "-q", "-t", key_type, "-N", "", "-C", f"{name}@example.org", "-f", str(path)]
    if key_type == "ecdsa":
        cmd[4:4] = ["-b", str(bits)]
    subprocess.run(cmd, check=True, capture_output=True)
    return Key(path, Path(str(path) + ".pub"), f"{name}@example.org")


def make_key_with_python(folder: Path, name: str, curve: str = "p256") -> Key:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    private = ec.generate_private_key(ec.SECP256R1() if curve == "p256" else ec.SECP384R1())
    path = folder / name
    path.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
        )
    )
    pub = private.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    Path(str(path) + ".pub").write_text(pub.decode() + f" {name}@example.org\n")
    return Key(path, Path(str(path) + ".pub"), f"{name}@example.org")


def ssh_keygen_sign(key: Key, message: Path, namespace: str = NAMESPACE, hashalg: str = "sha512") -> Path:
    """Sign with the real ssh-keygen; writes MESSAGE.sig (replacing an older one)."""
    sig = Path(str(message) + ".sig")
    if sig.exists():
        sig.unlink()
    subprocess.run(
        [
            ssh_keygen(),
            "-q",
            "-Y",
            "sign",
            "-n",
            namespace,
            "-f",
            str(key.private),
            "-O",
            f"hashalg={hashalg}",
            str(message),
        ],
        check=True,
        capture_output=True,
    )
    return sig


def ssh_keygen_verify(
    allowed: Path,
    principal: str,
    message: Path,
    sig: Path,
    namespace: str = NAMESPACE,
    revoked: Path | None = None,
) -> subprocess.CompletedProcess[bytes]:
    cmd = [ssh_keygen(), "-Y", "verify", "-f", str(allowed), "-I", principal, "-n", namespace, "-s", str(sig)]
    if revoked is not None:
        cmd += ["-r", str(revoked)]
    with open(message, "rb") as fh:
        return subprocess.run(cmd, stdin=fh, capture_output=True, check=False)


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.org",
            "-c",
            "commit.gpgsign=false",
            *args,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout.strip()


# -- security-key (FIDO) signatures, built the way an authenticator does (PROTOCOL.u2f) -----

SK_TYPE = "sk-ecdsa-sha2-nistp256@openssh.com"


def sk_public_blob(private_key, application: str = "ssh:") -> bytes:
    from cryptography.hazmat.primitives import serialization

    from xcompat.signing import wire

    point = private_key.public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    return wire.string(SK_TYPE) + wire.string("nistp256") + wire.string(point) + wire.string(application)


def sk_public_line(private_key, application: str = "ssh:") -> str:
    import base64

    return f"{SK_TYPE} {base64.b64encode(sk_public_blob(private_key, application)).decode()}"


def make_sk_signature(
    private_key,
    message: bytes,
    *,
    flags: int = 0x01,
    counter: int = 7,
    namespace: str = NAMESPACE,
    application: str = "ssh:",
    hashalg: str = "sha512",
) -> str:
    """An armored SSHSIG made as a FIDO authenticator would sign it."""
    import hashlib

    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, utils

    from xcompat.signing import wire
    from xcompat.signing.sshsig import armor, signed_data

    data = signed_data(message, namespace, hashalg)
    to_sign = (
        hashlib.sha256(application.encode()).digest()
        + bytes([flags])
        + wire.uint32(counter)
        + hashlib.sha256(data).digest()
    )
    r, s = utils.decode_dss_signature(private_key.sign(to_sign, ec.ECDSA(hashes.SHA256())))
    inner = (
        wire.string(SK_TYPE)
        + wire.string(wire.mpint(r) + wire.mpint(s))
        + bytes([flags])
        + wire.uint32(counter)
    )
    blob = (
        b"SSHSIG"
        + wire.uint32(1)
        + wire.string(sk_public_blob(private_key, application))
        + wire.string(namespace)
        + wire.string(b"")
        + wire.string(hashalg)
        + wire.string(inner)
    )
    return armor(blob)


def build_sshsig(
    *,
    key_blob: bytes,
    namespace: str = NAMESPACE,
    reserved: bytes = b"",
    hashalg: str = "sha512",
    inner: bytes,
    magic: bytes = b"SSHSIG",
    version: int = 1,
    trailer: bytes = b"",
) -> str:
    """Assemble an SSHSIG blob field by field (for malformed-input tests)."""
    from xcompat.signing import wire
    from xcompat.signing.sshsig import armor

    return armor(
        magic
        + wire.uint32(version)
        + wire.string(key_blob)
        + wire.string(namespace)
        + wire.string(reserved)
        + wire.string(hashalg)
        + wire.string(inner)
        + trailer
    )


def keys_made_by_ssh_keygen(folder: Path) -> dict[str, Key]:
    """The keys of the CLI and interoperability tests, made by the real ssh-keygen in ``folder``."""
    return {
        "p256": make_key_with_ssh_keygen(folder, "alice"),
        "p384": make_key_with_ssh_keygen(folder, "bob", bits=384),
        "stranger": make_key_with_ssh_keygen(folder, "mallory"),
        "ed25519": make_key_with_ssh_keygen(folder, "eve", key_type="ed25519"),
    }
