"""The one reader of ``*_VISIBLE_DEVICES`` and of CUDA's device order.

``CUDA_VISIBLE_DEVICES`` (and HIP's ``HIP_VISIBLE_DEVICES`` / ``ROCR_VISIBLE_DEVICES``)
lists device indices, UUIDs (``GPU-...``) or MIG ids, comma-separated. The runtimes stop
at the first entry they cannot read: ``"0,foo,1"`` makes only device 0 visible, ``"-1"``
or ``""`` none. Every part of xcompat (backend probes, the test runner's GPU slots) reads
the variables through :func:`parse_visible_list`.

Indices in ``CUDA_VISIBLE_DEVICES`` are CUDA's enumeration order, which is *fastest first*
unless ``CUDA_DEVICE_ORDER=PCI_BUS_ID``; NVML always enumerates by PCI bus id. So an NVML
index names the same GPU as a CUDA index only under ``PCI_BUS_ID`` (or when all GPUs are
the same model, where CUDA breaks the tie by PCI bus id). :func:`visible_nvml_devices`
maps the variable onto NVML's devices and says when that mapping is uncertain.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_ENTRY = re.compile(r"^(\d+|GPU-[0-9A-Fa-f-]+|MIG-[0-9A-Za-z/-]+)$")


def parse_visible_list(value: str, *, stop_at_invalid: bool = True) -> list[str]:
    """Split a ``*_VISIBLE_DEVICES`` value the way the runtimes do.

    ``""`` means no device. Everything after the first invalid entry (``-1``, ``foo``) is
    ignored, as CUDA does; with ``stop_at_invalid=False`` invalid entries are skipped."""
    entries: list[str] = []
    for raw in value.split(","):
        entry = raw.strip()
        if not entry:
            continue
        if not _ENTRY.match(entry):
            if stop_at_invalid:
                break
            continue
        entries.append(entry)
    return entries


def visible_count(env: Mapping[str, str], var: str, total: int | None = None) -> int | None:
    """How many devices ``var`` lets through: None = the variable is unset (no limit).
    With ``total`` (devices present), index entries past the end and repeats stop the
    list, as the CUDA runtime does."""
    value = env.get(var)
    if value is None:
        return None
    entries = parse_visible_list(value)
    if total is None:
        return len(entries)
    seen: list[str] = []
    for entry in entries:
        if entry in seen or (entry.isdigit() and int(entry) >= total):
            break
        seen.append(entry)
    return len(seen)


@dataclass(frozen=True, kw_only=True)
class VisibleDevices:
    """NVML devices that ``CUDA_VISIBLE_DEVICES`` leaves visible, in CUDA's order."""

    devices: tuple[Mapping[str, Any], ...]
    order: str  # "PCI_BUS_ID" or "FASTEST_FIRST"
    certain: bool  # False when CUDA's order may differ from NVML's for these GPUs
    notes: tuple[str, ...] = field(default=())


def _cuda_order(devices: Sequence[Mapping[str, Any]], order: str) -> tuple[list[Mapping[str, Any]], bool, str | None]:
    """NVML devices in CUDA's enumeration order (and whether that order is certain)."""
    by_bus = sorted(devices, key=lambda d: (str(d.get("pci_bus_id") or ""), int(d.get("index", 0))))
    if order == "PCI_BUS_ID":
        return by_bus, True, None
    models = {(d.get("name"), d.get("compute_capability")) for d in devices}
    if len(models) <= 1:
        return by_bus, True, None  # identical GPUs: CUDA breaks the tie by PCI bus id
    # FASTEST_FIRST ranks by an internal estimate; newest compute capability first is the
    # usual outcome but not a promise.
    guess = sorted(by_bus, key=lambda d: tuple(-int(x) for x in str(d.get("compute_capability") or "0.0").split(".")))
    return guess, False, (
        "mixed GPU models and CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA indices may not match NVML's; "
        "set CUDA_DEVICE_ORDER=PCI_BUS_ID so that cuda:N is NVML device N"
    )


def visible_nvml_devices(devices: Sequence[Mapping[str, Any]], env: Mapping[str, str]) -> VisibleDevices:
    """Apply ``CUDA_DEVICE_ORDER`` and ``CUDA_VISIBLE_DEVICES`` to NVML's device list.

    Entries are CUDA indices (in CUDA's order), ``GPU-<uuid>`` (prefixes allowed, as CUDA
    does) or MIG ids (kept as the parent GPU is unknown here, counted as one device)."""
    order = "PCI_BUS_ID" if env.get("CUDA_DEVICE_ORDER", "").strip().upper() == "PCI_BUS_ID" else "FASTEST_FIRST"
    ordered, certain, note = _cuda_order(devices, order)
    notes = [note] if note else []
    value = env.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return VisibleDevices(devices=tuple(ordered), order=order, certain=certain, notes=tuple(notes))
    chosen: list[Mapping[str, Any]] = []
    for entry in parse_visible_list(value):
        if entry.isdigit():
            i = int(entry)
            if i >= len(ordered) or ordered[i] in chosen:
                break  # CUDA stops at an ordinal past the end or a repeat
            chosen.append(ordered[i])
        elif entry.startswith("GPU-"):
            matches = [d for d in ordered if str(d.get("uuid") or "").startswith(entry)]
            if len(matches) != 1 or matches[0] in chosen:
                break
            chosen.append(matches[0])
        else:  # MIG-...
            chosen.append({"index": None, "name": entry, "mig": True})
            notes.append(f"{entry}: a MIG instance; its parent GPU is not resolved here")
    entries = parse_visible_list(value)
    if entries and not any(e.isdigit() for e in entries) and not certain:
        certain = True  # UUIDs name GPUs whatever the order
        notes = [n for n in notes if n != note]
    return VisibleDevices(devices=tuple(chosen), order=order, certain=certain, notes=tuple(notes))
