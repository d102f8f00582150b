"""Compare two manifests and classify every difference as a finding with a required bump.

The result (:class:`AbiDiff`) and the orchestration live here; every comparison reports its
findings (:mod:`xcompat.abi.findings`) to one collector. The comparisons themselves are in
:mod:`xcompat.abi.library_diff` (native libraries, paired and judged by
:mod:`xcompat.abi.binding`), :mod:`xcompat.abi.tags_diff` (platform tags) and
:mod:`xcompat.abi.metadata_diff` (Requires-Python, dependencies)."""

from __future__ import annotations

from collections import Counter
from typing import Any, NamedTuple

from xcompat.abi.findings import Collector, Finding
from xcompat.abi.library_diff import LibraryContext, diff_libraries
from xcompat.abi.manifest import Manifest
from xcompat.abi.metadata_diff import diff_requires
from xcompat.abi.pairing import LibraryPair
from xcompat.abi.rules import BUMP_RANK, Policy, make_policy, worst
from xcompat.abi.tags_diff import WHEEL, diff_tags, promised_floors
from xcompat.bump import Bump

RESULT_VERSION = 1
__all__ = ["WHEEL", "AbiDiff", "Collector", "Finding", "diff_manifests"]


class AbiDiff(NamedTuple):
    old: Manifest
    new: Manifest
    findings: tuple[Finding, ...]
    unchecked: tuple[str, ...]
    filtered: dict[str, int]
    required_bump: Bump
    actual_bump: Bump | None
    fail_on: Bump = "major"
    cell_id: str | None = None
    gate_kinds: frozenset[str] | None = None
    # how each old library was paired with a new one
    pairs: tuple[LibraryPair, ...] = ()

    @property
    def gating(self) -> tuple[Finding, ...]:
        """Findings that make the check fail: those needing more than the actual bump, or
        (without versions) those at or above ``fail_on``; with a policy ``gate`` list, only
        findings of those kinds (then, without versions, regardless of ``fail_on``)."""
        pool = self.findings
        if self.gate_kinds is not None:
            pool = tuple(f for f in pool if f.kind in self.gate_kinds)
        if self.actual_bump is not None:
            limit = BUMP_RANK[self.actual_bump]
            return tuple(f for f in pool if BUMP_RANK[f.required_bump] > limit)
        if self.gate_kinds is not None:
            return tuple(f for f in pool if f.required_bump != "none")
        if self.fail_on == "none":
            return ()
        limit = BUMP_RANK[self.fail_on]
        return tuple(f for f in pool if BUMP_RANK[f.required_bump] >= limit)

    @property
    def status(self) -> str:
        return "failed" if self.gating else "passed"

    def counts(self) -> dict[str, int]:
        return dict(Counter(f.kind for f in self.findings).most_common())

    def summary_line(self) -> str:
        n = len(self.findings)
        gating = len(self.gating)
        head = f"required bump {self.required_bump}"
        if self.actual_bump is not None:
            head += f", actual {self.actual_bump} ({self.old.version} -> {self.new.version})"
        if not n:
            return f"no ABI changes; {head}"
        return f"{n} finding(s), {gating} gating; {head}"

    def to_dict(self) -> dict[str, Any]:
        order = sorted(self.findings, key=lambda f: (-BUMP_RANK[f.required_bump], f.kind, f.library or "", f.symbol or ""))
        return {
            "version": RESULT_VERSION,
            "kind": "abi",
            "cell_id": self.cell_id,
            "status": self.status,
            "summary": self.summary_line(),
            "required_bump": self.required_bump,
            "actual_bump": self.actual_bump,
            "fail_on": self.fail_on,
            "old": self.old.summary(),
            "new": self.new.summary(),
            "counts": self.counts(),
            "gating": len(self.gating),
            "filtered": dict(sorted(self.filtered.items())),  # stable across runs (set order varies)
            "findings": [f.to_dict() for f in order],
            "pairs": [p.to_dict() for p in self.pairs],
            "unchecked": list(self.unchecked),
        }


def diff_manifests(
    old: Manifest,
    new: Manifest,
    *,
    policy: Policy | dict[str, Any] | None = None,
    actual_bump: Bump | None = None,
    fail_on: Bump = "major",
    cell_id: str | None = None,
    verify_python_api: bool = False,
) -> AbiDiff:
    """Compare two manifests. ``verify_python_api``: check gating Python-API findings against
    the imported packages (:mod:`xcompat.abi.pyapi_verify`); ``diff_paths`` does, for wheels."""
    if not isinstance(policy, Policy):
        policy = make_policy(policy)
    c = Collector(policy)
    single = len(old.libraries) == 1 and len(new.libraries) == 1
    explicit = old.kind == "library" and new.kind == "library" and single
    promised, promised_by = promised_floors(new.tags)
    ctx = LibraryContext(
        promised=promised,
        promised_by=promised_by,
        extension_exports=policy.extension_exports,
        is_numpy=(new.name or "").lower() == "numpy",
    )
    pairs = diff_libraries(old.libraries, new.libraries, c, ctx, explicit=explicit,
                           single_library=old.kind == "library" and new.kind == "library")
    diff_tags(old, new, c)
    diff_requires(old, new, c)
    unchecked = list(old.unchecked) + list(new.unchecked) + c.unchecked
    # Imported only when there is something to compare: a diff of two libraries has neither.
    if old.python_api is not None and new.python_api is not None:
        from xcompat.abi.pyapi import diff_python_api

        diff_python_api(old.python_api, new.python_api, c.add)
    elif old.python_api is not None or new.python_api is not None:
        unchecked.append("Python API: extracted on one side only; not compared")
    if old.torch_ops is not None and new.torch_ops is not None:
        from xcompat.abi.torchops import diff_torch_ops

        diff_torch_ops(old.torch_ops, new.torch_ops, c.add)
    elif old.torch_ops is not None or new.torch_ops is not None:
        unchecked.append("torch operator schemas: extracted on one side only; not compared")
    if not (old.kind == "library" and new.kind == "library" and single) and old.libraries and new.libraries:
        unchecked.append(
            "type-level changes (struct layout, parameter/return types, enumerators, vtable slot order) were "
            "not checked: this tier reads symbol tables; compare two single libraries built with -g to add abidiff"
        )
    if old.kind == "library" and new.kind == "library" and single:
        from pathlib import Path

        from xcompat.abi.abigail import run_abidiff

        (la,), (lb,) = old.libraries.values(), new.libraries.values()
        if la.format == "elf" and lb.format == "elf":
            run_abidiff(Path(old.source), Path(new.source), c.add, unchecked,
                        old_debug=bool(la.debug_info), new_debug=bool(lb.debug_info))
    findings_list = c.finish()
    if verify_python_api and any(f.kind in ("python_api_removed", "python_signature_changed") for f in findings_list):
        from xcompat.abi.pyapi_verify import verify_findings

        findings_list = verify_findings(findings_list, old, new, c.filtered, unchecked, policy)
    findings = tuple(findings_list)
    return AbiDiff(
        old=old,
        new=new,
        findings=findings,
        unchecked=tuple(dict.fromkeys(unchecked)),
        filtered=dict(c.filtered),
        required_bump=worst(f.required_bump for f in findings),
        actual_bump=actual_bump,
        fail_on=fail_on,
        cell_id=cell_id,
        gate_kinds=policy.gate,
        pairs=tuple(pairs),
    )


