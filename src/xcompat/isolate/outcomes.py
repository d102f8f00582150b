"""Typed results of an isolated test run: one ``TestRecord`` per test, one ``RunResult`` per run.

The outcome vocabulary is closed (``OUTCOMES``); which outcomes fail a run is data
(``xcompat.results.status.FAILING_OUTCOMES``), and so is the mapping from a run's worst outcome to the common
stage status that the report and the release gate read.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from typing import Any, Literal

from xcompat.results.status import FAILING_OUTCOMES, test_stage_status

Outcome = Literal[
    "passed", "failed", "skipped", "xfailed", "xpassed", "error", "crashed", "timeout", "leaked"
]
OUTCOMES: tuple[Outcome, ...] = (
    "passed",
    "failed",
    "skipped",
    "xfailed",
    "xpassed",
    "error",
    "crashed",
    "timeout",
    "leaked",
)
# Any of FAILING_OUTCOMES makes ``xcompat test`` exit 1; the stage status comes from
# ``xcompat.results.status.test_stage_status``, the rule the results readers check it by.

Isolation = Literal["none", "file", "test"]
LeakKind = Literal["host", "device"]

# Characters of captured output kept per test (the tail: a crash's last words are at the end).
OUTPUT_TAIL_CHARS = 4000
TRACEBACK_CHARS = 8000


def signal_name(number: int) -> str:
    """``11`` -> ``"SIGSEGV"``; unknown numbers read ``"SIG42"``."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"SIG{number}"


def tail(text: str, limit: int = OUTPUT_TAIL_CHARS) -> str:
    if len(text) <= limit:
        return text
    return "[... " + str(len(text) - limit) + " characters cut ...]\n" + text[-limit:]


@dataclass(frozen=True, kw_only=True)
class Crash:
    """How a test's process ended abnormally."""

    signal: str | None = None  # "SIGSEGV"
    signal_number: int | None = None
    exit_code: int | None = None  # set when the process exited by itself (os._exit) mid-test
    traceback: str = ""  # faulthandler output (Python stacks of all threads)

    def describe(self) -> str:
        if self.signal:
            return f"killed by {self.signal}"
        if self.exit_code is not None:
            return f"process exited with status {self.exit_code} during the test"
        return "process ended during the test"

    def to_dict(self) -> dict[str, Any]:
        return {
            "signal": self.signal,
            "signal_number": self.signal_number,
            "exit_code": self.exit_code,
            "traceback": self.traceback[-TRACEBACK_CHARS:],
        }


@dataclass(frozen=True, kw_only=True)
class LeakReport:
    """Memory growth of one test over repeated calls, after warm-up."""

    kind: LeakKind
    repeats: int
    growth_bytes: int  # total RSS (host) or allocated-bytes (device) growth over the repeats
    python_bytes: int = 0  # host only: the part tracemalloc saw on the Python heap
    threshold_bytes: int = 0
    leaked: bool = False
    where: Literal["python", "native", "device"] = "native"
    samples: tuple[int, ...] = ()

    def describe(self) -> str:
        per_call = self.growth_bytes // max(self.repeats, 1)
        return (
            f"{self.kind} memory grew by {self.growth_bytes} bytes over {self.repeats} calls "
            f"(~{per_call} bytes/call, {self.where}; threshold {self.threshold_bytes})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "repeats": self.repeats,
            "growth_bytes": self.growth_bytes,
            "python_bytes": self.python_bytes,
            "threshold_bytes": self.threshold_bytes,
            "leaked": self.leaked,
            "where": self.where,
            "samples": list(self.samples),
        }


@dataclass(frozen=True, kw_only=True)
class TestRecord:
    nodeid: str
    outcome: Outcome
    duration_s: float = 0.0
    device: str | None = None  # "cpu", "cuda:0" (the slot's visible-device entry)
    message: str = ""  # one-line reason (assertion text, skip reason, crash description)
    longrepr: str = ""  # pytest's failure text, or the crash traceback
    output_tail: str = ""
    crash: Crash | None = None
    leaks: tuple[LeakReport, ...] = ()
    findings: tuple[dict[str, Any], ...] = ()  # sanitizer findings attributed to this test

    __test__ = False  # not a pytest test class

    def to_dict(self) -> dict[str, Any]:
        return {
            "nodeid": self.nodeid,
            "outcome": self.outcome,
            "duration_s": round(self.duration_s, 6),
            "device": self.device,
            "message": self.message,
            "longrepr": self.longrepr[-TRACEBACK_CHARS:],
            "output_tail": tail(self.output_tail),
            "crash": self.crash.to_dict() if self.crash else None,
            "leaks": [leak.to_dict() for leak in self.leaks],
            "findings": list(self.findings),
        }


@dataclass(frozen=True, kw_only=True)
class RunResult:
    records: tuple[TestRecord, ...]
    isolation: Isolation
    start_method: str  # "fork", "spawn" or "in-process"
    timeout_s: float | None
    duration_s: float
    cell_id: str | None = None
    leak_checks: tuple[str, ...] = ()
    deep: str | None = None
    devices: tuple[str, ...] = ()
    warmup: dict[str, Any] = field(default_factory=dict)
    findings: tuple[dict[str, Any], ...] = ()  # all sanitizer findings, deduplicated
    pytest_exit: int = 0
    # Tests collected but never started because a file could not be collected (pytest then
    # runs none of them, unless --continue-on-collection-errors).
    not_run: int = 0
    # The shared objects the test processes mapped at their end (``MappedUnion.to_dict``);
    # None where they could not be read (no /proc).
    mapped_libraries: dict[str, Any] | None = None

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = dict.fromkeys(OUTCOMES, 0)
        for record in self.records:
            counts[record.outcome] += 1
        return counts

    @property
    def failed(self) -> bool:
        return any(r.outcome in FAILING_OUTCOMES for r in self.records)

    @property
    def status(self) -> str:
        """The common stage status: crashed > failed > skipped (nothing ran) > passed."""
        return test_stage_status(r.outcome for r in self.records)

    def summary(self) -> str:
        counts = self.counts()
        parts = [f"{n} {name}" for name, n in counts.items() if n]
        text = ", ".join(parts) if parts else "no tests"
        summary = f"{len(self.records)} tests: {text} in {self.duration_s:.1f}s ({self.isolation} isolation)"
        if self.not_run:
            errors = sum(1 for r in self.records if r.outcome == "error" and "::" not in r.nodeid)
            summary = (f"{self.not_run} collected test{'s' if self.not_run != 1 else ''} did not run: "
                       f"{errors or 'a'} file{'s' if errors != 1 else ''} could not be collected; {summary}")
        return summary
