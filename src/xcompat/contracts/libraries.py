"""The runtime-libraries check: the shared objects a process maps, who owns each, and the
findings on them (two copies of one runtime, a library from an unexpected place).

The import snapshot (one fresh process) may be joined by what the test processes mapped at
their end (:mod:`.test_maps`): a library is then listed once with where it was seen, and two
copies of a runtime are a finding only when one process held both.
"""

from __future__ import annotations

import os
import struct
import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from xcompat.contracts.maps import Maps, is_shared_object, read_maps
from xcompat.contracts.owners import OwnerIndex
from xcompat.contracts.result import Finding, result_document
from xcompat.contracts.runtimes import copy_key, family_of
from xcompat.contracts.test_maps import TestMaps

KIND = "contracts-runtime-libraries"


@dataclass(frozen=True)
class Library:
    path: str
    soname: str | None
    build_id: str | None
    owner: str  # project | distribution | interpreter | system | outside
    distribution: str | None
    family: str | None
    carried_runtime: str | None  # why it holds its own static C++ runtime beside torch's
    seen_in: tuple[str, ...] = ("import",)  # import | tests

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "soname": self.soname, "build_id": self.build_id, "owner": self.owner,
                "distribution": self.distribution, "family": self.family,
                "carried_runtime": self.carried_runtime, "seen_in": list(self.seen_in)}


def _elf_facts(path: str) -> tuple[str | None, str | None, str | None]:
    """SONAME, build ID and the static-C++-runtime finding of ``path``; Nones when unreadable
    (a deleted file, one this user cannot read, one that is not ELF)."""
    from xcompat.abi.elf import ElfError, read_elf
    from xcompat.abi.elf.notes import read_build_id
    from xcompat.abi.runtimes import TORCH_LIBRARY
    from xcompat.cxxruntime import beside_torch

    name = os.path.basename(path)
    if not os.path.isfile(path):  # gone, or a device or pipe a test process had mapped: never opened
        return None, None, None
    try:
        info = read_elf(path, display_name=name, want_fatbin=False, symbols=False)
        build_id = read_build_id(path, display_name=name)
        carried = None
        if any(TORCH_LIBRARY.match(n) for n in info.needed):  # only then is the symbol table read
            full = read_elf(path, display_name=name, want_fatbin=False)
            carried = beside_torch(name, full.needed, full.exports)
    except (OSError, ElfError, struct.error):
        return None, None, None
    return info.soname, build_id, carried


def describe(maps: Maps, owners: OwnerIndex) -> list[Library]:
    """One :class:`Library` per shared object of ``maps``."""
    return describe_paths([m.path for m in maps.files], owners)


def describe_paths(paths: Sequence[str], owners: OwnerIndex, seen_in: tuple[str, ...] = ("import",)) -> list[Library]:
    """One :class:`Library` per shared object among ``paths``."""
    found = []
    for path in paths:
        if not is_shared_object(path):
            continue
        soname, build_id, carried = _elf_facts(path)
        owner = owners.owner(path)
        found.append(Library(path, soname, build_id, owner.kind, owner.distribution, family_of(path), carried,
                             seen_in))
    return found


def _duplicates(libraries: Sequence[Library]) -> list[Finding]:
    findings = []
    groups: dict[str, list[Library]] = {}
    for lib in libraries:
        if lib.family is not None:
            groups.setdefault(copy_key(lib.family, lib.path), []).append(lib)
    for libs in groups.values():
        distinct = {os.path.realpath(lib.path): lib for lib in libs}
        if len(distinct) > 1:
            family = libs[0].family
            paths = ", ".join(sorted(distinct))
            findings.append(Finding("duplicate-runtime", f"two copies of the {family} in one process: {paths}",
                                    {"family": family, "paths": paths}))
    return findings


def library_findings(libraries: Sequence[Library], processes: Sequence[Collection[str]] | None = None) -> list[Finding]:
    """Two copies of one runtime in one process, a static C++ runtime beside torch's, a library
    from outside. ``processes``: the paths each process held (None: ``libraries`` are one process)."""
    findings: list[Finding] = []
    seen: set[tuple[object, object]] = set()
    for view in [None] if processes is None else processes:
        for finding in _duplicates(libraries if view is None else [lib for lib in libraries if lib.path in view]):
            key = (finding.fields.get("family"), finding.fields.get("paths"))
            if key not in seen:
                seen.add(key)
                findings.append(finding)
    for lib in libraries:
        if lib.carried_runtime:
            findings.append(Finding("static-cxx-runtime", lib.carried_runtime,
                                    {"family": "C++ runtime (libstdc++)", "paths": lib.path}))
        if lib.owner == "outside":
            by = " by a test process" if lib.seen_in == ("tests",) else ""
            findings.append(Finding("library-outside", f"{lib.path} is loaded{by} from outside the environment, the "
                                    "installed wheels and the system library folders",
                                    {"path": lib.path, "soname": lib.soname}))
    return findings


def snapshot(maps: Maps, owners: OwnerIndex, *, cell_id: str | None = None,
             tests: TestMaps | None = None) -> dict[str, object]:
    """The result document of one process's ``maps``, joined by the test processes' ``tests``."""
    libraries = describe(maps, owners)
    processes = None
    if tests is not None:
        imported = {lib.path for lib in libraries}
        libraries = [replace(lib, seen_in=("import", "tests")) if lib.path in tests.paths else lib
                     for lib in libraries]
        libraries += describe_paths(sorted(tests.paths - imported), owners, ("tests",))
        processes = [imported, *tests.views]
    findings = library_findings(libraries, processes)
    return result_document(KIND, cell_id, findings, clean=f"{len(libraries)} shared objects, one copy of each "
                           "runtime, none from outside", extra={
                               "libraries": [lib.to_json() for lib in libraries],
                               "malformed_lines": maps.malformed})


def snapshot_pid(pid: int, *, sites: Sequence[str], interpreter: Sequence[str], project: str | None = None,
                 cell_id: str | None = None) -> dict[str, object]:
    """The snapshot of process ``pid``; ``sites`` and ``interpreter`` are its installed trees
    and its interpreter's folders (another process's ``sys.path`` cannot be read from here)."""
    return snapshot(read_maps(pid), OwnerIndex(sites, interpreter, project), cell_id=cell_id)


def snapshot_self(*, project: str | None = None, cell_id: str | None = None) -> dict[str, object]:
    """The snapshot of this process, its ``sys.path`` taken as the installed trees."""
    sites = [*sys.path, sys.prefix]  # the environment's own folders count as installed
    return snapshot(read_maps("self"), OwnerIndex(sites, _interpreter_dirs(), project), cell_id=cell_id)


def _interpreter_dirs() -> list[str]:
    import sysconfig

    dirs = {sys.base_prefix, sys.base_exec_prefix, sysconfig.get_config_var("LIBDIR") or ""}
    # a venv's own folders hold the installed wheels; its prefix is not the interpreter's
    return sorted(d for d in dirs if d)
