"""A lane's wheel: cross built on the host where the project allows, else built in the root.

Either way the build runs in a private copy of the project's sources (as every native build
does), so nothing of another architecture is left in the user's checkout.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from xcompat.builder.sources import copy_sources
from xcompat.emulation.chroot import run_in_root
from xcompat.emulation.cross import (
    TARGET_ONLY,
    CrossUnavailable,
    build_requirements,
    cross_build,
    requirement_name,
)
from xcompat.emulation.lane import Lane
from xcompat.errors import ToolError
from xcompat.log import get_logger


@dataclass(frozen=True)
class LaneBuild:
    wheel: Path
    mode: str  # "cross": compiled on the host; "emulated": compiled in the root under QEMU
    seconds: float
    why_emulated: str | None = None  # why a cross build was not possible


def _root_build_env(lane: Lane, requires: list[str], timeout: float) -> str:
    """A venv in the root holding ``requires`` (made once per list); its interpreter's path."""
    kept = sorted(r for r in requires if requirement_name(r) not in TARGET_ONLY)
    key = hashlib.sha256("\n".join(kept).encode()).hexdigest()[:16]
    venv = f"/opt/xcompat-build/{key}"
    stamp = lane.root / venv.lstrip("/") / ".xcompat-ready"
    if not stamp.is_file():
        run = lane.root_run()
        for argv in (["python3", "-m", "venv", "--clear", venv],
                     [f"{venv}/bin/python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                      "wheel", *kept]):
            done = run_in_root(run, argv, timeout=timeout)
            if done.returncode != 0:
                tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])[:400]
                raise ToolError(f"cannot install the build requirements in the {lane.arch.name} root: {tail}")
        stamp.write_text(key + "\n", encoding="utf-8")
    return f"{venv}/bin/python"


def emulated_build(lane: Lane, source: Path, out: Path, *, env: Mapping[str, str] | None = None,
                   timeout: float = 3600) -> Path:
    """Build ``source``'s wheel inside the root (pip and the compiler run under QEMU), without
    build isolation: in a venv of the project's build requirements less the frameworks the
    target cannot install (torch has no s390x or ppc64le wheels; a torch-free build needs none)."""
    out.mkdir(parents=True, exist_ok=True)
    python = _root_build_env(lane, build_requirements(source), timeout)
    run = lane.root_run([source, out], dict(env or {}))
    argv = [python, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--disable-pip-version-check",
            "-w", str(out), str(source)]
    done = run_in_root(run, argv, cwd=str(source), timeout=timeout)
    (out.parent / f"emulated-build-{lane.arch.name}.log").write_text(done.stdout + "\n" + done.stderr,
                                                                     encoding="utf-8")
    wheels = sorted(out.glob(f"*{lane.arch.name}*.whl")) or sorted(out.glob("*-none-any.whl"))
    if done.returncode != 0 or not wheels:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])[:400]
        raise ToolError(f"the {lane.arch.name} build in the emulated root failed: {tail}",
                        hint="run the project's build in that root to see the whole log")
    return wheels[-1]


def build_for_lane(lane: Lane, project: Path, workdir: Path, *, env: Mapping[str, str] | None = None,
                   cross: bool = True) -> LaneBuild:
    """The lane's wheel of ``project`` in ``workdir/wheels``: cross built when possible."""
    log = get_logger()
    source = workdir / "source"
    if source.exists():
        shutil.rmtree(source)
    copy_sources(project, source)
    out = workdir / "wheels"
    if out.exists():
        shutil.rmtree(out)
    start = time.perf_counter()
    why: str | None = "cross building was turned off"
    if cross:
        try:
            wheel = cross_build(source, lane.root, lane.arch, out, workdir, extra_env=env)
            return LaneBuild(wheel=wheel, mode="cross", seconds=time.perf_counter() - start)
        except CrossUnavailable as err:
            why = str(err)
            log.info(f"{lane.arch.name}: {why}; building in the emulated root instead")
    shutil.rmtree(source)
    copy_sources(project, source)
    start = time.perf_counter()
    wheel = emulated_build(lane, source, out, env={**(env or {}), "HOME": "/root"})
    return LaneBuild(wheel=wheel, mode="emulated", seconds=time.perf_counter() - start, why_emulated=why)

