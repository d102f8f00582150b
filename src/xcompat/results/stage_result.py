"""One stage result as every reader holds it: the common envelope plus the raw document.

``xcompat.results.envelope.parse_envelope`` makes it, after checking every field its kind's
readers use; the readers of the kinds (``xcompat.results.kinds``) and the stage table
(``xcompat.results.stages``) take it, so it sits below all three.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, kw_only=True)
class StageResult:
    """One stage result: the envelope plus the raw document (read through ``xcompat.results.kinds``)."""

    kind: str
    cell_id: str | None
    status: str
    summary: str
    source: str
    data: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    # "FILE: why" when the file was refused (``xcompat.results.collect``): this result stands
    # in for it, failed, so the refusal is counted where the result would have been.
    refused: str = ""
