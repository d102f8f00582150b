"""Running a command inside an emulated root.

The command runs in a private mount namespace (``unshare --mount``): ``/proc``, ``/dev``, ``/sys`` and
the work folders are bound into the root there, and the kernel drops those mounts when the
namespace's last process ends, so a hang, a kill or a cancelled job never leaves a mount behind
on the host. ``QEMU_CPU`` selects the CPU model QEMU emulates, for every process of the command.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from xcompat.errors import UnavailableError

ROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
ROOT_CA = "/etc/ssl/certs/xcompat-host-ca.crt"
# pip's settings that reach the index from inside the root the way they do on the host
_PASSED = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_DEFAULT_TIMEOUT", "PIP_DISABLE_PIP_VERSION_CHECK",
           "PIP_NO_CACHE_DIR", "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")


@dataclass(frozen=True)
class Bind:
    host: Path
    inside: str  # absolute path in the root
    read_only: bool = False


@dataclass(frozen=True)
class RootRun:
    root: Path
    binds: tuple[Bind, ...] = ()
    cpu: str | None = None  # QEMU CPU model; None: QEMU's default
    env: Mapping[str, str] = field(default_factory=dict)


def prepare(root: Path) -> None:
    """Give the root the host's name resolution and CA bundle, so pip works inside it."""
    for name in ("resolv.conf", "hosts"):
        source = Path("/etc") / name
        if source.is_file():
            target = root / "etc" / name
            target.unlink(missing_ok=True)  # may be a dangling link into the host's /run
            shutil.copyfile(source, target)
    ca = Path(os.environ.get("PIP_CERT") or HOST_CA)
    if ca.is_file():
        shutil.copyfile(ca, root / ROOT_CA.lstrip("/"))


def _environment(run: RootRun) -> dict[str, str]:
    env = {"PATH": ROOT_PATH, "HOME": "/root",
           "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
    env.update({k: os.environ[k] for k in _PASSED if k in os.environ})
    if (run.root / ROOT_CA.lstrip("/")).is_file():
        env.update(PIP_CERT=ROOT_CA, SSL_CERT_FILE=ROOT_CA, REQUESTS_CA_BUNDLE=ROOT_CA)
    if run.cpu:
        env["QEMU_CPU"] = run.cpu
    env.update(run.env)
    return env


def command(run: RootRun, argv: Sequence[str], *, cwd: str = "/") -> list[str]:
    """The host command line that runs ``argv`` in the root."""
    if shutil.which("unshare") is None or shutil.which("chroot") is None:
        raise UnavailableError("unshare and chroot are needed to run an emulated root",
                               hint="install util-linux and coreutils")
    root = str(run.root)
    steps = ["set -e",
             f"mount --rbind /proc {shlex.quote(root + '/proc')}",
             f"mount --rbind /dev {shlex.quote(root + '/dev')}",
             # libraries read the CPU list there (torch's cpuinfo), as on a real machine
             f"mount --rbind /sys {shlex.quote(root + '/sys')}"]
    for bind in run.binds:
        inside = root + "/" + bind.inside.strip("/")
        steps.append(f"mkdir -p {shlex.quote(inside)}")
        steps.append(f"mount --bind {shlex.quote(str(bind.host))} {shlex.quote(inside)}")
        if bind.read_only:
            steps.append(f"mount -o remount,bind,ro {shlex.quote(inside)}")
    env = [f"{k}={v}" for k, v in sorted(_environment(run).items())]
    inner = ["env", "-i", *env, "sh", "-c", 'cd "$0" && exec "$@"', cwd, *argv]
    steps.append("exec chroot " + shlex.quote(root) + " " + shlex.join(inner))
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", "\n".join(steps)]


def run_in_root(run: RootRun, argv: Sequence[str], *, cwd: str = "/", timeout: float | None = None,
                capture: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command(run, argv, cwd=cwd), capture_output=capture, text=True,
                          timeout=timeout, check=False)
