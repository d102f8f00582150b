"""The ISA levels of each architecture and what needs them (``levels.json``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

from xcompat.errors import InputError


@dataclass(frozen=True)
class ArchLevels:
    arch: str
    levels: tuple[str, ...]  # lowest first
    groups: dict[str, str]  # capstone group name -> level
    mnemonics: dict[str, str]  # mnemonic -> level
    encodings: dict[int, str]  # A64 top-level encoding class (bits 28:25) -> level
    probes: frozenset[str]  # symbols by which an object asks the CPU for its features
    probe_mnemonics: frozenset[str]

    def rank(self, level: str) -> int:
        if level not in self.levels:
            raise InputError(f"unknown ISA level {level!r} for {self.arch}",
                             hint=f"use one of: {', '.join(self.levels)}")
        return self.levels.index(level)


@cache
def all_levels() -> dict[str, ArchLevels]:
    text = resources.files("xcompat.isa").joinpath("levels.json").read_text(encoding="utf-8")
    rows = json.loads(text)["arches"]
    return {arch: ArchLevels(arch=arch, levels=tuple(row["levels"]), groups=dict(row["groups"]),
                             mnemonics=dict(row["mnemonics"]),
                             encodings={int(k): v for k, v in row.get("encodings", {}).items()},
                             probes=frozenset(row["probes"]), probe_mnemonics=frozenset(row["probe_mnemonics"]))
            for arch, row in rows.items()}


def levels_for(arch: str) -> ArchLevels:
    table = all_levels()
    if arch not in table:
        raise InputError(f"no ISA levels are known for {arch}", hint=f"ISA floors exist for: {', '.join(table)}")
    return table[arch]
