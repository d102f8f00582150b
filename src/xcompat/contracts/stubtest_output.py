"""stubtest's ``--concise`` output, read into findings.

Each error is one line, ``OBJECT WHAT`` (``pkg.mod.f is not present at runtime``), the object
a dotted name or the words stubtest's own; an
allowlist entry that matched nothing is ``note: unused allowlist entry ENTRY``. Anything else
(a mypy compile error, a traceback) is not a finding about one object: it is returned apart,
so the caller can tell a failed run from a clean one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xcompat.contracts.result import Finding

MAX_FINDINGS = 5_000
_ERROR = re.compile(r"^(?P<object>[A-Za-z_][\w]*(?:\.[A-Za-z_\w][\w]*)*) (?P<what>\S.*)$")
_UNUSED = re.compile(r"^note: unused allowlist entry (?P<entry>.+)$")

# stubtest's words -> the finding's stable code
_CODES = (
    ("is not present at runtime", "missing-at-runtime"),
    ("is not present in stub", "missing-in-stub"),
    ("failed to find stubs", "no-stubs"),
    ("failed to import", "import-failed"),
    ("is inconsistent", "inconsistent"),
    ("variable differs from runtime type", "type-differs"),
    ("is not a function", "kind-differs"),
    ("is not a type", "kind-differs"),
    ("is a ", "kind-differs"),
)


@dataclass(frozen=True)
class StubtestOutput:
    findings: list[Finding]
    other: list[str]  # lines that are not one object's error
    truncated: bool  # more than MAX_FINDINGS errors


def code_of(what: str) -> str:
    return next((code for words, code in _CODES if words in what), "stub-mismatch")


def parse_concise(text: str) -> StubtestOutput:
    findings: list[Finding] = []
    other: list[str] = []
    truncated = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if len(findings) >= MAX_FINDINGS:
            truncated = True
            break
        unused = _UNUSED.match(line)
        error = None if unused or line.startswith(("error:", "note:")) else _ERROR.match(line)
        if error and "." not in error["object"] and code_of(error["what"]) == "stub-mismatch":
            error = None  # a bare word and words stubtest never writes: "Traceback (most recent ...)"
        if unused:
            entry = unused["entry"]
            findings.append(Finding("unused-allowlist-entry", f"allowlist entry {entry} matched nothing",
                                    {"object": entry, "problem": "unused allowlist entry"}))
        elif error:
            findings.append(Finding(code_of(error["what"]), f"{error['object']} {error['what']}",
                                    {"object": error["object"], "problem": error["what"]}))
        else:
            other.append(line[:500])
    return StubtestOutput(findings, other[:50], truncated)
