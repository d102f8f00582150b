"""The test process: runs a group of already-collected items and streams results to the parent.

Used right after ``os.fork()`` (the items come from the parent's collection) and by a
spawned worker (``xcompat.isolate.spawned``), which collects the same node ids itself.

Messages go to the parent as JSON lines (``xcompat.isolate.wire``), all of a test's in one
write at its end; a process that dies before a test's messages arrived died in that test.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import signal
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from xcompat.isolate.classify import TEST_INTERRUPT_EXIT
from xcompat.isolate.leaks import MARKER, LeakPolicy, from_marker, measure_leaks
from xcompat.isolate.mapped import end_message
from xcompat.isolate.measured import save_coverage
from xcompat.isolate.wire import Channel, warning_to_wire

# The parent sends this signal to a hung test to get its Python stacks before SIGKILL.
DUMP_SIGNAL = signal.SIGUSR1 if hasattr(signal, "SIGUSR1") else None
# Exit status of a test process that failed outside any test (its set-up, or xcompat itself).
FAILED_OUTSIDE_TESTS_EXIT = 70


@dataclass(frozen=True, kw_only=True)
class ChildPlan:
    write_fd: int  # message pipe
    out_path: str  # captured stdout+stderr of the process (fd level)
    crash_path: str  # faulthandler output
    # The two files opened by the process that forked this one (-1: open the paths). A test
    # that empties the temp folder while a spare is being forked then takes nothing from it.
    out_fd: int = -1
    crash_fd: int = -1
    env: tuple[tuple[str, str], ...] = ()
    threads: int | None = None
    leak_kinds: tuple[str, ...] = ()
    leak_policy: LeakPolicy = field(default_factory=LeakPolicy)


def _redirect_output(out_path: str, fd: int = -1) -> None:
    """Send fd 1 and 2 (C and Python output alike) to the per-process output file."""
    sys.stdout.flush()
    sys.stderr.flush()
    if fd < 0:
        fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    for stream in (sys.stdout, sys.stderr):
        # Typed as TextIO, the streams are TextIOWrappers unless something replaced them; a
        # replacement without reconfigure() (AttributeError) is left as it is.
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(line_buffering=True, write_through=True)  # type: ignore[union-attr]  # TextIO


def _output_offset() -> int:
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        return os.lseek(1, 0, os.SEEK_END)
    except OSError:
        return 0


_NULL_TERMINAL: dict[int, Any] = {}  # id(config) -> a terminal writer on os.devnull


def _null_terminal_writer(config: Any) -> Any:
    writer = _NULL_TERMINAL.get(id(config))
    if writer is None:
        from _pytest.config import create_terminal_writer

        sink = open(os.devnull, "w")  # noqa: SIM115 - closed with the session
        config.add_cleanup(sink.close)
        config.add_cleanup(lambda: _NULL_TERMINAL.pop(id(config), None))
        writer = _NULL_TERMINAL[id(config)] = create_terminal_writer(config, sink)
    return writer


def prepare_parent(config: Any, items: Sequence[Any] = ()) -> None:
    """Once, in the warm parent before the first fork: what every test process would redo.

    pytest's global capture is switched off (the parent runs no test; its children write
    straight to their output files), the children's silent terminal writer is made, and each
    item's ``location`` (a cached property: source lookups and stat calls) is computed.
    """
    for item in items:
        item.location  # noqa: B018 - fills pytest's cache for every child
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is not None and capman._method != "no":
        capman.stop_global_capturing()
        capman._method = "no"  # pytest has no public switch for this
        capman.start_global_capturing()
    _null_terminal_writer(config)
    report_forwarder(config)


def _quiet_pytest(config: Any) -> None:
    """Run pytest's per-test machinery without its global capture and terminal output.

    Output goes to our file at fd level instead, so it survives a crash; the terminal
    lines are printed once, by the parent, from the reports we send back.
    """
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is not None and capman._method != "no":  # a spawned worker: not done by a parent
        capman.stop_global_capturing()
        capman._method = "no"  # pytest has no public switch for this
        capman.start_global_capturing()
    reporter = config.pluginmanager.getplugin("terminalreporter")
    if reporter is not None:
        reporter._tw = _null_terminal_writer(config)
    drop_reporter_hooks(config)


class _ReporterView:
    """pytest's terminal reporter as a test process keeps it: the same object for code that
    looks it up by name (``config.get_terminal_writer()``, plugins), without its hooks.

    In a test process the reporter only writes to a null writer: the parent prints each
    test's line from the replayed reports. Its per-test hooks (log start, log report, log
    finish, warnings) still cost every process its first calls and the copy-on-write faults
    of every object they touch, about 1 ms per process. pluggy removes a plugin's hooks only
    with the plugin itself, so the reporter is unregistered and this view, which has no hook
    methods of its own, is registered under its name.
    """

    __slots__ = ("_reporter",)

    def __init__(self, reporter: Any) -> None:
        object.__setattr__(self, "_reporter", reporter)

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "_reporter"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(object.__getattribute__(self, "_reporter"), name, value)

    def __repr__(self) -> str:
        return f"<test process view of {object.__getattribute__(self, '_reporter')!r}>"


def drop_reporter_hooks(config: Any) -> None:
    """In a test process (or the zygote that forks them): keep pytest's terminal reporter
    reachable by name but take its hooks out of every hook call (see ``_ReporterView``)."""
    manager = config.pluginmanager
    reporter = manager.get_plugin("terminalreporter")
    if reporter is None or isinstance(reporter, _ReporterView):
        return
    manager.unregister(reporter, "terminalreporter")
    manager.register(_ReporterView(reporter), "terminalreporter")


class ReportForwarder:
    """Sends each report of a test process to the parent, in pytest's serialisable form.

    Registered once, in the parent before the first fork (registering a plugin makes pytest
    scan it for fixtures, ~10 ms that every test process would pay again); it forwards only
    where a test process gave it a channel.
    """

    NAME = "xcompat-isolate-forwarder"

    def __init__(self, config: Any) -> None:
        self.config = config
        self.channel: Channel | None = None

    def pytest_runtest_logreport(self, report: Any) -> None:
        if self.channel is None:
            return
        data = self.config.hook.pytest_report_to_serializable(config=self.config, report=report)
        self.channel.queue({"event": "report", "nodeid": report.nodeid, "report": data})

    def pytest_warning_recorded(self, warning_message: Any, when: str, nodeid: str) -> None:
        if self.channel is None:
            return
        self.channel.queue({"event": "warning", "nodeid": nodeid, "when": when,
                            "warning": warning_to_wire(warning_message)})


def report_forwarder(config: Any) -> ReportForwarder:
    """The forwarder registered with ``config``'s plugin manager (registered on first use)."""
    forwarder = cast("ReportForwarder | None", config.pluginmanager.get_plugin(ReportForwarder.NAME))
    if forwarder is None:
        forwarder = ReportForwarder(config)
        config.pluginmanager.register(forwarder, ReportForwarder.NAME)
    return forwarder


