"""Prepare the warm parent that every test process is forked from.

Forking is cheap only when the parent already did the expensive, lazy work the tests will
repeat: ``import torch`` (~1.9 s) and the first ``torch.testing.assert_close`` (which
imports ~520 more modules, ~0.6 s). Two things must never happen in the parent:

* an OpenMP thread pool: after one multi-threaded op, a forked child hangs forever in its
  first parallel region (libgomp). The parent therefore runs single-threaded for its whole
  life and each child restores the thread count right after the fork;
* CUDA/HIP/MPS initialisation: those runtimes cannot survive a fork. The parent sets
  ``PYTORCH_NVML_BASED_CUDA_CHECK=1`` so availability checks go through NVML, its warm-up
  only touches CPU tensors, and it runs no ``backward()`` on a torch built for an
  accelerator (:func:`autograd_warm_up_is_fork_safe`).

Torch is warmed only for a suite that uses it (``suite_imports_torch``): a parent holding
torch makes every fork slower (its page tables are copied) and costs ~2 s to start, which a
suite that never imports torch should not pay.

numba is warmed for a suite that uses it (named in its files, or imported by collection):
the parent compiles one tiny function (:func:`warm_numba`), which sets up what numba's first
compilation in a process sets up (LLVM, the CPU target, its typing and target contexts). A test
process forked afterwards inherits all of it, so it only compiles its own functions, or loads
them from numba's on-disk cache (``cache=True``) in milliseconds instead of the ~0.15 s that
set-up costs every process that does it itself. What a test compiles in its own process is not
kept: a function without ``cache=True`` is compiled again by every test process that calls it
(``xcompat matrix init`` measures what that costs the suite, ``xcompat.isolate.costs``).
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast


@dataclass(frozen=True, kw_only=True)
class WarmState:
    torch_version: str | None = None
    threads: int | None = None  # torch's intra-op thread count to restore in each child
    seconds: float = 0.0
    preloaded: tuple[str, ...] = field(default=())
    autograd: bool = False  # backward() ran in the parent (CPU-only builds of torch)
    numba: str | None = None  # numba's version, when its compiler was set up in the parent

    def to_dict(self) -> dict[str, Any]:
        return {
            "torch": self.torch_version,
            "threads": self.threads,
            "seconds": round(self.seconds, 3),
            "preloaded": list(self.preloaded),
            "autograd": self.autograd,
            "numba": self.numba,
        }

    def with_numba(self, version: str | None, seconds: float) -> WarmState:
        if version is None:
            return self
        return replace(self, numba=version, seconds=self.seconds + seconds,
                       preloaded=(*self.preloaded, "numba") if "numba" not in self.preloaded else self.preloaded)


def warm_parent(*, preload: tuple[str, ...] = (), use_torch: bool = True) -> WarmState:
    """Import and exercise what tests will use, without threads or device runtimes."""
    start = time.perf_counter()
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    loaded: list[str] = []
    torch_version = None
    threads = None
    autograd = False
    if use_torch:
        try:
            import torch
        except ImportError:
            torch = None  # type: ignore[assignment]  # no torch here: the module's name is None
        if torch is not None:
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            torch_version = str(torch.__version__).split("+")[0]
            # Tiny CPU ops only: this pulls in torch.testing's lazy imports (sympy & co.)
            # and autograd's first-use setup, with one intra-op thread.
            a = torch.arange(16, dtype=torch.float32).reshape(4, 4)
            b = (a @ a.t()).sum(dim=0)
            torch.testing.assert_close(b, b.clone())
            torch.testing.assert_close(a.to(torch.float64), a.to(torch.float64))
            if autograd_warm_up_is_fork_safe(torch):
                x = torch.ones(3, requires_grad=True)
                backward = cast("Callable[[], None]", (x * 2).sum().backward)  # untyped in torch
                backward()
                autograd = True
            loaded.append("torch")
    for name in preload:
        importlib.import_module(name)
        loaded.append(name)
    return WarmState(
        torch_version=torch_version,
        threads=threads,
        seconds=time.perf_counter() - start,
        preloaded=tuple(loaded),
        autograd=autograd,
    )


def autograd_warm_up_is_fork_safe(torch: Any) -> bool:
    """Whether a ``backward()`` in the parent leaves its forks able to use torch fully.

    The autograd engine's first ``backward()`` counts the devices of every accelerator torch
    was built for. For CUDA (and ROCm, which builds as CUDA) that count is
    ``cudaGetDeviceCount``, which initialises the CUDA driver in the parent: every forked
    child then fails its first CUDA call with "CUDA error: initialization error". Where it
    finds a device the engine also starts a thread per device and marks the process, so a
    child's own ``backward()`` raises "Unable to handle autograd's threading in combination
    with fork-based multiprocessing". A CPU-only build has nothing to count: the warm-up is
    safe there and saves each test autograd's first-use set-up.
    """
    backends = getattr(torch, "backends", None)
    cuda = getattr(backends, "cuda", None)
    mps = getattr(backends, "mps", None)
    xpu = getattr(torch, "xpu", None)
    version = getattr(torch, "version", None)
    accelerators = (
        bool(cuda is not None and cuda.is_built()),
        bool(getattr(version, "hip", None)),
        bool(mps is not None and mps.is_built()),
        bool(xpu is not None and getattr(xpu, "_is_compiled", lambda: False)()),
    )
    return not any(accelerators)


def warm_numba() -> tuple[str | None, float]:
    """Set numba's compiler up in this process: ``(numba's version, seconds)``, or ``(None, 0)``
    when numba is not installed, cannot compile here, or ``XCOMPAT_TEST_WARM_NUMBA=0``.

    One eager compilation of a one-line function, without ``parallel`` (numba's threading
    layer would start a thread pool, which a fork does not carry over) and without ``cache``
    (nothing is written). A failure is no reason to stop the run: the tests then pay the
    set-up themselves, as they would without xcompat.
    """
    if os.environ.get("XCOMPAT_TEST_WARM_NUMBA") == "0":
        return None, 0.0
    start = time.perf_counter()
    try:
        import numba

        add_one = numba.njit("int64(int64)", cache=False)(lambda x: x + 1)
        if add_one(1) != 2:
            return None, 0.0
    except Exception:  # noqa: BLE001 - a broken numba is the tests' to report, not the warm-up's
        return None, 0.0
    return str(getattr(numba, "__version__", "unknown")), time.perf_counter() - start


def numba_in_use_after_collection() -> bool:
    """Collection imported numba (a test module, or the project's package, uses it)."""
    return "numba" in sys.modules


# `import torch`, `from torch.x import y` (at any indentation: lazy imports inside tests count),
# and pytest.importorskip("torch"). The same for numba.
_TORCH_IMPORT = re.compile(rb"^[ \t]*(?:import|from)[ \t]+torch\b|importorskip\(\s*[\"']torch\b", re.MULTILINE)
_NUMBA_IMPORT = re.compile(rb"^[ \t]*(?:import|from)[ \t]+numba\b|importorskip\(\s*[\"']numba\b", re.MULTILINE)
_IMPORTS = {"torch": _TORCH_IMPORT, "numba": _NUMBA_IMPORT}
# Bounds of the scan: a suite bigger than this is assumed to need torch when torch is installed.
SCAN_MAX_FILES = 5000
SCAN_MAX_BYTES = 1 << 20
_SKIPPED_DIRS = {"__pycache__", ".git", ".tox", ".nox", ".venv", "venv", "node_modules", "build", "dist"}


def _python_files(paths: Iterable[Path]) -> Iterable[Path]:
    for path in paths:
        if path.is_file():
            if path.suffix == ".py":
                yield path
            continue
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_DIRS and not d.startswith("."))
            for name in sorted(filenames):
                if name.endswith(".py"):
                    yield Path(dirpath) / name


