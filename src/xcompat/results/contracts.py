"""The contract stage kinds (stubs, runtime libraries, python floor) and how a matrix key judges them.

Each kind has a key of the matrix's ``contracts`` section: ``report`` (the default) shows its
findings and never makes anything red, so a failed or errored contract result is not counted;
``gate`` counts it as any other stage, except that a result whose findings are all known
(``new_findings`` is 0: the baseline's import maps the same) is not counted either. The
python-floor result belongs to no cell: under ``gate`` it makes the run red, under ``report``
it does not, whatever the default rule for results without a cell says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from xcompat.results.fields import field_int, field_list, field_obj, field_str
from xcompat.results.stage_result import StageResult

if TYPE_CHECKING:
    from xcompat.settings import Settings


@dataclass(frozen=True)
class ContractKind:
    kind: str  # the result kind (and stage name)
    key: str  # the matrix key that judges it
    label: str  # its name in the report
    result_file: str  # where a run writes it


STUBS = ContractKind("contracts-stubs", "contracts.stubs", "stubs", "contracts/stubs.json")
LIBRARIES = ContractKind("contracts-runtime-libraries", "contracts.runtime-libraries", "runtime libraries",
                         "contracts/runtime-libraries.json")
FLOOR = ContractKind("contracts-python-floor", "contracts.python-floor", "python floor",
                     "contracts/python-floor.json")
CONTRACTS: Mapping[str, ContractKind] = {c.kind: c for c in (STUBS, LIBRARIES, FLOOR)}


def mode(kind: str, settings: Settings | None) -> str:
    """``report`` or ``gate``: the matrix key of ``kind`` (no settings known: ``report``)."""
    if settings is None:
        return "report"
    value = settings.value(CONTRACTS[kind].key)
    return value if value in ("report", "gate") else "report"


def new_findings(document: Mapping[str, Any]) -> int:
    """How many of the findings are new: ``new_findings`` when the stage compared them with a
    baseline, else every finding."""
    new = document.get("new_findings")
    if isinstance(new, int) and not isinstance(new, bool) and new >= 0:
        return new
    findings = document.get("findings")
    return len(findings) if isinstance(findings, list) else 0


def not_counted(result: StageResult, settings: Settings | None) -> str | None:
    """Why ``result`` does not count against its cell (or the run) under its matrix key; None: it counts."""
    if result.status == "passed":
        return None
    contract = CONTRACTS[result.kind]
    if mode(result.kind, settings) == "report":
        return f"{contract.key}: report (findings are shown, never red)"
    if result.status == "failed" and isinstance(result.data.get("findings"), list) and not new_findings(result.data):
        return f"{contract.key}: gate, and no finding is new against the baseline"
    return None


def contract_findings(result: StageResult) -> list[tuple[str, str]]:
    """``(code, message)`` of each finding; a findings field of the wrong type is an ``InputError``."""
    found = []
    for i, item in enumerate(field_list(result, result.data, "findings", "$")):
        entry = field_obj(result, item, f"$.findings[{i}]")
        found.append((field_str(result, entry, "code", f"$.findings[{i}]"),
                      field_str(result, entry, "message", f"$.findings[{i}]")))
    field_int(result, result.data, "new_findings", "$")
    return found


def contract_changes(result: StageResult) -> list[str]:
    """The runtime libraries' differences from the baseline's import, one line each."""
    lines = []
    for i, item in enumerate(field_list(result, result.data, "changes", "$")):
        entry = field_obj(result, item, f"$.changes[{i}]")
        change = field_str(result, entry, "change", f"$.changes[{i}]")
        library = field_str(result, entry, "library", f"$.changes[{i}]")
        lines.append(f"{change} against the baseline: {library}")
    return lines


_BUNDLED = ("project", "distribution", "outside")  # what a cell's environment brings, not its Python


def bundled_libraries(result: StageResult) -> dict[str, str]:
    """``name -> build id`` (else path) of the libraries a runtime-libraries result lists that
    the project, another wheel or an outside folder brings (the interpreter's and the system's
    differ between cells by design); a name is the SONAME, else the file name."""
    found: dict[str, str] = {}
    for i, item in enumerate(field_list(result, result.data, "libraries", "$")):
        entry = field_obj(result, item, f"$.libraries[{i}]")
        path = field_str(result, entry, "path", f"$.libraries[{i}]")
        if field_str(result, entry, "owner", f"$.libraries[{i}]") in _BUNDLED:
            name = field_str(result, entry, "soname", f"$.libraries[{i}]") or path.rpartition("/")[2]
            found.setdefault(name, field_str(result, entry, "build_id", f"$.libraries[{i}]") or path)
    return found


def cell_differences(reference: StageResult, other: StageResult) -> str | None:
    """What ``other``'s cell maps that ``reference``'s does not, lacks, or maps from another build
    (the libraries wheels bring); None when they agree."""
    a, b = bundled_libraries(reference), bundled_libraries(other)
    parts = [f"{what}: {', '.join(sorted(names)[:10])}" for what, names in (
        ("adds", b.keys() - a.keys()), ("lacks", a.keys() - b.keys()),
        ("another build of", {n for n in a.keys() & b.keys() if a[n] != b[n]})) if names]
    return f"against cell {reference.cell_id}: " + "; ".join(parts) if parts else None


# -- a finding is reported once, by the stage whose question it answers ---------------------------

ABI_CLAIMS = ("python_api_removed", "python_signature_changed")  # old != new, verified at run time


def abi_claims(abi: Mapping[str, Any]) -> set[str]:
    """The dotted names an ABI diff reports as changed between the releases' runtimes."""
    findings = abi.get("findings")
    return {str(f["symbol"]) for f in findings if isinstance(f, dict) and f.get("kind") in ABI_CLAIMS
            and isinstance(f.get("symbol"), str)} if isinstance(findings, list) else set()


