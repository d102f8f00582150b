"""Fit a document made of sections into a channel's hard size limit.

A section offers several renditions, most detailed first; its last rendition is a small
stub (a ``<details>`` line pointing to the full report). When the whole document is too
large, the least important section that can still shrink steps down one rendition, and
this repeats until it fits. Sections are never cut in the middle, so a table is either
whole or replaced by its smaller form.

The loop is bounded by the total number of renditions. If even every stub together is
too large (only possible with absurdly small limits), the document is cut at the last
whole line that fits and ends with a pointer to the full report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xcompat.report.channels import Channel, Unit, measure


@dataclass(frozen=True, kw_only=True)
class Section:
    key: str
    # 0 is never shrunk; larger numbers shrink first.
    priority: int
    renditions: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.renditions:
            raise ValueError(f"section {self.key!r} has no rendition")


@dataclass(frozen=True, kw_only=True)
class Fitted:
    text: str
    levels: dict[str, int]  # section key -> chosen rendition index
    folded: tuple[str, ...]  # keys of sections not shown in full
    truncated: bool = False


SEPARATOR = "\n\n"


def _join(parts: Sequence[str]) -> str:
    return SEPARATOR.join(p.strip("\n") for p in parts if p.strip()) + "\n"


def fit_sections(
    sections: Sequence[Section],
    limit: int | Channel | None,
    *,
    unit: Unit = "chars",
    overflow_note: str = "",
) -> Fitted:
    """Choose a rendition per section so the joined text fits ``limit``."""
    if isinstance(limit, Channel):
        unit = limit.unit
        limit = limit.limit
    levels = {s.key: 0 for s in sections}

    def render() -> str:
        return _join([s.renditions[levels[s.key]] for s in sections])

    text = render()
    if limit is None:
        return Fitted(text=text, levels=levels, folded=())
    # Shrinking order: least important first; among equals, the later section first.
    order = sorted(
        (s for s in sections if s.priority > 0),
        key=lambda s: (-s.priority, -list(sections).index(s)),
    )
    size = {s.key: [measure(r, unit) for r in s.renditions] for s in sections}
    total = measure(text, unit)
    while total > limit:
        step = next((s for s in order if levels[s.key] < len(s.renditions) - 1), None)
        if step is None:
            break
        before = size[step.key][levels[step.key]]
        levels[step.key] += 1
        total += size[step.key][levels[step.key]] - before
        # Empty renditions also drop a separator; recompute exactly once it might fit.
        if total <= limit + 16:
            text = render()
            total = measure(text, unit)
    text = render()
    if measure(text, unit) <= limit:
        # Give room freed by later steps back to the most important sections first.
        for s in sorted((s for s in sections if s.priority > 0), key=lambda s: s.priority):
            while levels[s.key] > 0:
                levels[s.key] -= 1
                candidate = render()
                if measure(candidate, unit) > limit:
                    levels[s.key] += 1
                    break
                text = candidate
    folded = tuple(s.key for s in sections if levels[s.key] > 0)
    if measure(text, unit) <= limit:
        return Fitted(text=text, levels=levels, folded=folded)
    return Fitted(text=cut_at_line(text, limit, unit, overflow_note), levels=levels, folded=folded, truncated=True)


def cut_at_line(text: str, limit: int, unit: Unit, note: str = "") -> str:
    """Keep whole lines that fit, then ``note``; never exceeds ``limit``."""
    tail = ("\n" + note.strip() + "\n") if note.strip() else "\n"
    if measure(tail, unit) > limit:
        tail = ""
    room = limit - measure(tail, unit)
    kept: list[str] = []
    used = 0
    for line in text.split("\n"):
        cost = measure(line, unit) + 1
        if used + cost > room:
            break
        kept.append(line)
        used += cost
    out = "\n".join(kept).rstrip("\n") + tail
    while measure(out, unit) > limit and out:  # only for limits smaller than one line
        out = out[:-1]
    return out
