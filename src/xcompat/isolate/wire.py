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
  - ``{"event": "warning", "nodeid", "when", "warning": {...}}``: a warning pytest recorded
    in the test (``warning_to_wire``), for the parent's warnings summary;
  - ``{"event": "libraries", "nodeid": "", "paths": [...]}``: sent with the last test's
    messages, the shared objects the process maps at its end beyond those it inherited
    (``xcompat.isolate.mapped``; ``"unread": true`` instead when its maps were over the limit);
  - ``{"event": "done", "nodeid", "out": offset}``: the test and its teardown finished.

Tests run in the order assigned, so a process that ends abnormally before a test's messages
arrived died in that test: the first assigned test without a ``done``.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from xcompat.isolate.outcomes import LeakReport

# One read from a pipe.
CHUNK = 1 << 16
# A forwarded warning's text is cut to this many characters (a test may warn with megabytes).
WARNING_TEXT_LIMIT = 4000


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


def warning_to_wire(warning_message: Any) -> dict[str, Any]:
    """A ``warnings.WarningMessage`` as the parent needs it for pytest's warnings summary."""
    category = warning_message.category
    return {
        "text": str(warning_message.message)[:WARNING_TEXT_LIMIT],
        "category": [str(getattr(category, "__module__", "")), str(getattr(category, "__qualname__", "Warning"))],
        "filename": str(warning_message.filename),
        "lineno": int(warning_message.lineno or 0),
    }


_STAND_INS: dict[tuple[str, str], type[Warning]] = {}


def _warning_class(module: str, qualname: str) -> type[Warning]:
    """The warning class named by a test process, if the parent has it imported already (a
    name is never imported here); else a ``Warning`` subclass of that name, so the summary
    reads the same."""
    found: Any = sys.modules.get(module)
    for part in qualname.split("."):
        try:  # the namespace itself, not getattr: a module's __getattr__ may import lazily
            found = vars(found).get(part) if found is not None else None
        except TypeError:
            found = None
    if isinstance(found, type) and issubclass(found, Warning):
        return found
    key = (module, qualname)
    if key not in _STAND_INS:
        name = qualname.rsplit(".", 1)[-1] or "Warning"
        _STAND_INS[key] = type(name if name.isidentifier() else "Warning", (Warning,), {"__module__": module})
    return _STAND_INS[key]


def warning_from_wire(data: dict[str, Any]) -> warnings.WarningMessage:
    """A forwarded warning, rebuilt in the parent for its ``pytest_warning_recorded`` hook."""
    text = str(data.get("text", ""))[:WARNING_TEXT_LIMIT]
    module, qualname = (list(data.get("category") or []) + ["", ""])[:2]
    category = _warning_class(str(module), str(qualname))
    try:
        message = category(text)
    except Exception:  # noqa: BLE001 - a warning class whose constructor wants other arguments
        category = _warning_class("", str(qualname))
        message = category(text)
    try:
        lineno = int(data.get("lineno", 0))
    except (TypeError, ValueError):
        lineno = 0
    return warnings.WarningMessage(message, category, str(data.get("filename", "?")), lineno)
