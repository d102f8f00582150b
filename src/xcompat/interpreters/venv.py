"""A venv of another interpreter of this machine with this xcompat in it, to run its cells.

``xcompat run`` runs the cells of the interpreter it runs on itself; a cell of another Python
(found by ``xcompat.interpreters.discover``) runs in a child ``xcompat run`` in a venv of that
interpreter. The venv is made once per interpreter, xcompat version and source, under the
cache folder, and reused: xcompat goes in from where this one came from (its source folder,
editable, for a checkout; the same version from the index otherwise) with the build and runner
extras,
then the frameworks the cells name (``torch==2.13.*``), which pip takes from the configured
index as it would for the user.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from xcompat.interpreters.discover import Interpreter

_INSTALL_TIMEOUT_S = 1800.0
EXTRAS = "build,runner"  # what a child run's stages need: the build frontend and pytest


class VenvError(Exception):
    """The venv could not be made or filled; the message says which step and where its log is."""


def _source() -> tuple[str, str]:
    """``(pip requirement for this xcompat with the runner extra, a key of it)``."""
    from importlib import metadata

    import xcompat

    dist = metadata.distribution("xcompat")
    direct = dist.read_text("direct_url.json")
    if direct:
        info = json.loads(direct)
        url = str(info.get("url", ""))
        if url.startswith("file://") and Path(url[7:]).is_dir():
            folder = url[7:]
            editable = bool(info.get("dir_info", {}).get("editable"))
            key = hashlib.sha256(folder.encode()).hexdigest()[:12]
            return (f"-e{folder}[{EXTRAS}]" if editable else f"{folder}[{EXTRAS}]"), key
    return f"xcompat[{EXTRAS}]=={xcompat.__version__}", "index"


def cache_root(env: Mapping[str, str] = os.environ) -> Path:
    return Path(env.get("XCOMPAT_CACHE") or Path.home() / ".cache" / "xcompat") / "pythons"


def prepare(interpreter: Interpreter, frameworks: Mapping[str, str], log: Path,
            env: Mapping[str, str] = os.environ) -> Path:
    """The venv's python for ``interpreter``, with this xcompat and ``frameworks`` (name -> version)."""
    import xcompat

    requirement, key = _source()
    folder = cache_root(env) / f"{interpreter.matrix_python}-{xcompat.__version__}-{key}"
    python = folder / "bin" / "python"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a", encoding="utf-8") as out:
        if not python.is_file():
            _step([interpreter.path, "-m", "venv", str(folder)], out, "make the venv")
        pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--quiet"]
        _step([*pip, requirement], out, "install xcompat")
        pins = [f"{name}=={version}.*" for name, version in sorted(frameworks.items())]
        if pins:
            _step([*pip, *pins], out, f"install {' '.join(pins)}")
    return python


def _step(argv: list[str], out: TextIO, what: str) -> None:
    out.write(f"$ {' '.join(argv)}\n")
    out.flush()
    try:
        done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=_INSTALL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise VenvError(f"could not {what}: {exc}") from None
    if done.returncode != 0:
        raise VenvError(f"could not {what} (exit {done.returncode})")
