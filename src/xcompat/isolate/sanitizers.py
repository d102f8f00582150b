"""Memory-checker reports (valgrind memcheck XML, compute-sanitizer text) as one finding format.

Both tools describe the same things (a leak, an invalid read or write, a bad free, an
uninitialised read) with different words; ``Finding`` is the shared shape, ``category``
the shared vocabulary, and ``key`` a stable hash of category plus the first frames that
are not the allocator itself, so the same bug reported by many tests or by both tools
collapses into one entry (``dedupe``).
"""

from __future__ import annotations

import hashlib
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from xcompat.errors import InputError
from xcompat.isolate.outcomes import Outcome

# valgrind <kind> -> category. Leak kinds we do not report (possibly lost, still
# reachable) are filtered out by the flags we pass; listed here so the mapping is total.
VALGRIND_CATEGORIES: dict[str, str] = {
    "Leak_DefinitelyLost": "leak",
    "Leak_IndirectlyLost": "leak",
    "Leak_PossiblyLost": "leak",
    "Leak_StillReachable": "leak",
    "InvalidRead": "invalid-read",
    "InvalidWrite": "invalid-write",
    "InvalidJump": "invalid-read",
    "InvalidFree": "invalid-free",
    "MismatchedFree": "invalid-free",
    "FishyValue": "invalid-free",
    "UninitCondition": "uninitialized",
    "UninitValue": "uninitialized",
    "SyscallParam": "uninitialized",
    "ClientCheck": "other",
    "Overlap": "other",
}
REPORTED_LEAK_KINDS = frozenset({"Leak_DefinitelyLost", "Leak_IndirectlyLost"})

# compute-sanitizer header line -> category, first match wins.
SANITIZER_HEADERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^Leaked (\d+) bytes"), "leak"),
    (re.compile(r"^Invalid __\w+__ read\b"), "invalid-read"),
    (re.compile(r"^Invalid __\w+__ write\b"), "invalid-write"),
    (re.compile(r"^Invalid __\w+__ atomic\b"), "invalid-write"),
    (re.compile(r"^Uninitialized __\w+__ memory read\b"), "uninitialized"),
    (re.compile(r"^(Error: )?Race reported\b|^Race reported\b"), "race"),
    (re.compile(r"^Barrier error\b|^Invalid arguments to __syncthreads|synccheck", re.IGNORECASE), "sync"),
    (re.compile(r"^Malloc/Free error\b"), "invalid-free"),
    (re.compile(r"^Program hit \w+"), "api-error"),
    (re.compile(r"^(Misaligned|Out-of-range) .*(address|access)", re.IGNORECASE), "invalid-read"),
    (re.compile(r"^(Warning|Error): .+"), "other"),
)
# Frames that say where memory was allocated from, not who leaked it.
ALLOCATOR_FRAMES = frozenset(
    {
        "malloc",
        "calloc",
        "realloc",
        "free",
        "memalign",
        "posix_memalign",
        "operator new",
        "operator new[]",
        "operator delete",
        "operator delete[]",
        "cudaMalloc",
        "cudaMallocAsync",
        "cudaMallocManaged",
        "cuMemAlloc_v2",
        "hipMalloc",
    }
)
KEY_FRAMES = 3  # frames past the allocator that identify a finding
KEPT_FRAMES = 12  # frames kept in the report


@dataclass(frozen=True, kw_only=True)
class Finding:
    tool: str  # "valgrind" | "compute-sanitizer"
    category: str
    kind: str  # the tool's own name (Leak_DefinitelyLost, "Invalid __global__ write")
    summary: str
    bytes: int | None = None
    frames: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()
    count: int = 1
    tools: tuple[str, ...] = ()
    # Frames that identify the bug when not all do: a kernel's device frames, whose host
    # backtrace differs with how the launch was reached.
    key_frames: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        names = [f.split(" (", 1)[0] for f in (self.key_frames or self.frames)]
        meaningful = [n for n in names if n not in ALLOCATOR_FRAMES and n != "???"][:KEY_FRAMES]
        text = self.category + "|" + "|".join(meaningful or names[:KEY_FRAMES] or [self.kind])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "tools": sorted(set(self.tools or (self.tool,))),
            "category": self.category,
            "kind": self.kind,
            "summary": self.summary,
            "bytes": self.bytes,
            "frames": list(self.frames),
            "key": self.key,
            "count": self.count,
            "tests": list(self.tests),
        }


