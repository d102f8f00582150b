"""A status badge next to the report: shields.io endpoint JSON and a self-contained SVG.

``badge.json`` follows shields.io's endpoint format (``schemaVersion`` 1, ``label``,
``message``, ``color``): publish it anywhere shields can fetch and use
``https://img.shields.io/endpoint?url=<its URL>``. ``badge.svg`` is the same badge drawn
here, for places that should not depend on shields (an artifact, GitHub Pages).
Both are validated against ``schemas/badge.schema.json``.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from xcompat.jsonio import atomic_write_text, write_json
from xcompat.report.model import Report

COLORS = {"success": "brightgreen", "failure": "red", "neutral": "lightgrey"}
# shields.io's named colours, as hex for the SVG.
HEX = {"brightgreen": "#4c1", "red": "#e05d44", "lightgrey": "#9f9f9f"}
# Advance widths of Verdana at 11 px (what shields uses), rounded; others count as 7.
_WIDE = {**dict.fromkeys("mwMW", 10), **dict.fromkeys("ABCDEGHKNOPQRSUVXYZ", 8)}
_NARROW = {**dict.fromkeys("fijlrt ", 4), **dict.fromkeys(".,:;|!'/()[]", 4), "I": 5}


def endpoint(report: Report, label: str = "xcompat") -> dict[str, Any]:
    required = [c for c in report.cells if c.required]
    passed = sum(1 for c in required if c.status == "passed")
    if report.conclusion == "success":
        message = f"passed {passed}/{len(required)}" if required else "passed"
    elif report.conclusion == "failure":
        message = f"failed {passed}/{len(required)}" if required else "failed"
    else:
        message = "no results"
    return {"schemaVersion": 1, "label": label, "message": message, "color": COLORS[report.conclusion]}


def text_width(text: str) -> int:
    return sum(_WIDE.get(ch, _NARROW.get(ch, 7)) for ch in text)


def svg(badge: dict[str, Any]) -> str:
    """A flat badge like shields.io draws it: grey label, coloured message, text with a shadow."""
    label, message = str(badge["label"]), str(badge["message"])
    color = HEX.get(str(badge["color"]), "#9f9f9f")
    lw, mw = text_width(label) + 10, text_width(message) + 10
    width = lw + mw
    title = escape(f"{label}: {message}")
    el, em = escape(label), escape(message)

    def text(x: float, value: str) -> str:
        return (
            f'<text x="{x}" y="15" fill="#010101" fill-opacity=".3">{value}</text>'
            f'<text x="{x}" y="14">{value}</text>'
        )

    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="20" role="img" aria-label="{title}">'
        f"<title>{title}</title>"
        f'<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/>'
        f'<stop offset="1" stop-opacity=".1"/></linearGradient>'
        f'<clipPath id="r"><rect width="{width}" height="20" rx="3" fill="#fff"/></clipPath>'
        f'<g clip-path="url(#r)"><rect width="{lw}" height="20" fill="#555"/>'
        f'<rect x="{lw}" width="{mw}" height="20" fill="{color}"/>'
        f'<rect width="{width}" height="20" fill="url(#s)"/></g>'
        f'<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">'
        f"{text(lw / 2, el)}{text(lw + mw / 2, em)}</g></svg>\n"
    )


def write_badge(report: Report, folder: str | Path, *, label: str = "xcompat") -> tuple[Path, Path]:
    """Write ``badge.json`` and ``badge.svg`` into ``folder`` (atomically); returns their paths."""
    folder = Path(folder)
    doc = endpoint(report, label)
    json_path = write_json(folder / "badge.json", doc, schema="badge")
    svg_path = atomic_write_text(folder / "badge.svg", svg(doc))
    return json_path, svg_path
