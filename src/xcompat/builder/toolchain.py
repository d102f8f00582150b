"""The GPU toolchain a build sees, decided by the device backend it builds for.

Torch extensions choose their variant from the machine: a setup.py adds its CUDA extension
when ``nvcc`` runs or ``CUDA_HOME`` is set (as ``torch.utils.cpp_extension`` finds the
toolkit). On a machine with a CUDA toolkit and a CPU build of torch, that CUDA extension
then fails ("CUDA_HOME environment variable is not set": torch reports no toolkit when it
was built without CUDA). So the backend decides, not the machine:

* ``cpu`` and ``mps``: the CUDA toolchain is hidden. No ``nvcc`` on PATH (a folder that is
  a toolkit's ``bin`` is dropped; in a shared folder such as ``/usr/local/bin`` only
  ``nvcc`` is hidden, through a folder of links to everything else) and the variables that
  point at a toolkit are unset (``HIDDEN_CUDA_VARIABLES``). No variable is set to switch
  CUDA off: torch documents none for extensions, and a project's own switch (``FORCE_CUDA``
  and the like) means different things in different projects.
* ``cuda``: one toolkit, named consistently: ``CUDA_HOME`` and ``CUDA_PATH`` point at it and
  its ``nvcc`` is the first on PATH. The toolkit is the one ``CUDA_HOME`` (else
  ``CUDA_PATH``) names, else ``/usr/local/cuda-<cell toolkit>``, else the first ``nvcc`` on
  PATH that lies in a toolkit, else ``/usr/local/cuda``.
* ``rocm`` and no backend: the environment as it is.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

HIDDEN_CUDA_VARIABLES = ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDA_BIN_PATH", "CUDAToolkit_ROOT", "CUDACXX")
# Device backends built without the CUDA toolchain.
CPU_BACKENDS = frozenset({"cpu", "mps"})


@dataclass(frozen=True, kw_only=True)
class Toolchain:
    env: dict[str, str]
    summary: str  # what was done, for the log


def is_toolkit(root: Path) -> bool:
    """A CUDA toolkit's root: ``bin/nvcc`` and the CUDA headers."""
    return (root / "bin" / "nvcc").is_file() and (root / "include" / "cuda.h").is_file()


def _nvcc_folders(path: str) -> list[str]:
    return [entry for entry in path.split(os.pathsep)
            if entry and os.access(os.path.join(entry, "nvcc"), os.X_OK) and os.path.isfile(os.path.join(entry, "nvcc"))]


def _without_nvcc(folder: str, scratch: Path) -> str:
    """A folder of links to everything in ``folder`` but ``nvcc``: ``folder``'s place on PATH."""
    index = sum(1 for _ in scratch.glob("path-*")) if scratch.is_dir() else 0
    mirror = scratch / f"path-{index}"
    mirror.mkdir(parents=True)
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name != "nvcc":
                os.symlink(os.path.join(folder, entry.name), mirror / entry.name)
    return str(mirror)


def hide_cuda(env: Mapping[str, str], scratch: Path) -> Toolchain:
    out = {k: v for k, v in env.items() if k not in HIDDEN_CUDA_VARIABLES}
    unset = [k for k in HIDDEN_CUDA_VARIABLES if k in env]
    path = out.get("PATH", "")
    hidden = _nvcc_folders(path)
    entries = []
    for entry in path.split(os.pathsep) if path else []:
        if entry not in hidden:
            entries.append(entry)
        elif not is_toolkit(Path(entry).parent):
            entries.append(_without_nvcc(entry, scratch))
    out["PATH"] = os.pathsep.join(entries)
    done = []
    if hidden:
        done.append(f"nvcc hidden from PATH ({', '.join(hidden)})")
    if unset:
        done.append(f"unset {', '.join(unset)}")
    return Toolchain(env=out, summary="CPU build: " + ("; ".join(done) if done else "no CUDA toolchain in sight"))


def find_toolkit(env: Mapping[str, str], toolkit: str | None = None) -> Path | None:
    for name in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(name) and is_toolkit(Path(env[name])):
            return Path(env[name])
    candidates = [Path(f"/usr/local/cuda-{toolkit}")] if toolkit else []
    # An nvcc linked from elsewhere counts for the toolkit it lives in.
    candidates += [(Path(folder) / "nvcc").resolve().parent.parent for folder in _nvcc_folders(env.get("PATH", ""))]
    candidates.append(Path("/usr/local/cuda"))
    return next((c for c in candidates if is_toolkit(c)), None)


def name_cuda(env: Mapping[str, str], toolkit: str | None = None) -> Toolchain:
    root = find_toolkit(env, toolkit)
    if root is None:
        return Toolchain(env=dict(env), summary="CUDA build: no CUDA toolkit found (CUDA_HOME, nvcc on PATH, "
                                                "/usr/local/cuda)")
    out = dict(env)
    out["CUDA_HOME"] = out["CUDA_PATH"] = str(root)
    path = out.get("PATH", "")
    out["PATH"] = str(root / "bin") + (os.pathsep + path if path else "")
    return Toolchain(env=out, summary=f"CUDA build: toolkit {root} (CUDA_HOME, CUDA_PATH, first nvcc on PATH)")


def toolchain_for(backend: str | None, env: Mapping[str, str], scratch: Path, *,
                  toolkit: str | None = None) -> Toolchain | None:
    """The build environment for device backend ``backend`` (None: leave it as it is)."""
    if backend in CPU_BACKENDS:
        return hide_cuda(env, scratch)
    if backend == "cuda":
        return name_cuda(env, toolkit)
    return None


def torch_backend(python: str) -> str | None:
    """The device backend of the torch installed for ``python`` (``cpu``, ``cuda``, ``rocm``),
    read from ``torch/version.py`` without importing torch; None when torch is not installed."""
    if Path(python).resolve() == Path(sys.executable).resolve():
        import importlib.util

        spec = importlib.util.find_spec("torch")
        folder = next(iter(spec.submodule_search_locations or []), None) if spec is not None else None
    else:
        code = ("import importlib.util as u\ns = u.find_spec('torch')\n"
                "print(next(iter(s.submodule_search_locations or []), '') if s else '')")
        try:
            proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        folder = proc.stdout.strip() or None
    if folder is None:
        return None
    try:
        tree = ast.parse((Path(folder) / "version.py").read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return "cpu"
    values: dict[str, object] = {}
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and value is not None:
            try:
                values[target.id] = ast.literal_eval(value)
            except ValueError:
                continue
    if values.get("hip"):
        return "rocm"
    if values.get("cuda"):
        return "cuda"
    return "cpu"
