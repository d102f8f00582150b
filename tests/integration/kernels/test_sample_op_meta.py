"""The sample's custom op has a Meta kernel (fake tensors, torch.compile, opcheck) and
refuses tensors on two devices: checked on the sample wheel xcompat builds (cached)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers.sample import install_sample

CODE = r"""
import json, torch, sample_ext
from sample_ext import _ops_loader
ops = _ops_loader.ops()
a = torch.empty(3, 5, device="meta"); b = torch.empty(3, 5, device="meta")
out = ops.scaled_add(a, b, 2.0)
keys = [k for k in ("CPU", "Meta", "CUDA")
        if torch._C._dispatch_has_kernel_for_dispatch_key("sample_ext::scaled_add", k)]
report = torch.library.opcheck(ops.scaled_add.default, (torch.randn(4, 3).t(), torch.randn(3, 4), 0.5),
                               test_utils=("test_schema", "test_faketensor"))
try:
    ops.scaled_add(torch.empty(2, device="meta"), torch.empty(3, device="meta"), 1.0)
    shape_error = None
except RuntimeError as exc:
    shape_error = str(exc).splitlines()[0]
print(json.dumps({"device": str(out.device), "shape": list(out.shape), "dtype": str(out.dtype), "keys": keys,
                  "opcheck": {k: str(v) for k, v in report.items()}, "shape_error": shape_error}))
"""


def test_sample_op_has_a_meta_kernel_that_checks_its_inputs() -> None:
    site = install_sample("v1")
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, env=env, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    assert doc["device"] == "meta" and doc["shape"] == [3, 5] and doc["dtype"] == "torch.float32"
    assert {"CPU", "Meta"} <= set(doc["keys"])
    assert doc["opcheck"] == {"test_schema": "SUCCESS", "test_faketensor": "SUCCESS"}
    assert doc["shape_error"] and "shapes differ" in doc["shape_error"]
