"""Per-test cost of isolation in ``xcompat test``, with torch imported by every test.

Compared in one run, on the same generated suite of small torch tests (a 4x4 matmul and
``torch.testing.assert_close`` each):

* in-process (``--isolate none``): no isolation, the floor;
* fork per test from the warm parent (``--isolate test``, the default);
* fork per test from a parent that did not warm torch (``--no-warm-torch``): what the
  warm-up buys;
* a fresh interpreter per test (``python -c "import torch; ..."``, and ``python -m pytest
  FILE::TEST``): the naive way.

The fork and in-process figures are the run loop's wall time divided by the number of
tests, measured by a conftest hook around ``pytest_runtestloop`` in the parent, so
interpreter start, warm-up and collection are excluded (they are paid once per run).
Goal: fork per test under 25 ms and at least 100x cheaper than a fresh interpreter.

    python benchmarks/isolation.py [--tests 120] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEST_BODY = """
    a = torch.arange(16, dtype=torch.float32).reshape(4, 4) + {i}
    torch.testing.assert_close(a @ torch.eye(4), a)
"""
CONFTEST = """
import json, os, time
import pytest


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session):
    start = time.perf_counter()
    try:
        return (yield)
    finally:
        if os.getpid() == PARENT:
            with open(os.environ["BENCH_OUT"], "w") as fh:
                json.dump({"loop_s": time.perf_counter() - start, "n": len(session.items)}, fh)


PARENT = os.getpid()
"""


def write_suite(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "conftest.py").write_text(CONFTEST)
    lines = ["import torch", ""]
    for i in range(n):
        lines.append(f"def test_{i}():" + TEST_BODY.format(i=i))
    (folder / "test_bench.py").write_text("\n".join(lines))
    return folder


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(REPO / "src") + os.pathsep + e.get("PYTHONPATH", "")
    return e


def loop_per_test(suite: Path, extra: list[str], repeats: int) -> float:
    """Median per-test seconds of the run loop under ``xcompat test EXTRA``."""
    samples = []
    for _ in range(repeats):
        out = suite / "bench.json"
        cmd = [
            sys.executable,
            "-m",
            "xcompat",
            "test",
            str(suite),
            "--timeout",
            "120",
            *extra,
            "--",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:hypothesispytest",
        ]
        proc = subprocess.run(
            cmd, env={**env(), "BENCH_OUT": str(out)}, capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise SystemExit(f"run failed ({' '.join(extra)}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        data = json.loads(out.read_text())
        samples.append(data["loop_s"] / data["n"])
    return statistics.median(samples)


def fresh_interpreter(repeats: int) -> float:
    code = "import torch\n" + "def t():" + TEST_BODY.format(i=0) + "t()\n"
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=env())
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def fresh_pytest(suite: Path, repeats: int) -> float:
    samples = []
    for i in range(repeats):
        start = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                f"{suite}/test_bench.py::test_{i}",
            ],
            check=True,
            env={**env(), "BENCH_OUT": str(suite / "fresh.json")},
            capture_output=True,
            cwd=suite,
        )
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=120)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="xcompat-bench-isolation-") as tmp:
        suite = write_suite(Path(tmp) / "suite", args.tests)
        small = write_suite(Path(tmp) / "small", 10)
        inproc = loop_per_test(suite, ["--isolate", "none"], args.repeats)
        fork = loop_per_test(suite, ["--isolate", "test"], args.repeats)
        cold = loop_per_test(small, ["--isolate", "test", "--no-warm-torch"], 1)
        fresh = fresh_interpreter(max(args.repeats, 3))
        fresh_pt = fresh_pytest(small, max(args.repeats, 3))
    overhead = fork - inproc
    rows = [
        ("in-process (--isolate none)", inproc),
        ("fork per test, warm parent", fork),
        ("fork per test, parent not warmed", cold),
        ("fresh interpreter (python -c)", fresh),
        ("fresh pytest per test", fresh_pt),
    ]
    print(f"per-test wall time, {args.tests} small torch tests, median of {args.repeats} runs")
    for name, value in rows:
        print(f"  {name:34s} {value * 1000:9.1f} ms")
    print(f"isolation overhead (fork - in-process): {overhead * 1000:.1f} ms per test (goal < 25 ms)")
    print(f"ratio fresh interpreter / fork:         {fresh / fork:.0f}x (goal >= 100x)")
    print(f"ratio fresh pytest / fork:              {fresh_pt / fork:.0f}x")
    print(f"ratio unwarmed fork / warm fork:        {cold / fork:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
