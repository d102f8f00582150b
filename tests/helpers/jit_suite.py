"""Generated projects whose tests cost a little or a lot in every test process.

``jit_project``: tests that call numba functions, so each process that runs one compiles them
(or, with ``cache=True``, loads them from numba's on-disk cache). The module of those functions
appends a line to the file named by ``JIT_SUITE_LOG`` for every compilation (``compile PID
NAME``) and every test start (``start PID warm|cold``: whether numba's compiler was already set
up in that process, i.e. its typing context has loaded its registries, which numba's first
compilation does). With ``kernels_in_package`` that module is the project's package, and no
test file names numba.

``cheap_project``: tests that do nothing per process beyond their own body (a short sleep stands
for the work of a real test), and log ``start PID`` the same way.
"""

from __future__ import annotations

from pathlib import Path

LOG_ENV = "JIT_SUITE_LOG"

_PYPROJECT = '[project]\nname = "{name}"\nversion = "1.0.0"\nrequires-python = ">=3.10"\n'

_JIT_KERNELS = '''
import os

import numpy as np
from numba import njit
from numba.core import event
from numba.core.registry import cpu_target

LOG = os.environ.get("JIT_SUITE_LOG")


def log(line):
    if LOG:
        with open(LOG, "a") as fh:
            fh.write(f"{{line}}\\n")


def log_start():
    # numba's first compilation in a process loads its typing registries
    log(f"start {{os.getpid()}} {{'warm' if cpu_target.typing_context._registries else 'cold'}}")


class _Compiles(event.Listener):
    def on_start(self, ev):
        log(f"compile {{os.getpid()}} {{ev.data['dispatcher'].py_func.__name__}}")

    def on_end(self, ev):
        pass


event.register("numba:compile", _Compiles())


@njit{cache}
def norm2(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i]
    return s


@njit{cache}
def scaled(a, k):
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        out[i] = a[i] * k + np.sin(a[i])
    return out
'''

_JIT_TEST = '''
import numpy as np
import pytest

from {kernels} import log_start, norm2, scaled


@pytest.mark.parametrize("n", range({tests}))
def test_kernels(n):
    log_start()
    a = np.arange(n + 1, dtype=np.float64)
    assert norm2(a) == pytest.approx(float((a * a).sum()))
    assert scaled(a, 2.0).shape == a.shape
'''

_CHEAP_TEST = '''
import os
import time

import pytest


@pytest.mark.parametrize("n", range({tests}))
def test_work(n):
    log = os.environ.get("JIT_SUITE_LOG")
    if log:
        with open(log, "a") as fh:
            fh.write(f"start {{os.getpid()}}\\n")
    time.sleep({sleep})
    assert n + 1 > n
'''


def jit_project(root: Path, *, tests: int = 10, cache: bool = False, kernels_in_package: bool = False) -> Path:
    """A project whose test file calls two numba functions, defined in ``tests/kernels.py`` or,
    with ``kernels_in_package``, in the project's package ``jitproj``."""
    project = root / "jitproj"
    (project / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text(_PYPROJECT.format(name="jitproj"))
    source = _JIT_KERNELS.format(cache="(cache=True)" if cache else "")
    if kernels_in_package:
        (project / "jitproj").mkdir()
        (project / "jitproj" / "__init__.py").write_text(source)
        kernels = "jitproj"
    else:
        (project / "tests" / "kernels.py").write_text(source)
        kernels = "kernels"
    (project / "tests" / "test_kernels.py").write_text(_JIT_TEST.format(kernels=kernels, tests=tests))
    return project


def cheap_project(root: Path, *, files: int = 2, tests: int = 5, sleep: float = 0.2) -> Path:
    """A project of ``files`` test files with ``tests`` tests each, each sleeping ``sleep`` s."""
    project = root / "cheapproj"
    (project / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text(_PYPROJECT.format(name="cheapproj"))
    for i in range(files):
        (project / "tests" / f"test_work{i}.py").write_text(_CHEAP_TEST.format(tests=tests, sleep=sleep))
    return project


def log_lines(log: Path, kind: str) -> list[list[str]]:
    """The log's lines of ``kind`` (``compile`` or ``start``), split into words."""
    if not log.is_file():
        return []
    return [line.split() for line in log.read_text().splitlines() if line.startswith(kind + " ")]
