"""Can this machine run another architecture's programs? (binfmt_misc + QEMU user mode)

The kernel hands a foreign ELF file to QEMU when a binfmt_misc handler for its machine type
is registered and enabled. Debian's ``qemu-user-static`` registers them (flags ``F``: the
interpreter is opened once, so it works inside a chroot without QEMU in it).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from xcompat.emulation.arches import Arch
from xcompat.errors import UnavailableError

BINFMT = Path("/proc/sys/fs/binfmt_misc")


@dataclass(frozen=True)
class Emulator:
    arch: str
    interpreter: str  # what the kernel runs: /usr/libexec/qemu-binfmt/aarch64-binfmt-P
    qemu: str  # the user-mode binary, for its version and for direct runs
    version: str  # "7.2.22"


def mount_binfmt() -> None:
    """Mount binfmt_misc where it is not mounted (needs root; a no-op when it is)."""
    if (BINFMT / "status").exists():
        return
    done = subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise UnavailableError(f"cannot mount binfmt_misc at {BINFMT}: {done.stderr.strip()[:200]}",
                               hint="run as root, or in a container started with --privileged")


def _handler(arch: Arch) -> Path:
    return BINFMT / f"qemu-{arch.qemu}"


def emulator(arch: Arch) -> Emulator:
    """The registered handler for ``arch``, or UnavailableError saying what to install."""
    mount_binfmt()
    handler = _handler(arch)
    if not handler.is_file():
        subprocess.run(["update-binfmts", "--enable", f"qemu-{arch.qemu}"], capture_output=True, check=False)
    if not handler.is_file():
        raise UnavailableError(f"no binfmt_misc handler for {arch.name} ({handler} is missing)",
                               hint="install qemu-user-static and binfmt-support (Debian/Ubuntu)")
    text = handler.read_text(encoding="utf-8", errors="replace")
    if not text.startswith("enabled"):
        raise UnavailableError(f"the binfmt_misc handler {handler} is disabled",
                               hint=f"run: update-binfmts --enable qemu-{arch.qemu}")
    found = re.search(r"^interpreter (\S+)", text, re.MULTILINE)
    interpreter = found.group(1) if found else ""
    qemu = shutil.which(f"qemu-{arch.qemu}-static") or shutil.which(f"qemu-{arch.qemu}") or interpreter
    return Emulator(arch=arch.name, interpreter=interpreter, qemu=qemu, version=qemu_version(qemu))


def qemu_version(qemu: str) -> str:
    try:
        out = subprocess.run([qemu, "--version"], capture_output=True, text=True, timeout=30, check=False).stdout
    except OSError:
        return "unknown"
    found = re.search(r"version (\d+(?:\.\d+)+)", out)
    return found.group(1) if found else "unknown"