def hand_to_abi(stubs: dict[str, Any], claims: set[str]) -> int:
    """Move the stub findings on objects in ``claims`` (or inside them) to ``reported_by_abi``;
    how many moved. The status and summary then say what is left."""
    def claimed(finding: Any) -> bool:
        name = str(finding.get("object") or "") if isinstance(finding, dict) else ""
        return any(name == c or name.startswith(c + ".") for c in claims)

    found = stubs.get("findings")
    findings: list[Any] = found if isinstance(found, list) else []
    moved = [f for f in findings if claimed(f)]
    if not moved:
        return 0
    kept = [f for f in findings if not claimed(f)]
    earlier = stubs.get("reported_by_abi")
    stubs["findings"], stubs["reported_by_abi"] = kept, [*(earlier if isinstance(earlier, list) else []), *moved]
    stubs["status"] = "failed" if kept else "passed"
    codes = sorted({str(f.get("code")) for f in kept})
    left = f"{len(kept)} finding{'s' if len(kept) != 1 else ''} ({', '.join(codes)})" if kept else "no finding left"
    stubs["summary"] = f"{left}; {len(moved)} on objects the ABI diff reports as changed between releases"
    return len(moved)


def reported_once(results: Sequence[StageResult]) -> list[StageResult]:
    """``results`` with each stub finding that an ABI result among them claims handed to it (as
    the stubs stage of ``xcompat run`` does when it can read the run's diff; in CI the stubs job
    cannot, so the report and the gate apply the rule to what they are given)."""
    claims: set[str] = set()
    for result in results:
        if result.kind == "abi":
            claims |= abi_claims(result.data)
    if not claims:
        return list(results)
    out = []
    for result in results:
        if result.kind == STUBS.kind and result.status in ("passed", "failed") and not result.refused:
            doc = dict(result.data)
            if hand_to_abi(doc, claims):
                result = replace(result, status=str(doc["status"]), summary=str(doc["summary"]), data=doc)
        out.append(result)
    return out


def handed_to_abi(result: StageResult) -> list[str]:
    """The objects of the stub findings the ABI stage reports instead (``reported_by_abi``)."""
    names = []
    for i, item in enumerate(field_list(result, result.data, "reported_by_abi", "$")):
        names.append(field_str(result, field_obj(result, item, f"$.reported_by_abi[{i}]"), "object",
                               f"$.reported_by_abi[{i}]"))
    return names


def check_contract(result: StageResult) -> None:
    contract_findings(result)
    contract_changes(result)
    handed_to_abi(result)
    bundled_libraries(result)
