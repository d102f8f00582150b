"""One difference between two manifests (:class:`Finding`) and the :class:`Collector` every
comparison reports them to. Below :mod:`xcompat.abi.diff` and its comparisons, so that each
comparison module needs only this one, not the orchestration that calls it."""

from __future__ import annotations

from collections import Counter
from typing import Any, NamedTuple

from xcompat.abi.rules import Policy
from xcompat.bump import Bump

__all__ = ["Collector", "Finding"]


class Finding(NamedTuple):  # not a dataclass: see xcompat.abi.binary.SlotRecord
    kind: str
    library: str | None
    symbol: str | None
    demangled: str | None
    required_bump: Bump
    detail: str
    old: Any = None
    new: Any = None

    def to_dict(self) -> dict[str, Any]:
        d = {
            "kind": self.kind,
            "library": self.library,
            "symbol": self.symbol,
            "demangled": self.demangled,
            "required_bump": self.required_bump,
            "detail": self.detail,
        }
        if self.old is not None:
            d["old"] = self.old
        if self.new is not None:
            d["new"] = self.new
        return d


class Collector:
    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.findings: list[Finding] = []
        self.filtered: Counter[str] = Counter()
        self.pending_demangle: list[tuple[int, str]] = []
        self.unchecked: list[str] = []

    def add(self, kind: str, library: str | None, symbol: str | None, detail: str, *,
            old: Any = None, new: Any = None) -> None:
        if self.policy.ignored(library, symbol):
            self.filtered["policy"] += 1
            return
        if symbol is not None and symbol.partition("@")[0].startswith(("_Z", "__Z")):
            self.pending_demangle.append((len(self.findings), symbol))
        self.findings.append(
            Finding(
                kind=kind,
                library=library,
                symbol=symbol,
                demangled=symbol,
                required_bump=self.policy.bump(kind),
                detail=detail,
                old=old,
                new=new,
            )
        )

    def finish(self) -> list[Finding]:
        if self.pending_demangle:
            from xcompat.abi.demangle import demangle_many

            names = demangle_many([s for _i, s in self.pending_demangle])
            findings = self.findings
            for (i, _s), d in zip(self.pending_demangle, names, strict=True):
                f = findings[i]  # positional: _replace costs several times more per finding
                findings[i] = Finding(f.kind, f.library, f.symbol, d, f.required_bump, f.detail, f.old, f.new)
        return self.findings
