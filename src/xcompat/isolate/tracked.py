"""Test processes as the parent tracks them: the process, and the test it runs now.

The launchers (``xcompat.isolate.processes``, ``xcompat.isolate.zygote``,
``xcompat.isolate.spawned``) create these records, the scheduler and the watchdog update them,
and the runner turns them into test records. They live apart from all of those so that each
can use them without importing the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from xcompat.isolate.outcomes import LeakReport
from xcompat.isolate.wire import MessageReader


@dataclass(kw_only=True)
class RunningTest:
    """Reports and timings of one test while it runs."""

    nodeid: str
    location: tuple[str, int | None, str]
    keywords: dict[str, Any]
    device: str
    started: float = 0.0
    out_start: int = 0
    reports: list[Any] = field(default_factory=list)
    leaks: list[LeakReport] = field(default_factory=list)


@dataclass(kw_only=True)
class TestProcess:
    """One test process as the parent tracks it."""

    pid: int
    slot: int
    items: list[Any]
    messages: MessageReader
    out_path: str
    crash_path: str
    spawned: float
    current: RunningTest | None = None
    finished: set[str] = field(default_factory=set)
    deadline: float | None = None  # the watchdog's limit for what the process does now
    kill_at: float | None = None  # SIGKILL time, once the stacks were asked for
    timed_out: bool = False  # its current test ran past the deadline
    killed: bool = False  # the watchdog sent SIGKILL
    crash_start: int = 0  # crash file offset where the current test's dumps begin
    status: int | None = None  # waitpid status once reaped
    pidfd: int | None = None  # readable once the process exits (Linux >= 5.3)
    ctrl_fd: int | None = None  # a spare's assignment pipe (write end)
    released: bool = False  # every test reported done: its slot may start the next one
    last_done: float | None = None  # when the last test reported done (the next one starts then)
    last_out: int = 0  # output file offset at that moment

    __test__ = False  # not a pytest test class

    @property
    def read_fd(self) -> int:
        return self.messages.fd
