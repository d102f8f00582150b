"""Check a built project's operators: one isolated child process, one result document.

The child (``xcompat.operators.child``) imports the project's modules from ``site`` (a
folder the wheel is installed in), finds the operators they register, expands the declared
samples and runs every check on ``device``. This side builds its command, bounds and parses
what it prints, and turns what went wrong into xcompat's errors.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from xcompat.abi.isolated import run_isolated_script
from xcompat.errors import InputError, ToolError, UnavailableError, UsageError
from xcompat.operators.child import PROGRESS
from xcompat.operators.discovery import top_level_names
from xcompat.operators.document import build_document
from xcompat.operators.samples import SamplesError, check_syntax
from xcompat.testing.reference import Tolerance

TIMEOUT_S = 900
MAX_OUTPUT = 16 * 1024 * 1024
_DEVICE = re.compile(r"(cpu|cuda|hip|mps|xpu|meta|privateuseone)(:[0-9]+)?")
_PACKAGES = str(Path(__file__).resolve().parents[2])  # the folder xcompat is imported from

_CHILD = """
import json, sys
sys.path.append({packages!r})
from xcompat.operators.child import main
main(json.loads({config!r}), sys.argv[1], sys.argv[2:])
"""


def _last_json(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                found = json.loads(line)
            except json.JSONDecodeError:
                return None
            return found if isinstance(found, dict) else None
    return None


def run_operators(
    site: Path, *, samples: Path | None = None, device: str = "cpu", cell_id: str | None = None,
    tolerances: Mapping[str, Tolerance] | None = None, python: str | None = None, opcheck: bool = True,
    timeout: float = TIMEOUT_S, skip: Sequence[str] = (),
) -> dict[str, Any]:
    """The ``operators`` document for the project installed in ``site`` (not yet validated);
    the operators in ``skip`` are listed, not checked (they crashed an earlier check)."""
    if not site.is_dir():
        raise InputError("not a folder; give the folder the wheel is installed in", file=site)
    if samples is not None:
        if not samples.is_file():
            raise InputError("no such samples file", file=samples, hint="declare samples in .xcompat/operators.py")
        try:
            check_syntax(samples)
        except SamplesError as exc:
            raise InputError(str(exc)) from None
    if not _DEVICE.fullmatch(device):
        raise UsageError(f"--device {device!r} is not a device; give cpu, cuda, cuda:1, mps, xpu or hip")
    config = {
        "device": device, "samples": str(samples.resolve()) if samples else None, "opcheck": opcheck,
        "skip": sorted(set(skip)),
        "tolerances": {k: {"rtol": v.rtol, "atol": v.atol} for k, v in (tolerances or {}).items()},
    }
    script = _CHILD.format(packages=_PACKAGES, config=json.dumps(config))
    proc = run_isolated_script(script, site.resolve(), top_level_names(site), python=python, timeout=timeout)
    if proc is None:
        raise ToolError(f"checking the operators took more than {timeout:g} s; a kernel may hang")
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    steps = [line.removeprefix(PROGRESS) for line in lines if line.startswith(PROGRESS)]
    tail = [line for line in lines if not line.startswith(PROGRESS)][-5:]
    if "No module named 'torch'" in proc.stderr:
        raise UnavailableError("torch is not installed in the interpreter that checks the operators")
    found = _last_json(proc.stdout[-MAX_OUTPUT:]) if proc.returncode == 0 else None
    if found is None:
        how = f"exit status {proc.returncode}" if proc.returncode >= 0 else f"signal {-proc.returncode}"
        during = f" while checking {steps[-1]}" if steps else ""
        raise ToolError(f"the process checking the operators ended with {how}{during} and no result; "
                        "a kernel may have crashed", details=tail)
    if found.get("device_error"):
        raise UnavailableError(str(found["device_error"]))
    if found.get("samples_error"):
        raise InputError(str(found["samples_error"]))
    return build_document(found, device=device, samples=str(samples) if samples else None,
                          site=str(site), cell_id=cell_id)
