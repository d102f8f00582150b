"""The wire protocol between the warm parent and a test process.

Two pipes per test process:

* the *assignment* pipe, parent to child: one JSON line with the positions (in the parent's
  collection order) of the tests the process must run; EOF or an empty list means "exit";
* the *message* pipe, child to parent: JSON lines, one per event, all of one test's written
  together when it ends (a write wakes the parent: one per test keeps context switches down)

  - ``{"event": "ready", "nodeid": "", "t": monotonic}``: a spawned process finished
    starting (imports, collection) and begins its first test at ``t`` (``time.monotonic()``,
    one clock for all processes): the test's timeout counts from then;
  - ``{"event": "start", "nodeid", "out": offset}``: a test began; ``out`` is the position
    in the process's output file where its output starts;
  - ``{"event": "report", "nodeid", "report": {...}}``: one setup/call/teardown report in
    pytest's own serialisable form (``pytest_report_to_serializable``);
  - ``{"event": "leaks", "nodeid", "leaks": [...]}``: leak-check results;
  - ``{"event": "done", "nodeid", "out": offset}``: the test and its teardown finished.

Tests run in the order assigned, so a process that ends abnormally before a test's messages
arrived died in that test: the first assigned test without a ``done``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from typing import Any

from xcompat.isolate.outcomes import LeakReport

# One read from a pipe.
CHUNK = 1 << 16


class Channel:
    """Line-oriented JSON writes on a raw file descriptor (no buffering to lose on a crash).

    ``queue`` holds messages back until ``flush`` writes them in one ``write``: every write
    wakes the parent, and on a busy machine each wake-up costs a context switch, so a test's
    reports go out together with its ``done``.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._queued: list[bytes] = []

    def queue(self, message: dict[str, Any]) -> None:
        self._queued.append((json.dumps(message, default=str) + "\n").encode("utf-8"))

    def flush(self) -> None:
        data, self._queued = b"".join(self._queued), []
        view = memoryview(data)
        while view:
            written = os.write(self.fd, view)
            view = view[written:]

    def send(self, message: dict[str, Any]) -> None:
        self.queue(message)
        self.flush()


class MessageReader:
    """Reassembles JSON lines from a non-blocking pipe, across partial reads."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""
        self.eof = False

    def read(self, *, until_eof: bool = False) -> Iterator[dict[str, Any]]:
        """Messages available now (``until_eof``: everything the process wrote before it ended)."""
        while True:
            try:
                data = os.read(self.fd, CHUNK)
            except BlockingIOError:
                break
            except OSError:
                data = b""
            if not data:
                self.eof = True
                break
            self.buffer += data
            if not until_eof and len(data) < CHUNK:
                break
        *lines, self.buffer = self.buffer.split(b"\n")
        for line in lines:
            if line.strip():
                yield json.loads(line)


def encode_assignment(positions: Sequence[int]) -> bytes:
    return (json.dumps(list(positions)) + "\n").encode()


def read_assignment(fd: int) -> list[int]:
    """In the child: block until the parent names the tests to run; ``[]`` when it never will."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, CHUNK)
        if not chunk:
            return []
        data += chunk
    os.close(fd)
    return [int(i) for i in json.loads(data)]


def report_from_wire(config: Any, data: dict[str, Any]) -> Any:
    """A pytest report from its serialised form, as pytest's own summary code expects it."""
    report = config.hook.pytest_report_from_serializable(config=config, data=data)
    # JSON has no tuples; pytest's summary code expects them here.
    for attr in ("longrepr", "location"):
        if isinstance(getattr(report, attr, None), list):
            setattr(report, attr, tuple(getattr(report, attr)))
    return report


def leak_from_wire(data: dict[str, Any]) -> LeakReport:
    return LeakReport(
        kind=data["kind"],
        repeats=int(data["repeats"]),
        growth_bytes=int(data["growth_bytes"]),
        python_bytes=int(data.get("python_bytes", 0)),
        threshold_bytes=int(data.get("threshold_bytes", 0)),
        leaked=bool(data["leaked"]),
        where=data.get("where", "native"),
        samples=tuple(int(x) for x in data.get("samples", ())),
    )
