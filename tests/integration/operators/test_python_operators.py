"""Operators defined with torch.library in Python: found like C++ ones; a crashing or hanging kernel
ends the checking process, not xcompat."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from xcompat.errors import ToolError
from xcompat.jsonio import validate
from xcompat.operators import run_operators

PACKAGE = '''
import os
import signal

import torch

lib = torch.library.Library("pyops", "DEF")
lib.define("double(Tensor x) -> Tensor")
lib.define("fragile(Tensor x) -> Tensor")
lib.impl("double", lambda x: x * 2, "CompositeExplicitAutograd")


def fragile(x):
    if not x.is_contiguous():
        {action}
    return x + 1


lib.impl("fragile", fragile, "CPU")
'''

SAMPLES = '''
import torch

SAMPLES = {
    "pyops::double": lambda: [(torch.randn(3, 4),)],
    "pyops::fragile": lambda: [(torch.randn(3, 4),)],
    "pyops::absent": lambda: [(torch.randn(2),)],
}
'''


def _site(tmp_path: Path, action: str) -> tuple[Path, Path]:
    site = tmp_path / "site"
    (site / "pyops").mkdir(parents=True)
    (site / "pyops" / "__init__.py").write_text(PACKAGE.replace("{action}", action))
    samples = tmp_path / "operators.py"
    samples.write_text(textwrap.dedent(SAMPLES))
    return site, samples


@pytest.mark.slow
def test_python_operators_are_found_with_their_dispatch_keys(tmp_path: Path) -> None:
    site, samples = _site(tmp_path, "return x.contiguous() + 1")
    doc = run_operators(site, samples=samples)
    validate("operators", doc)
    ops = {op["name"]: op for op in doc["operators"]}
    assert ops["pyops::double"]["dispatch_keys"] == ["CompositeExplicitAutograd"]
    assert ops["pyops::fragile"]["dispatch_keys"] == ["CPU"]
    assert doc["unknown_samples"] == ["pyops::absent"]
    assert ops["pyops::double"]["status"] == "passed"
    # fragile has a CPU kernel only: torch.compile cannot trace it, and opcheck says so
    assert doc["summary"] == "project operators 2: 1 passed, 1 failed: pyops::fragile on cpu, opcheck"
    opcheck = next(c for c in ops["pyops::fragile"]["checks"] if c["name"] == "opcheck")
    assert opcheck["detail"].startswith("test_faketensor: UnsupportedOperatorException: ")
    assert "register_fake" in opcheck["detail"]
    result = next(c for c in ops["pyops::fragile"]["checks"] if c["name"] == "result")
    assert result["status"] == "passed"


@pytest.mark.slow
def test_a_kernel_that_crashes_on_a_derived_case_is_a_tool_error(tmp_path: Path) -> None:
    site, samples = _site(tmp_path, "os.kill(os.getpid(), signal.SIGSEGV)")
    with pytest.raises(ToolError, match="ended with signal 11 while checking pyops::fragile on cpu, "
                       "non-contiguous, float32 and no result; a kernel may have crashed"):
        run_operators(site, samples=samples)


@pytest.mark.slow
def test_a_kernel_that_hangs_is_stopped_at_the_timeout(tmp_path: Path) -> None:
    site, samples = _site(tmp_path, "import time; time.sleep(600)")
    with pytest.raises(ToolError, match="took more than 20 s; a kernel may hang"):
        run_operators(site, samples=samples, timeout=20)
