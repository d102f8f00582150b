"""The planted-bug operator library of tests/fixtures/operators, built once and cached.

``planted_site()`` is a folder laid out like an installed wheel (``planted/__init__.py``
loading ``planted/planted_ops.so``), built with ``torch.utils.cpp_extension`` against the
installed torch into ``${XCOMPAT_TEST_CACHE:-~/.cache/xcompat-tests}/operators-planted-<hash>``;
the hash covers the sources and the torch version, so nothing else rebuilds it.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.helpers.sample import cache_root

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "operators"
SAMPLES = FIXTURE / "operators.py"

_BUILD = """
import sys
from torch.utils.cpp_extension import load
load(name="planted_ops", sources=[sys.argv[1]], build_directory=sys.argv[2], is_python_module=False,
     extra_cflags=["-O1"], verbose=False)
"""


def _key() -> str:
    import torch

    digest = hashlib.sha256(torch.__version__.encode())
    for path in (FIXTURE / "planted_ops.cpp", FIXTURE / "planted" / "__init__.py"):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def planted_site() -> Path:
    """The folder to give ``--site`` (built on first use, then reused)."""
    root = cache_root() / f"operators-planted-{_key()}"
    site = root / "site"
    if (root / ".complete").is_file():
        return site
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (root / ".complete").is_file():
            return site
        with tempfile.TemporaryDirectory(dir=root) as build:
            subprocess.run([sys.executable, "-c", _BUILD, str(FIXTURE / "planted_ops.cpp"), build],
                           check=True, timeout=600, capture_output=True)
            shutil.rmtree(site, ignore_errors=True)
            (site / "planted").mkdir(parents=True)
            shutil.copy(FIXTURE / "planted" / "__init__.py", site / "planted" / "__init__.py")
            shutil.copy(Path(build) / "planted_ops.so", site / "planted" / "planted_ops.so")
        (root / ".complete").write_text("ok\n")
    return site
