"""Debian root file systems of another architecture, made once and cached.

A root is made with ``mmdebstrap`` (its second stage runs under emulation, so making one takes
minutes) and kept as a tarball keyed by suite, architecture and package list, next to its
unpacked copy. Both are written under a temporary name and renamed into place, under a lock,
so an interrupted or concurrent make never leaves a half-made root where a later run finds it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from xcompat.emulation.arches import Arch
from xcompat.errors import ToolError, UnavailableError

# What every root has: an interpreter with venv and headers (the headers and build settings are
# what a host cross build reads), a compiler for builds that cannot cross compile, and CA
# certificates for pip.
BASE_PACKAGES = ("python3", "python3-venv", "python3-dev", "gcc", "g++", "libc6-dev", "ca-certificates")
DEFAULT_SUITE = "bookworm"
# The Debian suite whose python3 is each Python: a root has one.
SUITES = {"3.11": "bookworm", "3.13": "trixie"}
READY = ".xcompat-root-ready"
ATTEMPTS = 3
RETRY_SECONDS = 20
LAYOUT = 2  # bump when what a root holds changes, so old caches are not reused


def suite_for(python: str) -> str | None:
    """The Debian suite whose python3 is ``python`` ("3.13" -> trixie), or None: no root has it,
    and a cell of that Python is not run on an emulated lane."""
    return SUITES.get(python)


def cache_dir() -> Path:
    base = os.environ.get("XCOMPAT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "xcompat")
    return Path(base) / "emulation" / "roots"


@dataclass(frozen=True)
class RootSpec:
    arch: Arch
    suite: str = DEFAULT_SUITE
    packages: tuple[str, ...] = field(default=BASE_PACKAGES)

    @property
    def key(self) -> str:
        text = json.dumps({"layout": LAYOUT, "suite": self.suite, "arch": self.arch.debian,
                           "packages": sorted(set(self.packages))}, sort_keys=True)
        return f"{self.arch.name}-{self.suite}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"

    def tarball(self, base: Path | None = None) -> Path:
        return (base or cache_dir()) / f"{self.key}.tar"

    def folder(self, base: Path | None = None) -> Path:
        return (base or cache_dir()) / self.key


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _release_suite(name: str) -> bool:
    return "-" not in name  # bookworm, trixie; not bookworm-security or bookworm-updates


def _deb822_mirrors(text: str, suite: str | None) -> list[str]:
    """URIs of ``deb`` entries for ``suite`` (None: for any release suite)."""
    found = []
    for block in re.split(r"\n\s*\n", text):
        fields = dict(re.findall(r"(?m)^([A-Za-z-]+):[ \t]*(.*)$", block))
        suites = fields.get("Suites", "").split()
        if "deb" in fields.get("Types", "").split() and (suite in suites if suite else any(map(_release_suite, suites))):
            found += fields.get("URIs", "").split()
    return found


def _one_line_mirrors(text: str, suite: str | None) -> list[str]:
    found = []
    for line in text.splitlines():
        words = re.sub(r"\[[^]]*\]", " ", line.split("#", 1)[0]).split()
        if len(words) >= 3 and words[0] == "deb" and (words[2] == suite if suite else _release_suite(words[2])):
            found.append(words[1])
    return found


def host_mirror(suite: str, apt_dir: Path = Path("/etc/apt")) -> str | None:
    """The Debian mirror this machine's apt uses for ``suite`` itself (not -security or
    -updates), or, for a suite it does not list (trixie on a bookworm machine), the mirror of
    the release suite it does list: one archive serves every suite. None when apt lists none.
    A root is made from the release suite alone: its security and updates indices change
    under it, and one caught mid-sync fails the whole make."""
    texts = []
    for path in sorted(apt_dir.glob("sources.list.d/*.sources")):
        texts.append(("deb822", path.read_text(encoding="utf-8", errors="replace")))
    for path in [apt_dir / "sources.list", *sorted(apt_dir.glob("sources.list.d/*.list"))]:
        if path.is_file():
            texts.append(("one-line", path.read_text(encoding="utf-8", errors="replace")))
    for wanted in (suite, None):
        for form, text in texts:
            found = _deb822_mirrors(text, wanted) if form == "deb822" else _one_line_mirrors(text, wanted)
            if found:
                return found[0]
    return None


def make_tarball(spec: RootSpec, base: Path | None = None) -> Path:
    """The cached tarball of ``spec``, made with mmdebstrap when missing."""
    target = spec.tarball(base)
    if target.is_file():
        return target
    tool = shutil.which("mmdebstrap")
    if tool is None:
        raise UnavailableError("mmdebstrap is not installed", hint="apt-get install mmdebstrap")
    # mmdebstrap picks the output format from the name's ending
    made = target.with_name(target.name + ".partial.tar")
    made.unlink(missing_ok=True)
    argv = [tool, "--quiet", "--variant=minbase", f"--arch={spec.arch.debian}",
            f"--include={','.join(sorted(set(spec.packages)))}", spec.suite, str(made)]
    mirror = host_mirror(spec.suite)
    if mirror is not None:  # else mmdebstrap's own default
        argv.append(f"deb {mirror} {spec.suite} main")
    for _attempt in range(ATTEMPTS):  # a mirror caught mid-sync fails apt's update; it passes later
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode == 0 and made.is_file():
            break
        made.unlink(missing_ok=True)
        time.sleep(RETRY_SECONDS)
    if done.returncode != 0 or not made.is_file():
        made.unlink(missing_ok=True)
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise ToolError(f"mmdebstrap could not make the {spec.arch.name} {spec.suite} root: {' | '.join(tail)}",
                        hint="check that binfmt_misc has a QEMU handler for it and the Debian mirror is reachable")
    os.replace(made, target)
    return target


def ensure_root(spec: RootSpec, base: Path | None = None) -> Path:
    """An unpacked root of ``spec``, made (or unpacked from its cached tarball) when missing."""
    folder = spec.folder(base)
    if (folder / READY).is_file():
        return folder
    with _locked(folder):
        if (folder / READY).is_file():
            return folder
        tarball = make_tarball(spec, base)
        partial = folder.with_name(folder.name + ".partial")
        if partial.exists():
            shutil.rmtree(partial)
        partial.mkdir(parents=True)
        # tar keeps owners, modes and links as made; the root's device nodes are not needed
        # (/dev is bound in when it runs)
        done = subprocess.run(["tar", "-xf", str(tarball), "-C", str(partial), "--exclude=./dev/*"],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise ToolError(f"cannot unpack {tarball}: {done.stderr.strip()[:200]}",
                            hint="remove the tarball so that it is made again")
        (partial / READY).write_text(spec.key + "\n", encoding="utf-8")
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(partial, folder)
    return folder


def root_python(root: Path) -> str:
    """The root's python3 version, "3.11", read from its files (no emulation needed)."""
    minors = [int(p.name[len("python3."):]) for p in (root / "usr" / "lib").glob("python3.*")
              if p.name[len("python3."):].isdigit()]
    if not minors:
        raise ToolError(f"the root {root} has no python3", hint="remove it so that it is made again")
    return f"3.{max(minors)}"
