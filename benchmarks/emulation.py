"""Emulated lanes against native: how much slower a cell of another architecture is here.

    python benchmarks/emulation.py [--arches aarch64,s390x,ppc64le] [--rounds 3]

For the sample's C extensions (``SAMPLE_EXT_TORCH=0``), per architecture and in one run:

* the wheel built natively (the host's compiler, for the host) against the same wheel for the
  lane built on the host with a cross compiler (what xcompat does) and built inside the
  emulated root (what cibuildwheel under QEMU and run-on-arch-action do): the slowdown
  factors cross/native and emulated/native, and how much faster cross is than emulated;
* the sample's C-extension tests (``xcompat test --isolate test``) natively against the lane.

Roots are made once and cached (``XCOMPAT_CACHE``); their making is not timed here. Medians
of ``--rounds`` rounds. Target: the lane's build at most 3x the native build.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from xcompat.emulation.build import build_for_lane  # noqa: E402
from xcompat.emulation.cell import install_for_lane  # noqa: E402
from xcompat.emulation.lane import open_lane, xcompat_copy  # noqa: E402

PROJECT = REPO / "examples" / "sample-ext"
T = TypeVar("T")
TARGETS = ["tests/test_core.py"]
ENV = {"SAMPLE_EXT_TORCH": "0"}


def native_build(out: Path) -> Path:
    shutil.rmtree(out, ignore_errors=True)
    source = out / "source"
    from xcompat.builder.sources import copy_sources

    copy_sources(PROJECT, source)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(out / "wheels"), str(source)], check=True, env={**os.environ, **ENV})
    return next((out / "wheels").glob("*.whl"))


def native_tests(wheel: Path, work: Path) -> None:
    site = work / "native-site"
    shutil.rmtree(site, ignore_errors=True)
    zipfile.ZipFile(wheel).extractall(site)
    subprocess.run([sys.executable, "-m", "xcompat", "test", *TARGETS, "--isolate", "test", "--json",
                    str(work / "native.json")], cwd=PROJECT, capture_output=True, check=True,
                   env={**os.environ, "PYTHONPATH": str(site), "PYTHONSAFEPATH": "1"})


def lane_tests(lane, wheel: Path, work: Path) -> None:  # type: ignore[no-untyped-def]
    site = install_for_lane(wheel, work / "lane-site")
    package = xcompat_copy(work)
    argv = [sys.executable, "-m", "xcompat", "test", *TARGETS, "--isolate", "test", "--json", str(work / "lane.json")]
    done = subprocess.run(lane.wrap(argv, env={"PYTHONPATH": f"{site}:{package}", "PYTHONSAFEPATH": "1"},
                                    cwd=PROJECT, binds=[work]), capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"lane tests failed: {done.stdout[-1000:]}{done.stderr[-1000:]}")


def timed(func: Callable[..., T], *args: Any) -> tuple[T, float]:
    start = time.perf_counter()
    value = func(*args)
    return value, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arches", default="aarch64,s390x,ppc64le")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="xcompat-bench-emulation-") as tmp:
        work = Path(tmp)
        lanes = {name: open_lane(name) for name in args.arches.split(",")}
        times: dict[str, list[float]] = {}
        for _ in range(args.rounds):
            wheel, seconds = timed(native_build, work / "native")
            times.setdefault("native build", []).append(seconds)
            _, seconds = timed(native_tests, wheel, work)
            times.setdefault("native tests", []).append(seconds)
            for name, lane in lanes.items():
                for mode, cross in (("cross", True), ("emulated", False)):
                    start = time.perf_counter()
                    # torch=False: ENV turns the sample's torch part off, so aarch64 is cross
                    # built too, and both routes build the same torch-free wheel
                    built = build_for_lane(lane, PROJECT, work / name / mode, env=ENV, cross=cross, torch=False)
                    seconds = time.perf_counter() - start
                    assert built.mode == mode, built.why_emulated
                    times.setdefault(f"{name} {mode} build", []).append(seconds)
                _, seconds = timed(lane_tests, lane, built.wheel, work / name)
                times.setdefault(f"{name} tests", []).append(seconds)
        med = {key: statistics.median(values) for key, values in times.items()}
        print(f"sample-ext C extensions, median of {args.rounds} rounds (QEMU "
              f"{next(iter(lanes.values())).emulator.version}, host {os.cpu_count()} CPUs)")
        print(f"  native build {med['native build']:.2f} s, native tests {med['native tests']:.2f} s")
        for name in lanes:
            crossed, emulated, tests = med[f"{name} cross build"], med[f"{name} emulated build"], med[f"{name} tests"]
            print(f"  {name:8s} build: cross {crossed:.2f} s ({crossed / med['native build']:.2f}x native), "
                  f"emulated {emulated:.2f} s ({emulated / med['native build']:.2f}x native; "
                  f"cross is {emulated / crossed:.1f}x faster); tests {tests:.2f} s "
                  f"({tests / med['native tests']:.2f}x native)")


if __name__ == "__main__":
    main()
