"""``xcompat kernels operators`` on real builds, on the CPU: the sample project and a planted bug."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.operators import SAMPLES as PLANTED_SAMPLES
from tests.helpers.operators import planted_site

from xcompat.jsonio import validate

REPO = Path(__file__).resolve().parents[3]
SAMPLE_SAMPLES = REPO / "examples" / "sample-ext" / ".xcompat" / "operators.py"


def _cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "xcompat", "kernels", "operators", *map(str, args)],
                          capture_output=True, text=True, timeout=600, check=False, cwd=cwd)


def _ops(doc: dict) -> dict[str, dict]:
    return {op["name"]: op for op in doc["operators"]}


@pytest.mark.slow
def test_the_sample_projects_operator_passes_with_its_declared_samples(sample_site, tmp_path: Path) -> None:
    out = tmp_path / "operators.json"
    proc = _cli("--site", sample_site["v1"], "--samples", SAMPLE_SAMPLES, "--cell-id", "c1", "--json", out)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    validate("operators", doc)
    assert doc["status"] == "passed" and doc["summary"] == "project operators 1: 1 passed" and doc["cell_id"] == "c1"
    op = _ops(doc)["sample_ext::scaled_add"]
    assert op["samples"] == "declared" and {"CPU", "Meta"} <= set(op["dispatch_keys"])
    assert op["dtypes"] == ["float32"]
    checks = {c["name"]: c["status"] for c in op["checks"]}
    assert checks["opcheck"] == checks["result"] == checks["determinism"] == "passed"
    names = {c["name"] for c in op["cases"] if c["status"] == "passed"}
    assert {"non-contiguous, float32 (sample 1)", "channels-last, float32 (sample 2)",
            "float32, NaN, Inf and -0.0 (sample 1)", "float32, empty batch (sample 2)"} <= names


@pytest.mark.slow
def test_without_samples_the_schema_gives_inputs_and_the_default_file_is_found(sample_site, tmp_path: Path) -> None:
    proc = _cli("--site", sample_site["v1"], "--json", "-", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    op = _ops(doc)["sample_ext::scaled_add"]
    assert op["samples"] == "schema" and op["status"] == "passed"
    assert doc["summary"] == "project operators 1: 1 passed (1 on inputs from its schema only)"
    (tmp_path / ".xcompat").mkdir()
    (tmp_path / ".xcompat" / "operators.py").write_text(SAMPLE_SAMPLES.read_text())
    proc = _cli("--site", sample_site["v1"], "--json", "-", cwd=tmp_path)
    assert _ops(json.loads(proc.stdout))["sample_ext::scaled_add"]["samples"] == "declared"


@pytest.mark.slow
def test_a_kernel_that_ignores_strides_is_named_with_its_derived_case(tmp_path: Path) -> None:
    out = tmp_path / "operators.json"
    proc = _cli("--site", planted_site(), "--samples", PLANTED_SAMPLES, "--json", out)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(out.read_text())
    validate("operators", doc)
    assert doc["status"] == "failed"
    assert doc["summary"] == ("project operators 3: 1 passed, 1 failed, 1 not exercised: "
                              "planted::scale on cpu, non-contiguous, float32")
    assert "planted::scale on cpu, non-contiguous, float32" in proc.stderr
    ops = _ops(doc)
    result = next(c for c in ops["planted::scale"]["checks"] if c["name"] == "result")
    assert result["status"] == "failed" and result["detail"].startswith("non-contiguous, float32: largest error ")
    failed = {c["name"] for c in ops["planted::scale"]["cases"] if c["status"] == "failed"}
    assert "transposed, float32" in failed and "float32" not in failed
    assert ops["planted::shift"]["status"] == "passed"
    unsampled = ops["planted::unsampled"]
    assert unsampled["status"] == "not_exercised" and unsampled["samples"] == "none"
    assert unsampled["dispatch_keys"] == [] and "no declared samples" in unsampled["reason"]


@pytest.mark.slow
def test_a_raising_samples_function_is_a_one_line_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "operators.py"
    bad.write_text("def f():\n    raise ValueError('forgot the shapes')\nSAMPLES = {'planted::scale': f}\n")
    proc = _cli("--site", planted_site(), "--samples", bad)
    assert proc.returncode == 2
    assert f"{bad}: the samples function of planted::scale raised ValueError: forgot the shapes" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.device
@pytest.mark.cuda
@pytest.mark.slow
def test_on_cuda_the_sample_matches_and_refuses_mixed_devices(sample_site, tmp_path: Path) -> None:
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device here")
    proc = _cli("--site", sample_site["v1"], "--samples", SAMPLE_SAMPLES, "--device", "cuda", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    op = _ops(json.loads(proc.stdout))["sample_ext::scaled_add"]
    checks = {c["name"]: c["status"] for c in op["checks"]}
    assert checks["mixed_device"] == checks["result"] == "passed", op["checks"]


@pytest.mark.slow
def test_a_device_this_torch_cannot_use_exits_5(sample_site) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    proc = _cli("--site", sample_site["v1"], "--device", "cuda")
    assert proc.returncode == 5
    assert "device cuda is not available with torch" in proc.stderr
