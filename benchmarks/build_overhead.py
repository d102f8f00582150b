"""xcompat's overhead on a native build of the sample project.

Measures, in one run and alternating the order each round, on fresh copies of
examples/sample-ext:

  xcompat    ``xcompat build --backend native`` (build, auditwheel repair with the default
             excludes, auditwheel show, policy-symbol scan, abi3audit, CUDA arch scan, build.json)
  by hand    ``python -m build --wheel --no-isolation`` + ``auditwheel repair`` with the same excludes

and prints the median wall time of each, the ratio, and xcompat's own share (its audits and
bookkeeping). Target: overhead under 5 %.

    python benchmarks/build_overhead.py [--rounds 3] [--no-cuda]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "examples" / "sample-ext"
sys.path.insert(0, str(REPO / "src"))

from xcompat.builder.defaults import default_excludes
from xcompat.builder.tools import tool_env


def fresh_copy(root: Path, name: str) -> Path:
    dest = root / name
    shutil.copytree(SAMPLE, dest, ignore=shutil.ignore_patterns("build", "*.egg-info", "tests", ".xcompat"))
    return dest


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def by_xcompat(root: Path, env: dict[str, str], index: int) -> tuple[float, dict]:
    project = fresh_copy(root, f"x{index}")
    out = root / f"x{index}-out"
    seconds = run([sys.executable, "-m", "xcompat", "build", str(project), "--backend", "native", "--out", str(out),
                   "--no-ccache"], root, env)
    record = json.loads((out / "build.json").read_text())
    return seconds, record


def by_hand(root: Path, env: dict[str, str], index: int) -> tuple[float, float]:
    """Seconds for build + repair, and for the same audits run by hand afterwards
    (``auditwheel show --json`` and ``abi3audit`` on the abi3 modules, one after the other)."""
    project = fresh_copy(root, f"h{index}")
    raw, fixed = root / f"h{index}-raw", root / f"h{index}-out"
    start = time.perf_counter()
    run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(raw), str(project)], project, env)
    wheel = next(raw.glob("*.whl"))
    argv = ["auditwheel", "repair", "-w", str(fixed)]
    for pattern in default_excludes():
        argv += ["--exclude", pattern]
    run([*argv, str(wheel)], project, env)
    built = time.perf_counter() - start
    repaired = next(fixed.glob("*.whl"))
    start = time.perf_counter()
    run(["auditwheel", "show", "--json", str(repaired)], project, env)
    unpacked = root / f"h{index}-unpacked"
    shutil.unpack_archive(repaired, unpacked, format="zip")
    modules = [str(p) for p in unpacked.rglob("*.abi3.so")]
    subprocess.run(["abi3audit", "--report", "--assume-minimum-abi3", "3.10", *modules], cwd=project, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return built, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-cuda", action="store_true", help="build without the nvcc part (SAMPLE_EXT_CUDA=0)")
    args = parser.parse_args()
    env = tool_env(None, {"CI": "", "GITHUB_ACTIONS": "", "XCOMPAT_NO_CCACHE": "1"})
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    if args.no_cuda:
        env["SAMPLE_EXT_CUDA"] = "0"
    xc: list[float] = []
    hand: list[float] = []
    hand_audits: list[float] = []
    audits: list[float] = []
    own: list[float] = []  # wall time of xcompat minus its build and repair subprocesses
    with tempfile.TemporaryDirectory(prefix="xcompat-bench-build-") as tmp:
        root = Path(tmp)
        for i in range(args.rounds):
            order = ("x", "h") if i % 2 == 0 else ("h", "x")
            for which in order:
                if which == "x":
                    seconds, record = by_xcompat(root, env, i)
                    xc.append(seconds)
                    audits.append(sum(w["audit_seconds"] for w in record["wheels"]))
                    tools = sum(w["build_seconds"] + w["repair_seconds"] for w in record["wheels"])
                    own.append(seconds - tools)
                else:
                    built, audited = by_hand(root, env, i)
                    hand.append(built)
                    hand_audits.append(audited)
            print(f"round {i + 1}: xcompat {xc[-1]:.2f}s (audits {audits[-1]:.2f}s), by hand {hand[-1]:.2f}s "
                  f"+ audits by hand {hand_audits[-1]:.2f}s", flush=True)
    mx, mh, ma = statistics.median(xc), statistics.median(hand), statistics.median(audits)
    mha = statistics.median(h + a for h, a in zip(hand, hand_audits))
    print(f"native build of examples/sample-ext, {args.rounds} rounds, medians:")
    print(f"  xcompat build --backend native          {mx:8.2f} s  (its audits: {ma:.2f} s)")
    print(f"  python -m build + auditwheel repair     {mh:8.2f} s")
    print(f"  ... + auditwheel show + abi3audit       {mha:8.2f} s")
    print(f"  ratio xcompat / build+repair            {mx / mh:8.3f}  (overhead {100 * (mx - mh) / mh:+.1f} %)")
    print(f"  ratio xcompat / same work by hand       {mx / mha:8.3f}  (overhead {100 * (mx - mha) / mha:+.1f} %)")
    print(f"  xcompat without its audits / by hand    {(mx - ma) / mh:8.3f}  "
          f"(orchestration overhead {100 * (mx - ma - mh) / mh:+.1f} %)")
    # The wall-clock ratios above carry the noise of two full compiles; this one does not:
    # the time xcompat spends outside the build and repair tools, measured inside one run.
    mo = statistics.median(own)
    print(f"  xcompat's own time (audits, start-up, record), same run: {mo:.2f} s = "
          f"{100 * mo / mh:.1f} % of build+repair by hand ({100 * (mo - ma) / mh:.1f} % without the audits)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
