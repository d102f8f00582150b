"""``xcompat kernels operators --merge-into``: the operators checked on each device and added to a
kernels result, as the kernels stage does, with its refusals of what it cannot use.

Real commands on the sample wheel (1.0, right on every derived case); the kernels result it
merges into is a real ``xcompat kernels run`` result (one kernel, for time).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from xcompat.jsonio import validate

REPO = Path(__file__).resolve().parents[3]
SAMPLES = REPO / "examples" / "sample-ext" / ".xcompat" / "operators.py"


def _xcompat(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "xcompat", *(str(a) for a in args)], capture_output=True,
                          text=True, check=False, cwd=cwd, timeout=900)


@pytest.fixture()
def kernels_json(tmp_path: Path) -> Path:
    result = tmp_path / "kernels.json"
    run = _xcompat("kernels", "run", "--kernel", "add", "--json", result, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    return result


@pytest.mark.slow
def test_a_device_this_machine_lacks_is_said_and_the_cpu_result_is_merged(tmp_path, kernels_json,
                                                                          sample_wheels) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device: the lane is checked, not said to be missing")
    run = _xcompat("kernels", "operators", "--wheel", sample_wheels["v1"], "--samples", SAMPLES, "--device", "cpu",
                   "--device", "cuda", "--merge-into", kernels_json, "--cell-id", "c1", cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    doc = json.loads(kernels_json.read_text())
    validate("kernels", doc)
    section = doc["operators"]
    assert [d["device"] for d in section["devices"]] == ["cpu", "cuda"]
    assert [d["status"] for d in section["devices"]] == ["ran", "not_run"]
    assert section["status"] == "passed" and section["samples"] == ".xcompat/operators.py"
    assert section["summary"].startswith("project operators 1: 1 passed; not run on cuda (exit 5: device cuda")
    assert doc["summary"].startswith("runner kernels: ") and doc["status"] == "passed"
    assert section["devices"][0]["result"]["cell_id"] == "c1"


def test_without_a_kernels_result_it_says_which_file_and_what_to_run(tmp_path, sample_wheels) -> None:
    run = _xcompat("kernels", "operators", "--wheel", sample_wheels["v1"], "--merge-into", tmp_path / "none.json",
                   cwd=tmp_path)
    assert run.returncode == 2
    (line,) = [x for x in run.stderr.splitlines() if x.strip()]
    assert "none.json" in line and "no kernels result to add the operators to" in line
    assert "xcompat kernels run --json FILE" in line and "Traceback" not in run.stderr


@pytest.mark.parametrize(("extra", "said"), [
    (["--device", "cpu", "--device", "cuda"], "give --merge-into KERNELS_JSON to check on several"),
    (["--merge-into", "k.json", "--json", "o.json"], "--merge-into checks as the kernels stage does"),
])
def test_options_that_do_not_go_together_are_refused(tmp_path, extra, said) -> None:
    run = _xcompat("kernels", "operators", "--site", tmp_path, *extra, cwd=tmp_path)
    assert run.returncode == 2 and said in run.stderr and "Traceback" not in run.stderr


def test_a_wheel_that_is_not_there_is_refused_naming_it(tmp_path) -> None:
    run = _xcompat("kernels", "operators", "--wheel", tmp_path / "gone.whl", cwd=tmp_path)
    assert run.returncode == 2 and "gone.whl" in run.stderr and "no such wheel" in run.stderr


CRASHING = '''
import os
import signal

import torch

lib = torch.library.Library("pyops", "DEF")
lib.define("double(Tensor x) -> Tensor")
lib.define("fragile(Tensor x) -> Tensor")
lib.define("zfragile(Tensor x) -> Tensor")
lib.impl("double", lambda x: x * 2, "CompositeExplicitAutograd")


def fragile(x):
    if not x.is_contiguous():
        os.kill(os.getpid(), signal.SIGSEGV)
    return x + 1


lib.impl("fragile", fragile, "CompositeExplicitAutograd")
lib.impl("zfragile", lambda x: x + 1 if x.dim() else os.kill(os.getpid(), signal.SIGSEGV),
         "CompositeExplicitAutograd")
'''
CRASHING_SAMPLES = '''
import torch

SAMPLES = {name: (lambda: [(torch.randn(3, 4),)]) for name in ("pyops::double", "pyops::fragile", "pyops::zfragile")}
'''


@pytest.mark.slow
def test_an_operator_that_crashes_is_named_and_the_others_are_still_checked(tmp_path, kernels_json) -> None:
    site = tmp_path / "site"
    (site / "pyops").mkdir(parents=True)
    (site / "pyops" / "__init__.py").write_text(CRASHING)
    samples = tmp_path / "operators.py"
    samples.write_text(CRASHING_SAMPLES)
    run = _xcompat("kernels", "operators", "--site", site, "--samples", samples, "--merge-into", kernels_json,
                   cwd=tmp_path)
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    doc = json.loads(kernels_json.read_text())
    validate("kernels", doc)
    section = doc["operators"]
    crashes = [(f["operator"], f["case"]) for f in section["findings"] if f["check"] == "crashed"]
    # each crash in turn: the check ran again without the operator that crashed it
    assert crashes == [("pyops::fragile", "non-contiguous, float32"), ("pyops::zfragile", "float32, 0-dim")]
    assert all(f["gating"] and f["device"] == "cpu" for f in section["findings"] if f["check"] == "crashed")
    assert section["summary"].startswith(
        "project operators 3: 1 passed, 2 failed: pyops::fragile on cpu, crashed, non-contiguous, float32; "
        "pyops::zfragile on cpu, crashed, float32, 0-dim")
    (device,) = section["devices"]
    ops = {op["name"]: op for op in device["result"]["operators"]}
    assert ops["pyops::double"]["status"] == "passed"
    assert ops["pyops::fragile"]["reason"] == ops["pyops::zfragile"]["reason"] == (
        "not checked here: it crashed the checking process")
    assert section["counts"]["not_exercised"] == 0 and section["counts"]["failed"] == 2