def install_leak_check(item: Any, plan: ChildPlan, channel: Channel) -> None:
    """Repeat the test's call phase under the run's leak policy or its ``check_leaks`` marker."""
    kinds, policy = plan.leak_kinds, plan.leak_policy
    marker = item.get_closest_marker(MARKER)
    if marker is not None:
        try:
            kinds, policy = from_marker(marker, kinds, policy)
        except ValueError:
            return  # the pytest plugin reports the bad marker as the test's error

    if not kinds:
        return
    original = item.runtest
    item._xcompat_leak_checked = True  # the pytest plugin must not repeat it again

    def runtest_repeated() -> None:
        original()
        reports = measure_leaks(original, kinds, policy)
        channel.queue({"event": "leaks", "nodeid": item.nodeid, "leaks": [r.to_dict() for r in reports]})

    item.runtest = runtest_repeated


def prepare_process(plan: ChildPlan, config: Any) -> None:
    """Process-level setup of a test process (after fork or in a spawned worker)."""
    # First: stopping pytest's capture restores fd 1/2, which must not undo our redirect.
    _quiet_pytest(config)
    if hasattr(os, "setpgid"):
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)  # our own process group: the watchdog kills stray grandchildren too
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    for key, value in plan.env:
        os.environ[key] = value
    _redirect_output(plan.out_path, plan.out_fd)
    crash_fd = plan.crash_fd
    if crash_fd < 0:
        crash_fd = os.open(plan.crash_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    faulthandler.enable(file=crash_fd, all_threads=True)
    if DUMP_SIGNAL is not None:
        faulthandler.register(DUMP_SIGNAL, file=crash_fd, all_threads=True, chain=False)
    if plan.threads and plan.threads > 1 and "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(plan.threads)


def open_channel(config: Any, plan: ChildPlan) -> Channel:
    """The process's message channel, with the report forwarder writing to it."""
    channel = Channel(plan.write_fd)
    report_forwarder(config).channel = channel
    return channel


# The hooks pytest calls for every test (``_pytest.runner`` and what it calls), and ours.
PER_TEST_HOOKS = (
    "pytest_runtest_protocol", "pytest_runtest_logstart", "pytest_runtest_setup", "pytest_runtest_call",
    "pytest_runtest_teardown", "pytest_runtest_makereport", "pytest_runtest_logreport",
    "pytest_runtest_logfinish", "pytest_report_teststatus", "pytest_fixture_setup",
    "pytest_fixture_post_finalizer", "pytest_pyfunc_call", "pytest_report_to_serializable",
    "pytest_warning_recorded",
)


def touch_per_test_machinery(config: Any) -> None:
    """In a spare waiting for its tests: take, now, the copy-on-write faults the first test
    would otherwise take on the run's critical path, without running anything.

    Every object Python code uses gets its reference count written, so the first test of a
    forked process copies each page that holds one of pytest's per-test hook implementations,
    their plugins and code objects, and a copy-on-write fault is dear on a virtual machine.
    Reading them here makes those copies while the spare waits, on the other core. No hook is
    called: nothing a project's plugin or conftest could notice happens. The start message is
    encoded once and the output offset read once, for the same reason (the encoder's and the
    streams' pages).
    """
    hook = config.hook
    for name in PER_TEST_HOOKS:
        caller = getattr(hook, name, None)
        if caller is None:
            continue
        for impl in caller.get_hookimpls():
            impl.plugin  # noqa: B018 - the reads are the point
            function = impl.function
            if isinstance(function, types.MethodType):
                function = function.__func__
            if isinstance(function, types.FunctionType):  # any other callable is left alone
                function.__code__  # noqa: B018
    json.dumps({"event": "start", "nodeid": "", "out": _output_offset()}, default=str)


def run_items(config: Any, items: Sequence[Any], plan: ChildPlan, channel: Channel | None = None) -> None:
    """Run ``items`` in this process, streaming messages; the caller exits afterwards."""
    if channel is None:
        channel = open_channel(config, plan)
    for index, item in enumerate(items):
        nextitem = items[index + 1] if index + 1 < len(items) else None
        # One write per test, at its end: each write wakes the parent, which on a busy machine
        # costs the test a context switch. A process that ends before a test's write died in
        # that test (the parent knows the order).
        channel.queue({"event": "start", "nodeid": item.nodeid, "out": _output_offset()})
        install_leak_check(item, plan, channel)
        try:
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        except KeyboardInterrupt:
            # Raised by the test (a Ctrl-C kills this process by signal): pytest lets it through
            # to end the session. The test's own failure: its process ends with a status that
            # says so, before the test's messages went out.
            _exit_after_traceback(TEST_INTERRUPT_EXIT)
        if nextitem is None:  # the process's end: its libraries go out with its last test's messages
            libraries = end_message()
            if libraries is not None:
                channel.queue(libraries)
        channel.queue({"event": "done", "nodeid": item.nodeid, "out": _output_offset()})
        channel.flush()


def _exit_after_traceback(code: int) -> None:
    import traceback

    try:
        traceback.print_exc()
        save_coverage("a test process")
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def run_forked_child(
    config: Any, assignment: Callable[[], Sequence[Any]], plan: ChildPlan, *, waits: bool = False
) -> None:
    """Body of a forked test process: set up, wait for ``assignment()``, run. Never returns.

    ``waits``: a spare, whose tests come later (``touch_per_test_machinery`` meanwhile)."""
    code = 0
    try:
        prepare_process(plan, config)
        channel = open_channel(config, plan)
        if waits:
            touch_per_test_machinery(config)
        items = assignment()
        if items:
            run_items(config, items, plan, channel)
    except BaseException:  # noqa: BLE001 - report anything, then leave without running parent code
        try:
            import traceback

            traceback.print_exc()
        finally:
            code = FAILED_OUTSIDE_TESTS_EXIT
    finally:
        try:
            save_coverage("a test process")  # os._exit runs no atexit hook (xcompat.isolate.measured)
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
