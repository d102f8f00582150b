"""A lane's wheel: cross built on the host where the project allows, else built in the root.

Either way the build runs in a private copy of the project's sources (as every native build
does), so nothing of another architecture is left in the user's checkout.

A build that compiles against torch, on an arch that has a torch (arches.json), is built in
the root against the lane's torch: the one the lane's tests and kernels run with, installed
once from the cached wheel. The build's venv reaches it through a ``.pth`` line naming the
lane venv's site-packages, after its own: a second torch install under QEMU would cost
minutes and gigabytes for the same files, and one torch means the op is compiled against
exactly the ``libtorch`` its tests load.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from xcompat.builder.sources import copy_sources
from xcompat.emulation.chroot import ROOT_PATH, run_in_root
from xcompat.emulation.cross import (
    TARGET_ONLY,
    CrossUnavailable,
    build_requirements,
    cross_build,
    requirement_name,
    torch_build,
)
from xcompat.emulation.lane import VENV, Lane
from xcompat.emulation.torch_lane import ensure_torch, site_packages, torch_version
from xcompat.errors import InputError, ToolError
from xcompat.log import get_logger


@dataclass(frozen=True)
class LaneBuild:
    wheel: Path
    mode: str  # "cross": compiled on the host; "emulated": compiled in the root under QEMU
    seconds: float
    why_emulated: str | None = None  # why a cross build was not possible


# the line in a build venv that makes the lane venv's torch importable there
TORCH_PTH = "xcompat-lane-torch.pth"


def _root_build_env(lane: Lane, requires: list[str], timeout: float, *, torch: bool = False) -> str:
    """A venv in the root holding ``requires`` (made once per list); its interpreter's path.
    ``torch``: the lane venv's site-packages (its torch) is on the venv's path, after its own."""
    kept = sorted(r for r in requires if requirement_name(r) not in TARGET_ONLY)
    lane_site = str(site_packages(Path("/"), VENV, lane.python))
    key = hashlib.sha256("\n".join([*kept, *([f"torch from {lane_site}"] if torch else [])]).encode()).hexdigest()[:16]
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
        if torch:
            (site_packages(lane.root, venv, lane.python) / TORCH_PTH).write_text(lane_site + "\n", encoding="utf-8")
        stamp.write_text(key + "\n", encoding="utf-8")
    return f"{venv}/bin/python"


def check_torch_requirement(requires: list[str], version: str, arch: str) -> None:
    """A one-line error when the project's torch requirement excludes the lane's torch."""
    from packaging.requirements import InvalidRequirement, Requirement

    for text in requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue  # pip reports it, with the build's own words
        if req.name.lower() == "torch" and req.marker is None and not req.specifier.contains(version, prereleases=True):
            raise InputError(f"the build requires {text}, and the {arch} lane's torch is {version} "
                             f"(the CPU build PyPI has for {arch}; arches.json)",
                             hint=f"allow torch {version} in [build-system] requires to build for {arch}")


def _lane_torch(lane: Lane, source: Path, torch: bool = True) -> tuple[str | None, bool]:
    """(why the build compiles against torch or None, whether the lane's torch is given to it),
    the lane's torch installed first when it is (``torch``: False, never)."""
    why = torch_build(source)
    version = torch_version(lane.arch)
    if why is None or version is None or not torch:
        return why, False
    check_torch_requirement(build_requirements(source), version, lane.arch.name)
    ensure_torch(lane.root, VENV, lane.python, lane.arch)
    return why, True


def emulated_build(lane: Lane, source: Path, out: Path, *, env: Mapping[str, str] | None = None,
                   timeout: float = 3600, torch: bool = True) -> Path:
    """Build ``source``'s wheel inside the root (pip and the compiler run under QEMU), without
    build isolation: in a venv of the project's build requirements less the frameworks, plus the
    lane's torch for a build that compiles against torch where the arch has one (there is none
    for s390x or ppc64le: a torch-free build needs none)."""
    out.mkdir(parents=True, exist_ok=True)
    why_torch, with_torch = _lane_torch(lane, source, torch)
    python = _root_build_env(lane, build_requirements(source), timeout, torch=with_torch)
    inner = dict(env or {})
    if with_torch:  # torch's extension builder finds ninja on PATH: the lane venv has it
        inner.setdefault("PATH", f"{python.rsplit('/', 1)[0]}:{VENV}/bin:{ROOT_PATH}")
    run = lane.root_run([source, out], inner)
    argv = [python, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--disable-pip-version-check",
            "-w", str(out), str(source)]
    done = run_in_root(run, argv, cwd=str(source), timeout=timeout)
    (out.parent / f"emulated-build-{lane.arch.name}.log").write_text(done.stdout + "\n" + done.stderr,
                                                                     encoding="utf-8")
    wheels = sorted(out.glob(f"*{lane.arch.name}*.whl")) or sorted(out.glob("*-none-any.whl"))
    if done.returncode != 0 or not wheels:
        tail = _failure(done.stdout + "\n" + done.stderr)
        name = lane.arch.name
        if why_torch is not None and torch_version(lane.arch) is None:
            raise ToolError(f"the {name} build in the emulated root failed, and it compiles against torch "
                            f"({why_torch}), which has no {name} wheel on PyPI: {tail}",
                            hint=f"build only its torch-free part for {name} (a switch of its own build, set "
                                 f"in the build environment), or leave {name} out of the matrix")
        raise ToolError(f"the {name} build in the emulated root failed: {tail}",
                        hint="run the project's build in that root to see the whole log")
    return wheels[-1]


def _failure(output: str) -> str:
    """What a failed pip build says: the build's own exception where it raised one (pip's closing
    notes say nothing of the cause), else its last lines."""
    lines = output.strip().splitlines()
    raised = [line.strip() for line in lines if re.match(r"\s*[\w.]*(Error|Exception): ", line)]
    return (raised[-1] if raised else " | ".join(lines[-3:]))[:400]


def build_for_lane(lane: Lane, project: Path, workdir: Path, *, env: Mapping[str, str] | None = None,
                   cross: bool = True, torch: bool = True) -> LaneBuild:
    """The lane's wheel of ``project`` in ``workdir/wheels``: cross built when possible.
    ``torch``: False when ``env`` turns off the project's torch part (a switch of its own, such
    as the sample's ``SAMPLE_EXT_TORCH=0``, which xcompat cannot see): its build is then treated
    as torch-free, cross built where it can be and never given the lane's torch."""
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
            wheel = cross_build(source, lane.root, lane.arch, out, workdir, extra_env=env, torch=torch)
            return LaneBuild(wheel=wheel, mode="cross", seconds=time.perf_counter() - start)
        except CrossUnavailable as err:
            why = str(err)
            log.info(f"{lane.arch.name}: {why}; building in the emulated root instead")
    shutil.rmtree(source)
    copy_sources(project, source)
    start = time.perf_counter()
    wheel = emulated_build(lane, source, out, env={**(env or {}), "HOME": "/root"}, torch=torch)
    return LaneBuild(wheel=wheel, mode="emulated", seconds=time.perf_counter() - start, why_emulated=why)

