"""Backend discovery as a fresh interpreter meets it: no torch import, no CUDA initialisation."""

from __future__ import annotations

import json
import subprocess
import sys

from xcompat.devices import available_backends


def test_this_machine_has_only_cpu_and_probe_is_cheap() -> None:
    # no torch import, no CUDA init: run in a fresh interpreter and look at sys.modules
    code = (
        "import sys, json; from xcompat.devices import available_backends;"
        "print(json.dumps([available_backends(), 'torch' in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    backends, torch_imported = json.loads(out.stdout)
    assert backends[-1] == "cpu"
    assert torch_imported is False
    assert available_backends() == backends
