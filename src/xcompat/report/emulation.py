"""How a cell ran when it ran emulated (``xcompat run --arch``): the report marks such cells.

A lane's results carry an ``emulation`` object (the test result, else the build record): the
architecture, QEMU's version, the CPU model the processes saw, whether the wheel was cross
built on the host or built in the emulated root, and the time the tests took there. A native
cell has none, and the report shows it as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from xcompat.results.stage_result import StageResult


@dataclass(frozen=True, kw_only=True)
class Emulation:
    arch: str
    qemu: str
    cpu: str
    floor: str | None = None
    build: str | None = None  # cross | emulated
    seconds: float | None = None  # the tests' time on the lane
    # a lane at an ISA floor: each CPU model's test run, (cpu, floor, status, failed tests)
    runs: tuple[tuple[str, str | None, str, tuple[str, ...]], ...] = ()

    @property
    def runs_text(self) -> str:
        """``at cortex-a57 (armv8.0-a floor): crashed (tests/t.py::a); at max: passed``."""
        said = []
        for cpu, floor, status, failed in self.runs:
            where = f"{cpu} ({floor} floor)" if floor else cpu
            listed = f" ({', '.join(failed[:3])}{', …' if len(failed) > 3 else ''})" if failed else ""
            said.append(f"at {where}: {status}{listed}")
        return "; ".join(said)

    @property
    def label(self) -> str:
        """``emulated: QEMU 7.2, cortex-a57 (armv8.0-a floor), cross build``."""
        qemu = ".".join(self.qemu.split(".")[:2])
        cpu = f"{self.cpu} ({self.floor} floor)" if self.floor else self.cpu
        parts = [f"QEMU {qemu}", cpu]
        if self.build:
            parts.append(f"{self.build} build")
        if self.seconds is not None:
            parts.append(f"tests {self.seconds:.0f}s")
        if self.runs:
            parts.append("tests " + self.runs_text)
        return "emulated: " + ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """The report's form (``schemas/report.schema.json``, a cell's ``emulation``)."""
        found: dict[str, Any] = {"arch": self.arch, "qemu": self.qemu, "cpu": self.cpu, "floor": self.floor}
        if self.build is not None:
            found["build"] = self.build
        if self.seconds is not None:
            found["seconds"] = self.seconds
        if self.runs:
            found["runs"] = [{"cpu": cpu, "floor": floor, "status": status, "failed": list(failed)}
                             for cpu, floor, status, failed in self.runs]
        found["label"] = self.label
        return found


def _text(value: Any) -> str | None:
    return value[:80] if isinstance(value, str) and value else None


def emulation_of(results: Iterable[StageResult]) -> Emulation | None:
    """The cell's emulation, from its test result (else its build record); None: it ran natively.
    A malformed object is ignored: the report never fails on a result's optional field."""
    found: dict[str, Any] | None = None
    for kind in ("test", "build"):
        for result in results:
            value = result.data.get("emulation") if result.kind == kind else None
            if isinstance(value, dict) and found is None:
                found = value
    if found is None:
        return None
    arch, qemu, cpu = _text(found.get("arch")), _text(found.get("qemu")), _text(found.get("cpu"))
    if arch is None or qemu is None or cpu is None:
        return None
    build = found.get("build") if found.get("build") in ("cross", "emulated") else None
    seconds = found.get("seconds")
    return Emulation(arch=arch, qemu=qemu, cpu=cpu, floor=_text(found.get("floor")), build=build,
                     seconds=float(seconds) if isinstance(seconds, (int, float)) and not isinstance(seconds, bool)
                     and seconds >= 0 else None, runs=_runs(found.get("runs")))


def _runs(value: Any) -> tuple[tuple[str, str | None, str, tuple[str, ...]], ...]:
    """The test runs of a lane at a floor; malformed entries are left out."""
    found = []
    for run in value[:4] if isinstance(value, list) else ():
        if not isinstance(run, dict):
            continue
        cpu, status, failed = _text(run.get("cpu")), _text(run.get("status")), run.get("failed")
        if cpu is None or status is None:
            continue
        names = tuple(n[:300] for n in failed[:50] if isinstance(n, str)) if isinstance(failed, list) else ()
        found.append((cpu, _text(run.get("floor")), status, names))
    return tuple(found)
