"""List the instructions of a shared object that need more than an ISA floor, per function.

Each function's code is disassembled with capstone and each instruction given the level it
needs: by its capstone group (``avx2``), by its mnemonic where capstone gives no group
(``popcnt``), or on aarch64 by its top-level encoding class (SVE is class ``0010``, which
capstone 5 does not tag). A function holding instructions above the floor is a finding.

Whether such a function can run on a floor CPU depends on whether it is reached only after
asking the CPU (``__builtin_cpu_supports``, ``getauxval(AT_HWCAP)``, ``cpuid``). A static scan
cannot follow every path, so it says what it can: an object that never asks the CPU has
*unguarded* wide code (it will fault on a floor CPU when reached); one that asks has
*dispatched* wide code (probably guarded; the floor run is what proves it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xcompat.abi.elf.functions import CodeListing, Function, read_functions
from xcompat.errors import UnavailableError
from xcompat.isa.levels import ArchLevels, levels_for

# capstone names an instruction's groups; these are not features
_NOT_FEATURES = frozenset({"jump", "call", "ret", "return", "int", "iret", "privilege", "branch_relative",
                           "mode64", "mode32", "not64bitmode", "novlx", "vlx", "fpu", "cmov", "sse1", "sse2",
                           "mmx", "neon", "fparmv8", "crypto", "crc", "pointer"})
EXAMPLES = 3  # instructions kept per function as evidence


@dataclass
class FunctionFinding:
    function: str
    level: str  # the highest level its instructions need
    count: int = 0  # instructions above the floor
    examples: list[str] = field(default_factory=list)  # "vpaddd ymm0, ymm1, ymm1 (avx2)"

    def to_dict(self) -> dict[str, Any]:
        return {"function": self.function, "level": self.level, "count": self.count, "examples": self.examples}


@dataclass
class ObjectScan:
    path: str
    arch: str
    floor: str
    probes_cpu: bool  # the object asks the CPU what it has
    functions: list[FunctionFinding]

    @property
    def verdict(self) -> str:
        if not self.functions:
            return "within floor"
        return "dispatched" if self.probes_cpu else "unguarded"

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "arch": self.arch, "floor": self.floor, "probes_cpu": self.probes_cpu,
                "verdict": self.verdict, "functions": [f.to_dict() for f in self.functions]}


def _disassembler(arch: str) -> Any:
    try:
        import capstone
    except ImportError:
        raise UnavailableError("the ISA scan needs capstone", hint="pip install 'xcompat[abi]'") from None
    modes = {"x86_64": (capstone.CS_ARCH_X86, capstone.CS_MODE_64),
             "aarch64": (capstone.CS_ARCH_ARM64, capstone.CS_MODE_ARM)}
    if arch not in modes:
        raise UnavailableError(f"the ISA scan cannot read {arch} code", hint=f"it reads: {', '.join(modes)}")
    engine = capstone.Cs(*modes[arch])
    engine.detail = True
    engine.skipdata = True  # data inside a function (jump tables) is passed over, not a stop
    return engine


def _need(insn: Any, rules: ArchLevels) -> tuple[int, str] | None:
    """(rank, what) of the level ``insn`` needs above the lowest one, or None."""
    best: tuple[int, str] | None = None
    if rules.encodings and len(insn.bytes) == 4:
        word = int.from_bytes(insn.bytes, "little")
        level = rules.encodings.get((word >> 25) & 0xF)
        if level is not None:
            best = (rules.rank(level), "sve")
    for group in insn.groups:
        name = insn.group_name(group) or ""
        level = rules.groups.get(name)
        if level is not None and name not in _NOT_FEATURES and (best is None or rules.rank(level) > best[0]):
            best = (rules.rank(level), name)
    level = rules.mnemonics.get(insn.mnemonic)
    if level is not None and (best is None or rules.rank(level) > best[0]):
        best = (rules.rank(level), insn.mnemonic)
    return best


def _scan_function(engine: Any, function: Function, rules: ArchLevels, floor_rank: int) -> tuple[
        FunctionFinding | None, bool]:
    finding: FunctionFinding | None = None
    probes = False
    for insn in engine.disasm(function.code, function.address):
        if insn.mnemonic in rules.probe_mnemonics:
            probes = True
        need = _need(insn, rules)
        if need is None or need[0] <= floor_rank:
            continue
        if finding is None:
            finding = FunctionFinding(function.name, rules.levels[need[0]])
        elif need[0] > rules.rank(finding.level):
            finding.level = rules.levels[need[0]]
        finding.count += 1
        if len(finding.examples) < EXAMPLES:
            finding.examples.append(f"{insn.mnemonic} {insn.op_str} ({need[1]})".replace("  ", " "))
    return finding, probes


def scan_listing(listing: CodeListing, floor: str, *, path: str = "") -> ObjectScan:
    rules = levels_for(listing.arch)
    floor_rank = rules.rank(floor)
    engine = _disassembler(listing.arch)
    probes = bool(listing.imports & rules.probes) or any(f.name in rules.probes for f in listing.functions)
    findings = []
    for function in listing.functions:
        finding, asks = _scan_function(engine, function, rules, floor_rank)
        probes = probes or asks
        if finding is not None:
            findings.append(finding)
    return ObjectScan(path=path, arch=listing.arch, floor=floor, probes_cpu=probes, functions=findings)


def scan_object(path: Path, floor: str) -> ObjectScan:
    """The scan of the shared object at ``path`` against ``floor``."""
    return scan_listing(read_functions(path), floor, path=str(path))


def scan_objects(paths: Iterable[Path], floor: str) -> list[ObjectScan]:
    return [scan_object(path, floor) for path in paths]
