"""The release gate's checks of the contract results that belong to no cell (the python floor).

A cell's contract results are judged with its cell (``xcompat.gate.cell_checks``). One of no
cell is judged by its matrix key alone (``xcompat.results.contracts``): under ``gate`` a
failed one refuses the release; under ``report`` it passes and says what it found.
"""

from __future__ import annotations

from xcompat.gate.checks import CheckOutcome
from xcompat.results.contracts import CONTRACTS
from xcompat.results.stages import excused
from xcompat.results.verdict import Verdict
from xcompat.settings import Settings


def contract_checks(verdict: Verdict, settings: Settings | None) -> list[CheckOutcome]:
    checks = []
    for result in verdict.global_results:
        if result.kind not in CONTRACTS:
            continue
        name = f"contracts:{CONTRACTS[result.kind].label.replace(' ', '-')}"
        why = excused(result, settings)
        if result.status in ("passed", "skipped") or why is not None:
            shown = f" ({why})" if why else ""
            checks.append(CheckOutcome(name=name, passed=True,
                                       reason=f"got {result.status}: {result.summary}{shown}"))
            continue
        checks.append(CheckOutcome(
            name=name, passed=False, reason=f"got {result.kind} {result.status}: {result.summary}, expected "
            f"passed ({CONTRACTS[result.kind].key}: gate)", details={"path": str(result.source)}))
    return checks
