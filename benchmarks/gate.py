"""Release gate over a large matrix: whole-process time of `xcompat gate`.

A 1,000-cell plan with a build and a test result per cell (2,000 result files, nested like
downloaded artifacts), judged with --require-kind build --require-kind test. Measured beside, in
the same run and on the same files:

* `jq -s` reading every result and counting the passing cells per id (the shell one-liner a
  workflow would otherwise carry: no plan, no envelope checks, no reasons);
* a bare Python process that only json-loads every file (the floor of any Python gate).

Prints the median of several runs for each and the ratios.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CELLS = 1000
RUNS = 5


def make_fixture(root: Path) -> None:
    cells = [{"id": f"py3.12-linux-x86_64-cpu-torch2.{i}", "required": True, "backend": "cpu"} for i in range(CELLS)]
    (root / "plan.json").write_text(json.dumps({"version": 1, "cells": cells}))
    for cell in cells:
        folder = root / "results" / f"xcompat-results-{cell['id']}" / cell["id"]
        folder.mkdir(parents=True)
        for kind in ("build", "test"):
            (folder / f"{kind}.json").write_text(json.dumps({
                "version": 1, "kind": kind, "cell_id": cell["id"], "status": "passed",
                "summary": f"{kind} passed", "details": {"tests": 120, "seconds": 31.5},
            }))


def median_seconds(cmd: list[str], cwd: Path, *, shell: bool = False) -> float:
    samples = []
    for _ in range(RUNS):
        start = time.perf_counter()
        proc = subprocess.run(cmd if not shell else " ".join(cmd), cwd=cwd, shell=shell,
                              capture_output=True, text=True, check=False)
        samples.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {proc.stderr[-500:]}")
    return statistics.median(samples)


def main() -> int:
    root = Path(tempfile.mkdtemp(prefix="xcompat-gate-bench-"))
    try:
        make_fixture(root)
        gate = median_seconds([sys.executable, "-m", "xcompat", "gate", "--plan", "plan.json", "--results", "results",
                               "--require-kind", "build", "--require-kind", "test", "--out", "gate.json"], root)
        decision = json.loads((root / "gate.json").read_text())
        assert decision["allowed"] and len(decision["checks"]) == CELLS, "the gate did not judge every cell"
        floor = median_seconds([sys.executable, "-c",
                                "import json,pathlib;[json.loads(p.read_text()) for p in pathlib.Path('results').rglob('*.json')]"],
                               root)
        print(f"cells: {CELLS}, result files: {2 * CELLS}, runs: {RUNS} (median)")
        print(f"xcompat gate (whole process):        {gate * 1000:8.1f} ms")
        print(f"python json-load floor (no checks):  {floor * 1000:8.1f} ms   gate/floor = {gate / floor:5.2f}x")
        if shutil.which("jq"):
            script = ("find results -name '*.json' -print0 | xargs -0 jq -s "
                      "'map(select(.status==\"passed\")) | group_by(.cell_id) | length'")
            jq = median_seconds([script], root, shell=True)
            print(f"jq -s count of passing cells:        {jq * 1000:8.1f} ms   gate/jq    = {gate / jq:5.2f}x")
        else:
            print("jq not installed: that comparison is skipped")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
