"""CUDA host code: nvcc passes --coverage to the host compiler; gcov sees the host side of a
.cu file (device code has no gcov data). Runs without a GPU: no kernel is launched."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from tests.helpers.coverage import run_xcompat

from xcompat.jsonio import validate

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) is not installed")

KERNEL = """\
#include <cstdio>
__global__ void scale(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}

static int blocks_for(int n) {
    if (n <= 0)
        return 0;
    return (n + 255) / 256;
}

int main(int argc, char **argv) {
    int n = 1000;
    printf("%d\\n", blocks_for(n));
    if (argc > 3) {
        scale<<<blocks_for(n), 256>>>(nullptr, 2.0f, n);
    }
    return 0;
}
"""


def test_cuda_host_lines_are_reported_as_cuda(tmp_path):
    project = tmp_path / "proj"
    (project / "csrc").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "cu"\nversion = "0"\n')
    (project / "csrc" / "scale.cu").write_text(KERNEL)
    build = project / "build"
    build.mkdir()
    subprocess.run(
        ["nvcc", "-O0", "-Xcompiler", "--coverage", "-c", "csrc/scale.cu", "-o", "build/scale.o"],
        cwd=project,
        check=True,
        capture_output=True,
    )
    subprocess.run(
        ["nvcc", "-Xcompiler", "--coverage", "build/scale.o", "-o", "build/scale", "-lgcov"],
        cwd=project,
        check=True,
        capture_output=True,
    )
    subprocess.run([str(build / "scale")], check=True, capture_output=True)
    out = tmp_path / "cell.json"
    proc = run_xcompat(
        "coverage",
        "collect",
        "--cell-id",
        "cuda-host",
        "--gcov-root",
        str(build),
        "--source-root",
        str(project),
        "--out",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    validate("coverage-cell", doc)
    assert list(doc["files"]) == ["csrc/scale.cu"]  # CUDA headers and nvcc's stub are left out
    rec = doc["files"]["csrc/scale.cu"]
    assert rec["language"] == "cuda"
    hits = dict(zip(rec["lines"], rec["hits"]))
    lines = KERNEL.splitlines()
    ret0 = lines.index("        return 0;") + 1
    launch = next(i for i, t in enumerate(lines, 1) if "<<<" in t)
    body = next(i for i, t in enumerate(lines, 1) if "return (n + 255) / 256;" in t)
    assert hits[body] >= 1 and hits[ret0] == 0 and hits[launch] == 0
    merged = tmp_path / "merged"
    proc = run_xcompat("coverage", "merge", str(out), "--repo", str(project), "--out-dir", str(merged))
    assert proc.returncode == 0, proc.stderr
    report = json.loads((merged / "coverage.json").read_text())
    assert 0 < report["languages"]["cuda"]["percent"] < 100
    assert "| CUDA host |" in (merged / "coverage.md").read_text()
