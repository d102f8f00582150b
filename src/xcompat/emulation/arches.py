"""The architectures xcompat can emulate, one row each (``arches.json``)."""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass
from functools import cache
from importlib import resources

from xcompat.errors import InputError


@dataclass(frozen=True)
class Arch:
    name: str  # as Python's platform tags spell it: aarch64, ppc64le, s390x, x86_64
    debian: str  # Debian's name: arm64, ppc64el, s390x, amd64
    qemu: str  # the suffix of QEMU's user-mode binary: qemu-<qemu>-static
    triplet: str  # GNU triplet of the cross compiler and of multiarch folders
    byteorder: str  # "little" or "big"
    floors: tuple[tuple[str, str], ...]  # ISA level -> QEMU CPU model with exactly its features
    rich: str  # QEMU CPU model with every feature QEMU implements

    @property
    def platform_tag(self) -> str:
        """What ``_PYTHON_HOST_PLATFORM`` and wheel tags say: ``linux-aarch64``."""
        return f"linux-{self.name}"

    def cpu_model(self, floor: str | None) -> str:
        """The QEMU CPU model for ``floor`` (None: the feature-rich model)."""
        if floor is None:
            return self.rich
        models = dict(self.floors)
        if floor not in models:
            raise InputError(f"unknown ISA floor {floor!r} for {self.name}",
                             hint=f"use one of: {', '.join(models)}")
        return models[floor]


@cache
def arches() -> dict[str, Arch]:
    text = resources.files("xcompat.emulation").joinpath("arches.json").read_text(encoding="utf-8")
    rows = json.loads(text)["arches"]
    return {name: Arch(name=name, debian=row["debian"], qemu=row["qemu"], triplet=row["triplet"],
                       byteorder=row["byteorder"], floors=tuple(row["floors"].items()), rich=row["rich"])
            for name, row in rows.items()}


def arch(name: str) -> Arch:
    """The row for ``name``; Debian names (arm64, ppc64el, amd64) are accepted too."""
    table = arches()
    if name in table:
        return table[name]
    for row in table.values():
        if row.debian == name:
            return row
    raise InputError(f"xcompat cannot emulate the architecture {name!r}",
                     hint=f"use one of: {', '.join(table)}")


def host_arch() -> str:
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


def is_emulated(name: str) -> bool:
    """A cell of ``name`` runs emulated on this machine."""
    return arch(name).name != host_arch()
