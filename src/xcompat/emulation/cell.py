"""A project's tests on an emulated lane: its wheel built for the lane, installed, tested there.

The same steps the pipeline's build and test stages take on the host, with the lane's
wheel and the root's interpreter: the wheel is unpacked into a folder on ``PYTHONPATH`` and
``xcompat test`` runs from the project's folder, each test isolated, writing its result where
the host reads it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from xcompat.archives import extract_zip
from xcompat.emulation.build import LaneBuild, build_for_lane
from xcompat.emulation.lane import Lane, xcompat_copy


@dataclass(frozen=True)
class LaneTests:
    build: LaneBuild
    result: Path  # the test result document (test-result.schema.json)
    returncode: int
    seconds: float
    output: str


def install_for_lane(wheel: Path, site: Path) -> Path:
    """Unpack ``wheel`` into ``site`` (its files all belong on the library path)."""
    if site.exists():
        shutil.rmtree(site)
    extract_zip(wheel, site, what="wheel")
    return site


def run_tests_in_lane(lane: Lane, project: Path, workdir: Path, *, targets: Sequence[str] = ("tests",),
                 isolate: str = "test", build_env: Mapping[str, str] | None = None,
                 cross: bool = True, torch: bool = True, timeout: float = 3600,
                 cell_id: str | None = None) -> LaneTests:
    """Build ``project`` for ``lane`` and run its tests there; the result lands in ``workdir``.
    ``torch``: False when ``build_env`` turns the project's torch part off (see build_for_lane)."""
    workdir.mkdir(parents=True, exist_ok=True)
    build = build_for_lane(lane, project, workdir, env=build_env, cross=cross, torch=torch)
    site = install_for_lane(build.wheel, workdir / "site")
    package = xcompat_copy(workdir)
    result = workdir / "test.json"
    result.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "xcompat", "test", *targets, "--isolate", isolate, "--json", str(result)]
    if cell_id:
        argv += ["--cell-id", cell_id]
    env = {"PYTHONPATH": f"{site}:{package}", "PYTHONSAFEPATH": "1"}
    start = time.perf_counter()
    done = subprocess.run(lane.wrap(argv, env=env, cwd=project.resolve(), binds=[workdir]),
                          capture_output=True, text=True, timeout=timeout, check=False)
    return LaneTests(build=build, result=result, returncode=done.returncode,
                     seconds=time.perf_counter() - start, output=done.stdout + done.stderr)