def suite_imports(paths: Iterable[Path], names: Iterable[str] = ("torch", "numba")) -> frozenset[str]:
    """Which of ``names`` (``torch``, ``numba``) the Python files under ``paths`` (tests,
    conftests, their helpers) import.

    A plain text scan, so nothing is imported; a suite past ``SCAN_MAX_FILES`` files counts as
    using them all (warming is the safe side: a parent that warmed torch never forks a child
    into an OpenMP pool).
    """
    wanted = {name: _IMPORTS[name] for name in names}
    found: set[str] = set()
    for count, path in enumerate(_python_files(paths)):
        if count >= SCAN_MAX_FILES:
            return frozenset(wanted)
        try:
            with open(path, "rb") as fh:
                head = fh.read(SCAN_MAX_BYTES)
        except OSError:
            continue
        found.update(name for name, pattern in wanted.items() if name not in found and pattern.search(head))
        if len(found) == len(wanted):
            break
    return frozenset(found)


def suite_imports_torch(paths: Iterable[Path]) -> bool:
    """Whether the Python files under ``paths`` import torch (:func:`suite_imports`)."""
    return "torch" in suite_imports(paths, ("torch",))


def scan_roots(targets: Iterable[str], cwd: Path) -> list[Path]:
    """Folders and files a pytest run over ``targets`` reads tests from, plus their conftests.

    Node ids lose their ``::`` part; an importable name (``--pyargs``) maps to its package's
    folder (found without importing it); no target means the current folder.
    """
    roots: list[Path] = []
    for target in targets or (".",):
        path = Path(target.split("::", 1)[0])
        path = path if path.is_absolute() else cwd / path
        if path.exists():
            roots.append(path)
            continue
        top = target.split(".", 1)[0]
        if top.isidentifier():
            from importlib.util import find_spec

            try:
                spec = find_spec(top)
            except (ImportError, ValueError):
                spec = None
            for location in (spec.submodule_search_locations or []) if spec else []:
                roots.append(Path(location))
    conftests: list[Path] = []
    for root in roots:
        for parent in [root.parent, *root.parent.parents] if root.is_file() else [root, *root.parents]:
            candidate = parent / "conftest.py"
            if candidate.is_file() and candidate not in conftests:
                conftests.append(candidate)
            if parent == cwd or (parent / "pyproject.toml").is_file():
                break
    return roots + conftests


def torch_in_use_after_collection() -> bool:
    """Collection imported torch (the project's own package may import it)."""
    return "torch" in sys.modules

