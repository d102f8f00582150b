"""``xcompat run --arch`` and ``xcompat build --arch``: a lane opened for the pipeline's stages.

The stages see the lane through ``xcompat.pipeline.lane_api.EmulatedLane``: its architecture,
its root's Python, whether the root has torch, how a command runs there, and what a result
records of it (``emulation``: arch, QEMU version, CPU model, floor, root), torch for the
kernels (installed in the root once), and the lane at its feature-rich CPU model. The build stage
runs ``xcompat build --arch``, which builds the lane's wheel with :func:`build_record` (cross
built on the host where the project allows, else in the root) and writes the ordinary
``build.json``, audited as every wheel is, with the ``emulation`` object added.
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from xcompat.emulation.lane import VENV, Lane, open_lane, xcompat_copy
from xcompat.emulation.roots import DEFAULT_SUITE, suite_for
from xcompat.emulation.torch_lane import ensure_torch, has_torch, site_packages, torch_version
from xcompat.errors import XcompatError


@dataclass(frozen=True)
class RunLane:
    """A lane as the stages use it (satisfies ``EmulatedLane``)."""

    lane: Lane
    package: Path  # a folder holding a copy of this xcompat, for the root's PYTHONPATH
    build: Mapping[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.lane.arch.name

    @property
    def python(self) -> str:
        return self.lane.python

    @property
    def floor(self) -> str | None:
        return self.lane.floor

    @property
    def has_torch(self) -> bool:
        return has_torch(site_packages(self.lane.root, VENV, self.python))

    @property
    def torch(self) -> str | None:
        return torch_version(self.lane.arch)

    def ensure_torch(self) -> str | None:
        try:
            ensure_torch(self.lane.root, VENV, self.python, self.lane.arch)
        except XcompatError as err:
            return err.message
        return None

    def feature_rich(self) -> RunLane | None:
        if self.lane.floor is None:
            return None
        return replace(self, lane=replace(self.lane, cpu=self.lane.arch.rich, floor=None))

    def describe(self) -> dict[str, Any]:
        return {key: value for key, value in self.lane.describe().items()}

    def command(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path,
                binds: Sequence[Path]) -> list[str]:
        inner = dict(env)
        inner["PYTHONPATH"] = ":".join(filter(None, (inner.get("PYTHONPATH", ""), str(self.package))))
        return self.lane.wrap(argv, env=inner, cwd=cwd, binds=[*binds, self.package])


def lane_suite(python: str) -> str:
    """The Debian suite of a lane run from this interpreter: the one whose Python is the same as
    the host's where there is one (the lane and the native run then test the same Python)."""
    return suite_for(python) or DEFAULT_SUITE


def open_run_lane(arch: str, *, floor: str | None, python: str, workdir: Path | None = None) -> RunLane:
    """Open (make or reuse) the lane of ``arch`` at ``floor`` for a run from ``python``."""
    lane = open_lane(arch, floor=floor, suite=lane_suite(python))
    where = workdir
    if where is None:  # the package copy lives as long as this run
        where = Path(tempfile.mkdtemp(prefix="xcompat-lane-"))
        atexit.register(shutil.rmtree, where, ignore_errors=True)
    return RunLane(lane=lane, package=xcompat_copy(where))


def emulation_record(lane: Lane, **extra: Any) -> dict[str, Any]:
    """The ``emulation`` object of a result (schemas: build, test-result)."""
    return {**lane.describe(), **extra}


def _keep_logs(work: Path, out: Path, arch: str) -> dict[str, Path]:
    """The build routes' logs moved to ``out/logs`` (by route: cross, emulated), and the scratch
    folder (the sources' copy, the build's files) removed."""
    kept = {}
    for route, name in (("cross", "cross-build.log"), ("emulated", f"emulated-build-{arch}.log")):
        if (work / name).is_file():
            kept[route] = out / "logs" / f"{route}-build-{arch}.log"
            kept[route].parent.mkdir(parents=True, exist_ok=True)
            shutil.move(work / name, kept[route])
    shutil.rmtree(work, ignore_errors=True)
    return kept


def build_record(project: Path, out: Path, arch: str, *, env: Mapping[str, str] | None = None,
                 cell_id: str | None = None) -> dict[str, Any]:
    """``xcompat build --arch``: the lane's wheel of ``project`` in ``out`` and its record."""
    from xcompat.builder.native import BuiltWheel
    from xcompat.builder.record import audit_built_wheel, build_document
    from xcompat.builder.requirements import IsolationChoice
    from xcompat.builder.tools import tool_env
    from xcompat.emulation.build import build_for_lane
    from xcompat.errors import XcompatError

    lane = open_lane(arch, suite=lane_suite(f"{sys.version_info.major}.{sys.version_info.minor}"))
    out.mkdir(parents=True, exist_ok=True)
    work = out / ".lane-build"
    start = time.monotonic()
    try:
        built = build_for_lane(lane, project, work, env=env)
    except XcompatError as err:
        logs = _keep_logs(work, out, lane.arch.name)
        tail = logs["emulated"].read_text(encoding="utf-8", errors="replace").splitlines()[-10:] \
            if "emulated" in logs else []
        document = build_document(project=project, backend="native", wheels=[], seconds=time.monotonic() - start,
                                  cells=[{"id": cell_id, "status": "failed", "wheels": [], "reason": err.message}],
                                  errors=[{"cell_id": cell_id, "message": err.message, "log_tail": tail}])
        document["emulation"] = emulation_record(lane)  # no wheel: neither build route gave one
        return document
    wheel = out / built.wheel.name
    shutil.copy2(built.wheel, wheel)
    logs = _keep_logs(work, out, lane.arch.name)
    log = logs.get(built.mode) or out / "logs" / f"{built.mode}-build-{lane.arch.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.touch()
    record = audit_built_wheel(
        BuiltWheel(path=wheel, cell_id=cell_id, build_seconds=built.seconds, repair_seconds=0.0, repair_tool="none",
                   excluded=(), log=log, ccache=False,
                   isolation=IsolationChoice(isolated=False, reason=f"{built.mode} build for {lane.arch.name}")),
        env=tool_env(extra=env), out_dir=out, backend="native")
    document = build_document(project=project, backend="native", wheels=[record], seconds=time.monotonic() - start,
                              cells=[{"id": cell_id, "status": "passed", "wheels": [wheel.name]}])
    extra: dict[str, Any] = {"build": built.mode, "build_seconds": round(built.seconds, 3)}
    if built.why_emulated:  # its log is kept beside the record, not in the removed scratch folder
        extra["why_emulated"] = built.why_emulated.replace(str(work / "cross-build.log"),
                                                           f"logs/cross-build-{lane.arch.name}.log")
    document["emulation"] = emulation_record(lane, **extra)
    return document
