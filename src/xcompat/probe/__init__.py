"""Describe this machine's device stack and check it for native extensions.

Public API::

    from xcompat.probe import collect_probe
    doc = collect_probe(wheel=None)  # the "probe" result envelope
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["collect_probe"]


def collect_probe(*, wheel: str | Path | None = None, **kwargs: Any) -> dict[str, Any]:
    from xcompat.probe.collect import collect_probe as _collect

    return _collect(wheel=wheel, **kwargs)
