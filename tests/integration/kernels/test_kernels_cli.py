"""``xcompat kernels run`` through the real CLI, with CUDA, ROCm and MPS absent."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.kernels import ROOT, run_cli, subprocess_env

from xcompat.devices import available_backends

pytestmark = pytest.mark.skipif("cuda" in available_backends(), reason="these tests describe a machine without CUDA")


def test_requested_cuda_without_cuda_exits_5_with_the_reason(kernels_lib: Any, tmp_path: Path) -> None:
    from xcompat.jsonio import read_json

    out = tmp_path / "kernels.json"
    proc = run_cli(["kernels", "run", "--backend", "cuda", "--json", str(out), "--cell-id", "linux-cuda-py311"])
    assert proc.returncode == 5
    assert "backend 'cuda' was requested but is not available" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    # the lane that could not run still has a result, for the report
    doc = read_json(out, schema="kernels")
    assert doc["status"] == "failed" and doc["backend_used"] is None and doc["build"] is None
    assert doc["unavailable"]["exit_code"] == 5 and "not available" in doc["unavailable"]["message"]
    assert doc["cell_id"] == "linux-cuda-py311" and doc["fallback"]["missing_required"] == ["cuda"]
    assert doc["fallback"]["steps"][0]["backend"] == "cuda" and doc["fallback"]["steps"][0]["available"] is False


def test_required_cuda_lane_on_cpu_is_a_fallback_not_a_pass(kernels_lib: Any, tmp_path: Path) -> None:
    from xcompat.jsonio import read_json

    out = tmp_path / "kernels.json"
    proc = run_cli(["kernels", "run", "--required-backend", "cuda", "--kernel", "add", "--no-opcheck",
                    "--json", str(out), "--cell-id", "linux-cuda-py311"])
    assert proc.returncode == 1, proc.stderr
    doc = read_json(out, schema="kernels")
    assert doc["status"] == "fallback" and doc["backend_used"] == "cpu" and doc["backend_requested"] == "auto"
    assert doc["cell_id"] == "linux-cuda-py311"
    assert doc["fallback"]["missing_required"] == ["cuda"]
    steps = {s["backend"]: s for s in doc["fallback"]["steps"]}
    assert steps["cuda"]["taken"] is False and "CUDA" in steps["cuda"]["reason"]
    assert steps["cpu"]["taken"] is True
    assert "not a pass" in proc.stderr


def test_forced_isa_is_used_and_reported(kernels_lib: Any) -> None:
    proc = run_cli(["kernels", "run", "--backend", "cpu", "--kernel", "exp", "--no-opcheck", "--json", "-"],
                   env=subprocess_env(XCOMPAT_KERNELS_ISA="scalar"))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["isa"]["selected"] == "scalar" and doc["isa"]["source"] == "env"
    assert {c["isa"] for c in doc["kernels"][0]["cases"]} == {"scalar"}


def test_forced_isa_the_cpu_cannot_run_is_refused(kernels_lib: Any) -> None:
    value = "neon" if os.uname().machine == "x86_64" else "avx2"
    proc = run_cli(["kernels", "run", "--backend", "cpu", "--kernel", "add", "--no-opcheck"],
                   env=subprocess_env(XCOMPAT_KERNELS_ISA=value))
    assert proc.returncode == 5
    assert f"XCOMPAT_KERNELS_ISA={value}" in proc.stderr and "Traceback" not in proc.stderr


def test_bad_order_is_a_usage_error(kernels_lib: Any) -> None:
    proc = run_cli(["kernels", "run", "--order", "cuda,tpu"])
    assert proc.returncode == 2 and "tpu" in proc.stderr


def test_check_gpu_script_without_a_gpu_exits_5() -> None:
    import subprocess

    proc = subprocess.run(["bash", str(ROOT / "kernels" / "check_gpu.sh"), "/tmp/xcompat-check-gpu-test"],
                          capture_output=True, text=True, env=subprocess_env(), timeout=120, check=False)
    assert proc.returncode == 5 and "no CUDA or ROCm device" in proc.stderr
