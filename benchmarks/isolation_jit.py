"""What isolation costs a suite that compiles numba functions, against plain pytest.

The suite (tests/helpers/jit_suite.py): one test file whose tests each call two numba
functions, so every test process that runs one compiles them, or with ``cache=True`` loads
them from numba's on-disk cache. Two variants, without and with ``cache=True``; every run gets
an empty ``NUMBA_CACHE_DIR`` of its own, as a fresh CI checkout has no cache. Each variant
runs, interleaved over ``--repeats`` rounds whose order rotates:

* plain ``python -m pytest``: the alternative, no isolation;
* ``xcompat test --isolate file``: one process per test file;
* ``xcompat test --isolate test``: one process per test, forked after the warm parent set
  numba's compiler up (``xcompat.isolate.warmup.warm_numba``);
* the same with ``XCOMPAT_TEST_WARM_NUMBA=0``: what that set-up buys.

Printed: each mode's wall time (the median of the rounds, start-up and collection included, as
CI pays them), its ratio to plain pytest, and what ``xcompat matrix init`` measures and decides
on the same suite.

    python benchmarks/isolation_jit.py [--tests 16] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.helpers.jit_suite: the generated suite

from tests.helpers.jit_suite import jit_project

LEAN = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest"]
MODES = {
    "plain pytest": (["-m", "pytest", "-q", *LEAN, "tests"], {}),
    "--isolate file": (["-m", "xcompat", "test", "tests", "--isolate", "file", "--", *LEAN], {}),
    "--isolate test": (["-m", "xcompat", "test", "tests", "--isolate", "test", "--", *LEAN], {}),
    "--isolate test, numba not set up in the parent": (
        ["-m", "xcompat", "test", "tests", "--isolate", "test", "--", *LEAN], {"XCOMPAT_TEST_WARM_NUMBA": "0"}),
}


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CI", "GITHUB_", "GITLAB_", "PYTEST_"))}
    env["PYTHONPATH"] = str(REPO / "src")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


def _timed(project: Path, argv: list[str], extra: dict[str, str], scratch: Path) -> float:
    cache = Path(tempfile.mkdtemp(prefix="numba-cache-", dir=scratch))
    start = time.monotonic()
    proc = subprocess.run([sys.executable, *argv], cwd=project, env=_env({**extra, "NUMBA_CACHE_DIR": str(cache)}),
                          capture_output=True, text=True, timeout=900, check=False)
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return seconds


def _matrix_init(project: Path) -> str:
    proc = subprocess.run([sys.executable, "-m", "xcompat", "matrix", "init", str(project), "--repo", "bench/jit",
                           "--force"], cwd=project, env=_env({"PYTEST_ADDOPTS": "-p no:hypothesispytest"}),
                          capture_output=True, text=True, timeout=900, check=False)
    line = next((ln for ln in proc.stderr.splitlines() if re.match(r"isolation: \w+ \(", ln)), None)
    return line or f"matrix init did not measure: {proc.stderr.strip().splitlines()[-2:]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="xcompat-bench-jit-") as tmp:
        scratch = Path(tmp)
        for cache in (False, True):
            project = jit_project(scratch / ("cached" if cache else "uncached"), tests=opts.tests, cache=cache)
            names = list(MODES)
            times: dict[str, list[float]] = {name: [] for name in names}
            for round_ in range(opts.repeats):
                order = names[round_ % len(names):] + names[: round_ % len(names)]
                for name in order:
                    argv, extra = MODES[name]
                    times[name].append(_timed(project, argv, extra, scratch))
            plain = statistics.median(times["plain pytest"])
            print(f"\nnumba {'with' if cache else 'without'} cache=True, {opts.tests} tests in 1 file, "
                  f"median of {opts.repeats} rotated rounds:")
            for name in names:
                median = statistics.median(times[name])
                per_test = (median - plain) / opts.tests * 1000
                print(f"  {name:<48} {median:6.2f} s  {median / plain:5.2f}x plain pytest"
                      + (f"  ({per_test:+.0f} ms a test)" if name != "plain pytest" else ""))
            print(f"  xcompat matrix init: {_matrix_init(project)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
