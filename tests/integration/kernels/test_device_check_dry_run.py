"""``make device-check`` on a machine without a GPU: exits 0, says there is no GPU, writes a
valid JSON document and a log per step it ran. On a GPU machine the same script runs the
GPU steps; this test then only checks that it ran within its budget and wrote its JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from xcompat.jsonio import validate

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "tools" / "device_check.py"


def test_device_check_dry_run_without_a_gpu_exits_cleanly_with_json(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "DEVICE_CHECK_BUDGET_S": "120"}
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, env=env, timeout=240,
                          check=False, cwd=REPO)
    doc = json.loads((out / "device-check.json").read_text(encoding="utf-8"))
    validate("device-check", doc)
    names = [s["name"] for s in doc["steps"]]
    assert names == ["environment", "probe", "kernels_cold", "kernels_warm", "device_tests", "isolation",
                     "sanitizer_oob"]
    for step in doc["steps"]:
        if step["log"]:
            assert (out / step["log"]).is_file(), step
    assert doc["duration_s"] <= doc["budget_s"]
    if doc["gpu"]["present"]:
        assert proc.returncode in (0, 1) and doc["status"] in ("passed", "failed")
        return
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert doc["status"] == "skipped" and doc["summary"].startswith("no GPU")
    assert "Traceback" not in proc.stderr
    steps = {s["name"]: s for s in doc["steps"]}
    assert steps["probe"]["status"] == "passed" and (out / "probe.json").is_file()
    for name in ("kernels_cold", "kernels_warm", "device_tests", "isolation", "sanitizer_oob"):
        assert steps[name]["status"] == "skipped" and steps[name]["reason"].startswith("no GPU"), steps[name]
    assert "no GPU" in proc.stdout
