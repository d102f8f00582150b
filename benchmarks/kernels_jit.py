"""JIT build cost of the conformance kernel set, against a plain ``load_inline`` of one op.

Measured in the same run, each in a fresh interpreter (torch registers an operator
library once per process):

* cold build of the whole kernel set (all CPU paths + torch glue, one extension) into an
  empty cache folder, and the warm load of that cached build;
* ``torch.utils.cpp_extension.load_inline`` of ONE trivial CPU op (the usual way of
  JIT-building a torch extension, including ``<torch/extension.h>``), cold and warm.

Times are taken inside the child around the build/load call (``import torch`` excluded),
plus the whole child's wall time. Goals: warm load of the set < 0.5 s; cold CPU build of
the set < 60 s on 2 cores.

Usage: python benchmarks/kernels_jit.py [--warm-repeat N] [--jobs N]
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

SET_CHILD = """
import json, time, torch
from xcompat.kernels.build import load_kernels
t = time.perf_counter()
r = load_kernels(with_device=False)
print(json.dumps({"seconds": time.perf_counter() - t, "cached": r.cached}))
"""

INLINE_CHILD = """
import json, sys, time, torch
from torch.utils.cpp_extension import load_inline
src = "torch::Tensor twice(torch::Tensor x) { return x * 2; }"
t = time.perf_counter()
m = load_inline(name="xcompat_bench_inline", cpp_sources=[src], functions=["twice"],
                build_directory=sys.argv[1], verbose=False)
assert float(m.twice(torch.ones(1))[0]) == 2.0
print(json.dumps({"seconds": time.perf_counter() - t}))
"""


def child(code: str, args: list[str], env: dict[str, str]) -> tuple[dict, float]:
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit(f"benchmark child failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1]), wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--warm-repeat", type=int, default=5)
    parser.add_argument("--jobs", default="2", help="MAX_JOBS for both builds (default 2)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="xcompat-bench-") as tmp:
        env = dict(os.environ, XCOMPAT_CACHE=os.path.join(tmp, "cache"), MAX_JOBS=args.jobs)
        env.pop("XCOMPAT_KERNELS_ISA", None)
        inline_dir = os.path.join(tmp, "inline")
        os.makedirs(inline_dir)

        set_cold, set_cold_wall = child(SET_CHILD, [], env)
        assert not set_cold["cached"]
        set_warm = [child(SET_CHILD, [], env) for _ in range(args.warm_repeat)]
        assert all(r["cached"] for r, _ in set_warm)
        inline_cold, inline_cold_wall = child(INLINE_CHILD, [inline_dir], env)
        inline_warm = [child(INLINE_CHILD, [inline_dir], env) for _ in range(args.warm_repeat)]

    sw = statistics.median(r["seconds"] for r, _ in set_warm)
    sw_wall = statistics.median(w for _, w in set_warm)
    iw = statistics.median(r["seconds"] for r, _ in inline_warm)
    iw_wall = statistics.median(w for _, w in inline_warm)
    print(f"machine: {os.cpu_count()} CPUs, MAX_JOBS={args.jobs}, warm = median of {args.warm_repeat}")
    print(f"{'':42} {'build/load':>11} {'process':>9}")
    print(f"{'kernel set, cold build (7 kernels, 4 ISA paths)':42} {set_cold['seconds']:10.2f}s {set_cold_wall:8.2f}s")
    print(f"{'kernel set, warm (cached) load':42} {sw:10.3f}s {sw_wall:8.2f}s")
    print(f"{'load_inline 1 trivial op, cold':42} {inline_cold['seconds']:10.2f}s {inline_cold_wall:8.2f}s")
    print(f"{'load_inline 1 trivial op, warm':42} {iw:10.3f}s {iw_wall:8.2f}s")
    print(f"ratio cold: kernel set / one load_inline op = {set_cold['seconds'] / inline_cold['seconds']:.2f}x")
    print(f"ratio warm: kernel set / one load_inline op = {sw / iw:.2f}x")
    print(f"goals: warm set < 0.5 s: {'met' if sw < 0.5 else 'MISSED'}; "
          f"cold set < 60 s: {'met' if set_cold['seconds'] < 60 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