def dedupe(findings: Iterable[Finding]) -> list[Finding]:
    """Merge findings with the same key: counts and bytes add up, tests and tools are unioned."""
    merged: dict[str, Finding] = {}
    for finding in findings:
        key = finding.key
        seen = merged.get(key)
        if seen is None:
            merged[key] = replace(finding, tools=tuple(sorted(set(finding.tools or (finding.tool,)))))
            continue
        total = (
            None if seen.bytes is None and finding.bytes is None else (seen.bytes or 0) + (finding.bytes or 0)
        )
        merged[key] = replace(
            seen,
            count=seen.count + finding.count,
            bytes=total,
            tests=tuple(dict.fromkeys(seen.tests + finding.tests)),
            tools=tuple(sorted(set(seen.tools) | set(finding.tools or (finding.tool,)))),
        )
    return list(merged.values())


def subtract_baseline(findings: Sequence[Finding], baseline: Sequence[Finding]) -> list[Finding]:
    """Findings whose key the baseline (an import-only run) does not have."""
    known = {f.key for f in baseline}
    return [f for f in findings if f.key not in known]


def outcome_for(findings: Sequence[Finding], current: Outcome) -> Outcome:
    """A test's outcome once findings are attached: leaks -> leaked, memory errors -> failed."""
    if current in ("crashed", "timeout", "error"):
        return current
    categories = {f.category for f in findings}
    if categories - {"leak"}:
        return "failed"
    if "leak" in categories:
        return "leaked"
    return current


# -- valgrind -------------------------------------------------------------------------


def _frame_text(frame: ET.Element) -> str:
    fn = frame.findtext("fn") or "???"
    file = frame.findtext("file")
    line = frame.findtext("line")
    obj = frame.findtext("obj")
    if file:
        return f"{fn} ({file}:{line})" if line else f"{fn} ({file})"
    if obj:
        return f"{fn} ({Path(obj).name})"
    return fn


def parse_valgrind_xml(source: str | Path, *, text: str | None = None) -> list[tuple[str | None, Finding]]:
    """Parse memcheck ``--xml=yes`` output into (test marker, finding) pairs, in file order.

    The marker is the node id announced by the last ``xcompat-start`` client message before
    the error (None before any). A file cut short by a killed process keeps what parsed.
    """
    data = text if text is not None else Path(source).read_text(encoding="utf-8", errors="replace")
    parser: Any = ET.XMLPullParser(events=("start", "end"))
    try:
        parser.feed(data)
        parser.close()
        complete = True
    except ET.ParseError:
        complete = False
    out: list[tuple[str | None, Finding]] = []
    current: str | None = None
    saw_root = False
    events: list[Any]
    try:
        events = list(parser.read_events())
    except ET.ParseError:
        events = []
    for event, elem in events:
        if event == "start":
            if elem.tag == "valgrindoutput":
                saw_root = True
            continue
        if elem.tag == "clientmsg":
            message = (elem.findtext("text") or "").strip()
            if message.startswith("xcompat-start "):
                current = message.removeprefix("xcompat-start ").strip()
            elif message.startswith("xcompat-end "):
                current = None
        elif elem.tag == "error":
            kind = elem.findtext("kind") or "Unknown"
            if kind.startswith("Leak_") and kind not in REPORTED_LEAK_KINDS:
                continue
            what = elem.findtext("what") or elem.findtext("xwhat/text") or kind
            leaked = elem.findtext("xwhat/leakedbytes")
            frames = tuple(_frame_text(f) for f in elem.findall("stack[1]/frame"))[:KEPT_FRAMES]
            out.append(
                (
                    current,
                    Finding(
                        tool="valgrind",
                        category=VALGRIND_CATEGORIES.get(kind, "other"),
                        kind=kind,
                        summary=what.strip(),
                        bytes=int(leaked) if leaked and leaked.isdigit() else None,
                        frames=frames,
                        tests=(current,) if current else (),
                    ),
                )
            )
    if not saw_root:
        state = "truncated" if not complete else "not valgrind XML output"
        raise InputError(
            f"{state}: no <valgrindoutput> element",
            file=str(source),
            hint="run valgrind with --xml=yes --xml-file=FILE",
        )
    return out


# -- compute-sanitizer ------------------------------------------------------------------

