"""Find this machine's interpreters for a matrix's Pythons ("3.12", "3.13t").

Where they are looked for, in order: pyenv's versions (``$PYENV_ROOT/versions`` or
``~/.pyenv/versions``), uv-managed Pythons (``$UV_PYTHON_INSTALL_DIR`` or
``~/.local/share/uv/python``), then ``python3.12`` / ``python3.13t`` on PATH. Each candidate is
run once, with a timeout, to ask its real version, whether it is free-threaded and its wheel
tags: a shim or a link that points elsewhere is judged by what it runs, not by its name.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

# Asked of each candidate with -I: only the standard library, nothing the user's site adds.
_PROBE = (
    "import json, sys, sysconfig\n"
    "print(json.dumps({'version': '%d.%d.%d' % sys.version_info[:3],"
    " 'implementation': sys.implementation.name,"
    " 'free_threaded': bool(sysconfig.get_config_var('Py_GIL_DISABLED'))}))\n"
)
_PROBE_TIMEOUT = 30
_MAX_OUTPUT = 4 << 20  # the tags of one interpreter are a few hundred lines


@dataclass(frozen=True)
class Interpreter:
    path: str  # as found (a shim or link stays as found: it is what a job would run)
    version: str  # "3.12.1"
    free_threaded: bool
    tags: tuple[str, ...]  # packaging.tags.sys_tags(), best first; empty when packaging is absent

    @property
    def matrix_python(self) -> str:
        """The matrix's spelling of this interpreter: "3.12", "3.13t"."""
        major_minor = ".".join(self.version.split(".")[:2])
        return major_minor + ("t" if self.free_threaded else "")


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", name)[:3])


def candidates(python: str, env: dict[str, str] | os._Environ[str] = os.environ) -> Iterator[Path]:
    """Paths that may be an interpreter for ``python`` ("3.12" or "3.13t"), best first."""
    minor = python.rstrip("t")
    free = python.endswith("t")
    exe = f"python{minor}{'t' if free else ''}"
    pyenv = Path(env.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    if pyenv.is_dir():
        suffix = "t" if free else ""
        names = [d.name for d in pyenv.iterdir() if re.fullmatch(rf"{re.escape(minor)}\.\d+{suffix}", d.name)]
        for name in sorted(names, key=_version_key, reverse=True):
            yield pyenv / name / "bin" / exe
    uv = Path(env.get("UV_PYTHON_INSTALL_DIR") or Path.home() / ".local" / "share" / "uv" / "python")
    if uv.is_dir():
        variant = r"\+freethreaded" if free else ""
        pattern = rf"cpython-{re.escape(minor)}\.\d+{variant}-.*"
        names = [d.name for d in uv.iterdir() if re.fullmatch(pattern, d.name)]
        for name in sorted(names, key=_version_key, reverse=True):
            yield uv / name / "bin" / exe
    found = shutil.which(exe, path=env.get("PATH"))
    if found:
        yield Path(found)


def probe(path: Path) -> Interpreter | None:
    """Ask ``path`` what it is; None when it does not run or does not answer."""
    try:
        done = subprocess.run([str(path), "-I", "-c", _PROBE], capture_output=True, text=True,
                              timeout=_PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0 or len(done.stdout) > _MAX_OUTPUT:
        return None
    try:
        data = json.loads(done.stdout)
        version, free = str(data["version"]), bool(data["free_threaded"])
        implementation = str(data["implementation"])
    except (ValueError, KeyError, TypeError):
        return None
    if implementation != "cpython":
        return None
    return Interpreter(path=str(path), version=version, free_threaded=free, tags=cpython_tags(version, free))


def cpython_tags(version: str, free_threaded: bool) -> tuple[str, ...]:
    """The wheel tags a CPython ``version`` on this machine accepts, best first: computed here
    (packaging's rules, this machine's platform tags), so the interpreter needs nothing installed."""
    from packaging import tags

    major, minor = (int(p) for p in version.split(".")[:2])
    abi = f"cp{major}{minor}{'t' if free_threaded else ''}"
    platforms = list(tags.platform_tags())
    found = [*tags.cpython_tags((major, minor), abis=[abi], platforms=platforms),
             *tags.compatible_tags((major, minor), interpreter=f"cp{major}{minor}", platforms=platforms)]
    return tuple(str(t) for t in found)


def find_interpreter(python: str, env: dict[str, str] | os._Environ[str] = os.environ) -> Interpreter | None:
    """The best interpreter of this machine for the matrix's ``python``, or None."""
    seen: set[Path] = set()
    for path in candidates(python, env):
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        found = probe(path)
        if found is not None and found.matrix_python == python:
            return found
    return None


def find_interpreters(pythons: Iterable[str],
                      env: dict[str, str] | os._Environ[str] = os.environ) -> dict[str, Interpreter | None]:
    """Each of ``pythons`` -> its interpreter here (None: this machine has none)."""
    return {python: find_interpreter(python, env) for python in dict.fromkeys(pythons)}
