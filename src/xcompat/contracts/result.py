"""The result document every contract check writes, and its findings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from xcompat.errors import CheckFailed

Scalar = str | int | None


@dataclass(frozen=True)
class Finding:
    """One thing a check found. ``code`` is stable per kind of finding (tools match on it);
    ``message`` is for people; ``fields`` are the kind's own data (file, line, library...)."""

    code: str
    message: str
    fields: Mapping[str, Scalar] = field(default_factory=dict)

    def to_json(self) -> dict[str, Scalar]:
        return {"code": self.code, "message": self.message, **self.fields}


def result_document(kind: str, cell_id: str | None, findings: Sequence[Finding], *, clean: str,
                    extra: Mapping[str, object] | None = None) -> dict[str, object]:
    """The versioned result: ``status`` failed when there is any finding; ``clean`` is the
    summary of a passing check."""
    count = len(findings)
    codes = sorted({f.code for f in findings})
    summary = clean if not count else f"{count} finding{'s' if count != 1 else ''} ({', '.join(codes)})"
    doc: dict[str, object] = {
        "version": 1,
        "kind": kind,
        "cell_id": cell_id,
        "status": "failed" if count else "passed",
        "summary": summary,
        "findings": [f.to_json() for f in findings],
    }
    doc.update(extra or {})
    return doc


def render_text(doc: Mapping[str, object]) -> str:
    """The document for a terminal: the verdict, then one line per finding."""
    lines = [f"{str(doc['status']).upper()}: {doc['summary']}"]
    findings = doc.get("findings")
    for item in findings if isinstance(findings, list) else []:
        if isinstance(item, dict):
            lines.append(f"  [{item.get('code')}] {item.get('message')}")
    return "\n".join(lines) + "\n"


def enforce(doc: Mapping[str, object], *, gate: bool, what: str) -> None:
    """Report mode (``gate`` False) never fails; gate mode raises CheckFailed on findings."""
    if gate and doc.get("status") == "failed":
        raise CheckFailed(f"{what}: {doc.get('summary')}")
