"""The kernels stage on a released PyPI project that registers torch operators: torch_scatter 2.1.2
(``torch::RegisterOperators``: 15 ``torch_scatter::`` operators and ``cuda_version``), built here
from its sdist for the CPU, with the samples its maintainer would declare
(tests/real/data/torch_scatter/operators.py as its ``.xcompat/operators.py``).

``xcompat stage kernels`` runs as a CPU cell's CI job runs it: the runner's conformance kernels
(cut to one by the matrix, for time), then ``xcompat kernels operators --merge-into`` on the
wheel. What it finds is checked finding by finding, and all of them: each is a real behaviour
of the release, shown by the standalone reproduction beside it (the ``REPRODUCE`` scripts, run
here too).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.real_projects import RealProject, _locked, _run, cache_root, source_tree

from xcompat.jsonio import validate

pytestmark = [pytest.mark.slow, pytest.mark.network]

DATA = Path(__file__).resolve().parent / "data" / "torch_scatter"
# the sdist names its files torch_scatter-VERSION (the index lists them so)
PROJECT = RealProject(name="torch_scatter", import_name="torch_scatter", version="2.1.2", previous="2.1.1",
                      tests="test", in_package=False, extension="torch_scatter._scatter_cpu",
                      native_source="csrc/scatter.cpp", min_tests=0, torch=True)
MATRIX = """\
xcompat: 1
repo: pypi/torch-scatter
serial: 1
python: ["{python}"]
platforms:
  linux:
    archs: [x86_64]
backends:
  cpu:
    required: true
tests:
  kernels: [add]
"""


def built_cpu_wheel(scratch: Path) -> Path:
    """torch_scatter built for the CPU against the installed torch (its setup.py imports torch),
    two compile jobs; cached."""
    folder = cache_root() / "wheels" / f"{PROJECT.name}-{PROJECT.version}-cpu"
    with _locked(f"wheel-{PROJECT.name}-{PROJECT.version}-cpu"):
        wheels = sorted(folder.glob("*.whl"))
        if not wheels:
            tree = source_tree(PROJECT, PROJECT.version, scratch)
            env = {**os.environ, "FORCE_ONLY_CPU": "1", "MAX_JOBS": "2"}
            _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                  "--disable-pip-version-check", "-w", str(scratch / "out"), str(tree)],
                 f"building {PROJECT.name} {PROJECT.version}", env=env, timeout=1800)
            folder.mkdir(parents=True, exist_ok=True)
            for wheel in (scratch / "out").glob("*.whl"):
                shutil.move(str(wheel), folder / wheel.name)
            wheels = sorted(folder.glob("*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> tuple[int, dict, str]:
    """``xcompat stage kernels`` on the release, for the cell of this Python: its exit code, the
    kernels result and what it said."""
    root = tmp_path_factory.mktemp("torch_scatter")
    wheel = built_cpu_wheel(root / "build")
    tree = source_tree(PROJECT, PROJECT.version, root / "project")
    # Its setup.py imports torch (torch.utils.cpp_extension) yet declares no build requirement:
    # xcompat reads a project's use of torch from its declared requirements, so the stage would be
    # skipped ("does not use torch"). The maintainer declares what the build imports (PEP 518).
    assert not (tree / "pyproject.toml").exists()
    (tree / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools", "wheel", "torch"]\n'
                                         'build-backend = "setuptools.build_meta"\n')
    (tree / ".xcompat").mkdir()
    shutil.copy(DATA / "operators.py", tree / ".xcompat" / "operators.py")
    out = root / "out"
    (out / "wheelhouse").mkdir(parents=True)
    shutil.copy(wheel, out / "wheelhouse" / wheel.name)
    python = "{}.{}".format(*sys.version_info[:2])
    (out / "matrix.yml").write_text(MATRIX.format(python=python))
    subprocess.run([sys.executable, "-m", "xcompat", "matrix", "plan", str(out / "matrix.yml"), "--format", "json",
                    "-o", str(out / "plan.json")], check=True, capture_output=True)
    cell = json.loads((out / "plan.json").read_text())["cells"][0]["id"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI", "PYTEST_", "XCOMPAT_TIER"))}
    proc = subprocess.run(
        [sys.executable, "-m", "xcompat", "stage", "kernels", "--project-dir", str(tree), "--output-dir", str(out),
         "--cell", cell, "--install-wheel", "false"],
        capture_output=True, text=True, check=False, timeout=1800, cwd=root, env=env)
    result = out / "results" / cell / "kernels.json"
    assert result.is_file(), proc.stdout[-3000:] + proc.stderr[-3000:]
    document = json.loads(result.read_text())
    validate("kernels", document)
    return proc.returncode, document, proc.stdout + proc.stderr


# The release's bugs and limits the checks find, each reproduced here without xcompat: the
# wheel installed (pip --target) and plain torch calls.
# 1. A 0-dim src and index make the scatter and COO segment kernels read out of bounds: the
#    process dies with SIGSEGV instead of raising (torch's own scatter_add_ takes 0-dim tensors).
REPRODUCE_ZERO_DIM = """
import sys, torch, torch_scatter
ops = torch.ops.torch_scatter
name = sys.argv[1]
if name.endswith("_coo"):
    getattr(ops, name)(torch.tensor(0.5), torch.tensor(0), None, 4)
