"""ABI diff and semver gate for Python packages with native extensions.

Public API::

    from xcompat.abi import diff_paths, required_bump_for_versions
    result = diff_paths("old.whl", "new.whl", policy={"glibc_floor_raised": "minor"})
    result.required_bump, result.status, result.to_dict()

Submodules are imported lazily so that ``import xcompat.abi`` stays cheap.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xcompat.cpus import usable_cpus

if TYPE_CHECKING:
    from xcompat.abi.diff import AbiDiff
    from xcompat.abi.manifest import Manifest

__all__ = ["diff_paths", "load_manifest", "policy_from_matrix", "required_bump_for_versions"]

# Inputs bigger than this (both sides together) are read in two processes at once.
PARALLEL_THRESHOLD_BYTES = 64 << 20


def required_bump_for_versions(old_version: str, new_version: str) -> str:
    """The bump going from ``old_version`` to ``new_version`` is (PEP 440; Cargo's 0.y.z rule)."""
    from xcompat.abi.semver import required_bump_for_versions as impl

    return impl(old_version, new_version)


def load_manifest(path: str | Path, **kwargs: Any) -> Manifest:
    from xcompat.abi.inputs import load_manifest as impl

    return impl(path, **kwargs)


def policy_from_matrix(matrix: Any) -> Mapping[str, Any] | None:
    """The ABI policy of a test matrix as the mapping ``diff_paths(policy=...)`` takes.

    Accepts a loaded matrix (``xcompat.matrix``: ``matrix.abi`` with ``bumps`` and
    ``gating``), its ``abi`` policy object, or the raw matrix document (``{"abi": {...}}``).
    """
    if matrix is None:
        return None
    abi = matrix.get("abi") if isinstance(matrix, Mapping) else getattr(matrix, "abi", matrix)
    if abi is None:
        return None
    if isinstance(abi, Mapping):
        return {k: v for k, v in abi.items() if k in ("bumps", "gate", "rules", "ignore", "extension_exports")}
    out: dict[str, Any] = {"bumps": dict(getattr(abi, "bumps", {}) or {})}
    gating = getattr(abi, "gating", None)
    if gating is not None:
        out["gate"] = list(gating)
    declared = getattr(abi, "extension_exports", None)
    if declared:
        out["extension_exports"] = list(declared)
    return out


def _wheel_bytes(path: Path) -> int:
    """Compressed size of the wheels at ``path`` (0 for libraries and snapshots)."""
    try:
        if path.is_dir():
            return sum(p.stat().st_size for p in path.glob("*.whl"))
        return path.stat().st_size if path.suffix == ".whl" else 0
    except OSError:
        return 0


def _idle_cpus() -> float:
    """CPUs this process may use minus the 1-minute load: two reading processes only pay off
    (their results are pickled back) when a second core is actually free."""
    cpus = usable_cpus()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = 0.0
    return cpus - 1 - load


def _load_pair(old: Path, new: Path, kwargs: dict[str, Any], parallel: bool) -> tuple[Manifest, Manifest]:
    from xcompat.abi.inputs import load_manifest as impl

    if parallel and _idle_cpus() >= 1 and _wheel_bytes(old) + _wheel_bytes(new) > PARALLEL_THRESHOLD_BYTES:
        # Inflating a wheel is CPU-bound zlib work; two sides, two processes.
        import concurrent.futures
        import multiprocessing

        ctx = multiprocessing.get_context("fork") if hasattr(os, "fork") else None
        with concurrent.futures.ProcessPoolExecutor(max_workers=2, mp_context=ctx) as pool:
            fo = pool.submit(impl, old, **kwargs)
            fn = pool.submit(impl, new, **kwargs)
            return fo.result(), fn.result()
    if parallel and (_wheel_bytes(old) or _wheel_bytes(new)):
        # Threads suffice here: the slow part of a small wheel is the griffe / torch subprocess
        # of each side, and waiting on a subprocess releases the GIL.
        import concurrent.futures

        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as tpool:
            fo = tpool.submit(impl, old, **kwargs)
            fn = tpool.submit(impl, new, **kwargs)
            return fo.result(), fn.result()
    return impl(old, **kwargs), impl(new, **kwargs)


def diff_paths(
    old: str | Path,
    new: str | Path,
    *,
    policy: Mapping[str, Any] | None = None,
    against_version: bool = False,
    fail_on: str = "major",
    python_api: str = "auto",
    torch_ops: str = "auto",
    cell_id: str | None = None,
    parallel: bool = True,
) -> AbiDiff:
    """Compare two wheels / folders of wheels / libraries / snapshots.

    ``policy`` is a mapping ``finding kind -> bump`` (or ``{"rules": ..., "ignore": [...]}``),
    e.g. the ``abi`` policy of the test matrix. With ``against_version`` the actual bump is
    derived from the two package versions and the check fails when a finding needs more.
    """
    from xcompat.abi.diff import diff_manifests
    from xcompat.abi.rules import BUMP_RANK, make_policy
    from xcompat.abi.semver import required_bump_for_versions as actual

    if fail_on not in BUMP_RANK:
        raise ValueError(f"fail_on must be one of major, minor, patch, none; not {fail_on!r}")
    pol = make_policy(policy)
    a, b = _load_pair(Path(old), Path(new), {"python_api": python_api, "torch_ops": torch_ops}, parallel)
    from xcompat.abi.inputs import align_keys

    align_keys(a, b)
    bump = None
    if against_version:
        if not a.version or not b.version:
            from xcompat.abi.inputs import InputProblem

            side = old if not a.version else new
            raise InputProblem(f"{side}: has no package version; --against-version needs wheels or snapshots of wheels")
        bump = actual(a.version, b.version)
    from xcompat.gcpause import paused_gc

    with paused_gc():  # tens of thousands of short-lived, acyclic objects
        return diff_manifests(a, b, policy=pol, actual_bump=bump, fail_on=fail_on,
                              cell_id=cell_id, verify_python_api=True)
