"""The hard size limits of every place a report is delivered, kept as data.

``channels.json`` (next to this module) lists each channel's limit and the unit it is
counted in. It is validated when loaded, so a typo there fails loudly instead of
silently sending an oversized body that the service would reject.

Characters are counted as UTF-16 code units: GitHub and GitLab count JavaScript/Ruby
string lengths, and an emoji is two units there but one Python character. Counting
UTF-16 units is never smaller than ``len(text)``, so staying under it is always safe.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from xcompat.errors import InputError

Unit = Literal["chars", "bytes"]
_DATA = Path(__file__).with_name("channels.json")


@dataclass(frozen=True, kw_only=True)
class Channel:
    name: str
    limit: int
    unit: Unit
    source: str

    def measure(self, text: str) -> int:
        return measure(text, self.unit)

    def fits(self, text: str) -> bool:
        return self.measure(text) <= self.limit


@dataclass(frozen=True, kw_only=True)
class AnnotationLimits:
    per_request: int
    per_check_run: int
    workflow_command_errors_per_step: int
    workflow_command_warnings_per_step: int


@dataclass(frozen=True, kw_only=True)
class Limits:
    channels: dict[str, Channel]
    annotations: AnnotationLimits
    log_tail_lines: int
    log_tail_chars: int

    def channel(self, name: str) -> Channel:
        try:
            return self.channels[name]
        except KeyError:
            known = ", ".join(sorted(self.channels))
            raise InputError(f"unknown report channel {name!r}", hint=f"known channels: {known}") from None


def measure(text: str, unit: Unit) -> int:
    if unit == "bytes":
        return len(text.encode("utf-8"))
    # UTF-16 code units: characters outside the BMP count twice.
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def _positive_int(value: object, where: str, source: Path) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise InputError(f"{where}: expected a positive integer, got {value!r}", file=source)
    return value


def parse_limits(document: object, source: Path = _DATA) -> Limits:
    """Validate and convert the limits document; raise InputError naming the bad key."""
    if not isinstance(document, dict) or document.get("version") != 1:
        raise InputError('expected an object with "version": 1', file=source)
    raw_channels = document.get("channels")
    if not isinstance(raw_channels, dict) or not raw_channels:
        raise InputError("channels: expected a non-empty object", file=source)
    channels: dict[str, Channel] = {}
    for name, spec in raw_channels.items():
        if not isinstance(spec, dict):
            raise InputError(f"channels.{name}: expected an object", file=source)
        unit = spec.get("unit")
        if unit not in ("chars", "bytes"):
            raise InputError(f"channels.{name}.unit: expected 'chars' or 'bytes', got {unit!r}", file=source)
        channels[name] = Channel(
            name=name,
            limit=_positive_int(spec.get("limit"), f"channels.{name}.limit", source),
            unit=unit,
            source=str(spec.get("source", "")),
        )
    ann = document.get("annotations")
    if not isinstance(ann, dict):
        raise InputError("annotations: expected an object", file=source)
    annotations = AnnotationLimits(
        **{
            key: _positive_int(ann.get(key), f"annotations.{key}", source)
            for key in (
                "per_request",
                "per_check_run",
                "workflow_command_errors_per_step",
                "workflow_command_warnings_per_step",
            )
        }
    )
    return Limits(
        channels=channels,
        annotations=annotations,
        log_tail_lines=_positive_int(document.get("log_tail_lines"), "log_tail_lines", source),
        log_tail_chars=_positive_int(document.get("log_tail_chars"), "log_tail_chars", source),
    )


@cache
def load_limits() -> Limits:
    return parse_limits(json.loads(_DATA.read_text(encoding="utf-8")), _DATA)
