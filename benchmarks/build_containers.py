"""What the containerised (cibuildwheel) build path costs, against the native backend, on
the same projects in one run.

For each project (the bundled sample, C + abi3 + a torch op built against the CPU torch of
the mounted wheel folder; and the container tier's third-party sdist), on fresh copies:

  native      ``xcompat build --backend native`` (this interpreter and toolchain)
  container   ``xcompat build --backend cibuildwheel`` in the tier's builder image, with
              ``--test-command ''`` (build + repair only, as native does)

and prints the wall time of each, the ratio and the per-wheel overhead of the container
path (container start, copying the project in and the wheel out, installing the build
requirements in a fresh interpreter: for the sample, torch from the wheel folder), plus the
image build times the tier recorded (XCOMPAT_CONTAINER_TIMINGS).

Needs a running engine and the tier's variables: run it through ``make bench-containers``
(tests/containers/run-tier.sh --bench). Without them it says so and exits 0.

    python benchmarks/build_containers.py [--rounds 1]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "examples" / "sample-ext"
PY = f"{sys.version_info.major}.{sys.version_info.minor}"
NEEDED = ("DOCKER_HOST", "XCOMPAT_CPU_BUILDER_IMAGE", "XCOMPAT_CONTAINER_ARGS", "XCOMPAT_CONTAINER_SDIST")


def matrix(torch: bool) -> str:
    text = (f'xcompat: 1\nrepo: acme/bench\nserial: 1\npython: ["{PY}"]\n'
            "platforms:\n  linux:\n    archs: [x86_64]\nbackends:\n  cpu: {}\n")
    return text + ('frameworks:\n  torch: ["2.13"]\n' if torch else "")


def sample_copy(root: Path, name: str) -> Path:
    dest = root / name
    shutil.copytree(SAMPLE, dest, ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "*.so",
                                                                "__pycache__", ".xcompat"))
    return dest


def sdist_copy(root: Path, name: str) -> Path:
    dest = root / name
    with tarfile.open(os.environ["XCOMPAT_CONTAINER_SDIST"]) as tar:
        tar.extractall(dest, filter="data")
    (project,) = dest.iterdir()
    return project


def xcompat_build(project: Path, root: Path, backend: str, torch: bool) -> tuple[float, int]:
    out = root / f"{project.parent.name}-{project.name}-{backend}"
    (root / "matrix.yml").write_text(matrix(torch))
    argv = [sys.executable, "-m", "xcompat", "build", str(project), "--backend", backend, "--out", str(out)]
    if backend == "cibuildwheel":
        argv += ["--matrix", str(root / "matrix.yml"), "--test-command", ""]
    env = {**os.environ, "CI": "", "XCOMPAT_NO_CCACHE": "1"}
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{backend} build of {project.name} failed:\n{proc.stderr[-3000:]}")
    wheels = len(json.loads((out / "build.json").read_text())["wheels"])
    return seconds, wheels


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    missing = [name for name in NEEDED if not os.environ.get(name)]
    if missing:
        print(f"build_containers: skipped, {', '.join(missing)} not set (run `make bench-containers`)")
        return 0
    timings = os.environ.get("XCOMPAT_CONTAINER_TIMINGS")
    if timings and Path(timings).is_file():
        print("images (this tier run):")
        for line in Path(timings).read_text().splitlines():
            row = json.loads(line)
            print(f"  {row['stage']:<30} {row['seconds']:7.1f} s")
    projects = [("sample (C, abi3, torch op)", sample_copy, True), ("sdist", sdist_copy, False)]
    print(f"per wheel, median of {args.rounds} round(s), build + repair (+ xcompat's audits), no tests:")
    print(f"  {'project':<28} {'native':>9} {'container':>10} {'ratio':>7} {'overhead':>9}")
    with tempfile.TemporaryDirectory(prefix="xcompat-bench-containers-") as tmp:
        root = Path(tmp)
        for label, copy, torch in projects:
            times: dict[str, list[float]] = {"native": [], "cibuildwheel": []}
            for index in range(args.rounds):
                # Alternate the order so that neither always runs on a warm page cache.
                order = ["native", "cibuildwheel"] if index % 2 == 0 else ["cibuildwheel", "native"]
                for backend in order:
                    project = copy(root, f"{backend}-{index}-{torch}")
                    seconds, wheels = xcompat_build(project, root, backend, torch)
                    times[backend].append(seconds / max(1, wheels))
            native = statistics.median(times["native"])
            container = statistics.median(times["cibuildwheel"])
            print(f"  {label:<28} {native:8.1f}s {container:9.1f}s {container / native:6.2f}x "
                  f"{container - native:+8.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