else:
    getattr(ops, name)(torch.tensor(0.5), torch.tensor(0), -1, None, None)
print("returned")
"""
# 2. gather_csr of a src with no columns returns shape (0, 0): its CPU kernel sizes the output
#    from src.numel() (csrc/cpu/segment_csr_cpu.cpp, gather_csr_cpu) instead of indptr[-1].
REPRODUCE_GATHER_CSR = """
import torch, torch_scatter
ops = torch.ops.torch_scatter
indptr = torch.tensor([0, 2, 2, 5])
print(tuple(ops.gather_csr(torch.zeros(3, 0), indptr, None).shape), tuple(ops.gather_csr(torch.zeros(3, 4), indptr, None).shape))
"""
# 3. The operators are registered as one catch-all (CompositeImplicitAutograd) kernel whose
#    autograd Function reads tensor data, with no fake/Meta kernel: torch.compile with dynamic
#    shapes cannot trace them (opcheck's test_aot_dispatch_dynamic).
REPRODUCE_COMPILE = """
import torch, torch_scatter
ops = torch.ops.torch_scatter
f = torch.compile(lambda s, p: ops.segment_sum_csr(s, p, None), dynamic=True, backend="aot_eager", fullgraph=True)
try:
    f(torch.randn(5, 4), torch.tensor([0, 2, 2, 5]))
except Exception as exc:
    print("refused:", type(exc).__name__)
else:
    print("compiled")
"""
SCATTER = {f"torch_scatter::scatter_{r}" for r in ("sum", "mul", "mean", "min", "max")}
COO = {f"torch_scatter::segment_{r}_coo" for r in ("sum", "mean", "min", "max")}
CSR = {f"torch_scatter::segment_{r}_csr" for r in ("sum", "mean", "min", "max")}
GATHER = {"torch_scatter::gather_csr", "torch_scatter::gather_coo"}


def reproduce(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    from tests.helpers.real_projects import installed

    site = installed(built_cpu_wheel(cache_root() / "scratch" / "torch_scatter-cpu"))
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, check=False,
                          env=env, timeout=300)


def test_the_stage_finds_each_crash_and_every_other_finding_in_one_run(checked) -> None:
    code, doc, said = checked
    assert code == 1, said[-3000:]
    assert doc["counts"]["failed_cases"] == 0  # the runner's kernels passed
    section = doc["operators"]
    assert section["status"] == "failed" and section["setting"] == "gate"
    assert all(f["gating"] and f["device"] == "cpu" and f["operator"] for f in section["findings"])
    # 1. every scatter and COO segment operator crashes the check on 0-dim input, and only there;
    #    each was set aside and the others checked without it
    crashed = {f["operator"]: f["case"] for f in section["findings"] if f["check"] == "crashed"}
    assert set(crashed) == SCATTER | COO, crashed
    assert set(crashed.values()) <= {"float32, 0-dim (sample 1)", "float32, 0-dim (sample 2)"}
    for op in sorted(crashed):
        crash = reproduce(REPRODUCE_ZERO_DIM, op.split("::")[1])
        assert crash.returncode == -signal.SIGSEGV and "returned" not in crash.stdout, (op, crash.returncode)
    # 2. and 3.: the other findings, all of them
    others = {(f["operator"], f["check"]) for f in section["findings"] if f["check"] != "crashed"}
    assert others == {(name, "opcheck") for name in CSR | GATHER} | {("torch_scatter::gather_csr", "result")}
    (device,) = section["devices"]
    validate("operators", device["result"])
    ops = {op["name"]: op for op in device["result"]["operators"]}
    assert set(ops) == SCATTER | COO | CSR | GATHER | {"torch_scatter::cuda_version"}
    for name in CSR | GATHER:
        (opcheck,) = [c for c in ops[name]["checks"] if c["name"] == "opcheck"]
        assert opcheck["detail"].startswith("test_aot_dispatch_dynamic: "), opcheck["detail"]
    wrong = [c for c in ops["torch_scatter::gather_csr"]["cases"] if c["status"] == "failed"]
    assert wrong and all(c["name"].endswith("zero-size inner dim") for c in wrong)
    assert all("shape (0, 0) != reference shape (5, 0)" in c["detail"] for c in wrong)
    assert ops["torch_scatter::cuda_version"]["status"] == "not_exercised"  # no tensor to sample
    counts = section["counts"]
    assert (counts["operators"], counts["passed"], counts["failed"], counts["not_exercised"]) == (16, 0, 15, 1)
    assert section["summary"].startswith("project operators 16: 0 passed, 15 failed, 1 not exercised "
                                         "(torch_scatter::cuda_version): torch_scatter::")

    shapes = reproduce(REPRODUCE_GATHER_CSR)
    assert shapes.stdout.split("\n")[0] == "(0, 0) (5, 4)", shapes.stdout + shapes.stderr
    compiled = reproduce(REPRODUCE_COMPILE)
    assert compiled.stdout.strip().startswith("refused:"), compiled.stdout + compiled.stderr[-2000:]