_PREFIX = re.compile(r"^=========\s?")
_DEVICE_FRAME = re.compile(r"^at (?P<fn>.+?)(\+0x[0-9a-f]+)?(?: in (?P<loc>\S+))?$")
_HOST_FRAME = re.compile(r"^Host Frame:\s*(?P<rest>.*)$")
_SIZE = re.compile(r"of size (\d+) bytes?")
_FN_ARGS = re.compile(r"\(.*\)$")


def _host_frame_name(rest: str) -> str:
    # "cudaLaunchKernel [0x4a1f] in libcudart.so.13", "main in /src/app.cu:20 [0x1c9e] in app",
    # "[0x2d3c5a] in libcuda.so.1", "_PyEval_EvalFrameDefault [0x..] in python3.11"
    rest = rest.strip()
    if rest.startswith("["):
        lib = rest.rsplit(" in ", 1)[-1] if " in " in rest else "???"
        return f"??? ({lib})"
    name = _FN_ARGS.sub("", re.split(r" \[0x| in ", rest, maxsplit=1)[0].strip())
    loc = re.search(r" in (\S+\.(?:cu|cpp|cc|c|h|cuh|hpp):\d+)", rest)
    return f"{name} ({Path(loc.group(1)).name})" if loc else name


def _sanitizer_finding(header: str, lines: list[str]) -> Finding | None:
    """The finding of one compute-sanitizer block (its header line and the lines under it);
    None for a block that reports none (the tool's banner, its summaries)."""
    matched = next(((cat, m) for pattern, cat in SANITIZER_HEADERS if (m := pattern.search(header))), None)
    if matched is None or header.startswith(("COMPUTE-SANITIZER", "ERROR SUMMARY", "LEAK SUMMARY")):
        return None
    category, found = matched
    frames: list[str] = []
    device_frames: list[str] = []
    for line in lines:
        host = _HOST_FRAME.match(line)
        if host:
            frames.append(_host_frame_name(host.group("rest")))
            continue
        device = _DEVICE_FRAME.match(line)
        if device:
            fn = _FN_ARGS.sub("", device.group("fn").strip())
            loc = device.group("loc")
            frames.append(f"{fn} ({Path(loc).name})" if loc else fn)
            device_frames.append(frames[-1])
    if category == "leak":
        size: int | None = int(found.group(1))  # "Leaked N bytes"
    else:
        match = _SIZE.search(header)
        size = int(match.group(1)) if match else None
    kind = re.sub(r" of size \d+ bytes?| at 0x[0-9a-f]+|\d+ bytes", "", header).strip().rstrip(".:")
    return Finding(
        tool="compute-sanitizer",
        category=category,
        kind=kind,
        summary=header.strip(),
        bytes=size,
        frames=tuple(frames[:KEPT_FRAMES]),
        key_frames=tuple(device_frames),
    )


def parse_compute_sanitizer(source: str | Path, *, text: str | None = None) -> list[Finding]:
    """Parse compute-sanitizer's default text report (memcheck, racecheck, initcheck, synccheck)."""
    data = text if text is not None else Path(source).read_text(encoding="utf-8", errors="replace")
    lines = data.splitlines()
    if not any(line.startswith("========= ") or line.strip() == "=========" for line in lines):
        raise InputError(
            "not a compute-sanitizer report: no '=========' lines",
            file=str(source),
            hint="pass the tool's stdout/stderr as written (the default --prefix)",
        )
    findings: list[Finding] = []
    block: list[str] = []

    def flush() -> None:
        if block:
            finding = _sanitizer_finding(block[0], block[1:])
            if finding is not None:
                findings.append(finding)
            block.clear()

    for raw in lines:
        if not raw.startswith("========="):
            flush()
            continue
        body = _PREFIX.sub("", raw, count=1)
        if not body.strip():
            flush()
            continue
        if not body.startswith((" ", "\t")):
            flush()
            block.append(body.strip())
        elif block:
            block.append(body.strip())
    flush()
    return findings


def attribute(pairs: Iterable[tuple[str | None, Finding]]) -> dict[str, list[Finding]]:
    """Group (marker, finding) pairs by test; findings outside any test are dropped (baseline)."""
    per_test: dict[str, list[Finding]] = {}
    for marker, finding in pairs:
        if marker:
            per_test.setdefault(marker, []).append(finding)
    return per_test


@dataclass(frozen=True, kw_only=True)
class ToolRun:
    """What one memory-checker process produced, for the logs."""

    command: tuple[str, ...]
    returncode: int
    report: str
    findings: tuple[Finding, ...] = field(default=())
