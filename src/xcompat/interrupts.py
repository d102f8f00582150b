"""Ending a command on SIGINT, SIGTERM or SIGHUP, one way for all three.

SIGTERM is what ``timeout``, a CI job's cancellation and a runner shutting down send; SIGHUP
comes when the terminal or the SSH connection goes away. At their default action they end
xcompat at once: no cleanup runs, the processes it started (a stage's build, its test
processes) live on under init, and ``xcompat run``'s staging folder stays.

:func:`handled` (around every command, in ``cli.main``) makes each of the three raise
:class:`Signalled`, a ``KeyboardInterrupt``: every cleanup written for Ctrl-C (``except
KeyboardInterrupt`` and ``finally`` blocks, pytest's own) runs for all three, and the command
ends with its signal's error and exit code (``xcompat.errors``: 130, 143, 129).

Only the first signal raises. One that comes while that cleanup runs is dropped: raising
again would cut the cleanup short (a staging folder half removed, a child left running, a
traceback). Every wait of the cleanup is bounded; SIGKILL stays the way to stop at once.

The first signal also notes every process below this one and (Linux) makes this process the
child subreaper, so a process whose parent dies from then on is re-parented here instead of
to init. :func:`end_descendants`, after the command's own cleanup, kills whatever of them
still runs however it was started: in a session or process group of its own, under a build
backend under pip, by a test.

A forked child of this process is not the command: SIGTERM and SIGHUP go back to their
default action there (a test process that a test signals ends by that signal, as it did), and
SIGINT stays, so an in-process pytest session there stops on Ctrl-C the way pytest does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from typing import Any

from xcompat.errors import Interrupted, interrupted

HANDLED = ("SIGINT", "SIGTERM", "SIGHUP")
# How long a child asked to stop (a pytest session running its teardowns) gets before SIGKILL.
GRACE_S = 3.0
# How long end_descendants waits for the processes it killed to be gone.
_GONE_S = 5.0

_received: int | None = None  # the first signal of this command
_closing = False  # the command is over, its handlers about to be restored
_noted: dict[int, int] = {}  # pid -> start time of each process below this one at that signal
_fork_hook = False


class Signalled(KeyboardInterrupt):
    """Raised in the main thread by the first SIGINT, SIGTERM or SIGHUP of a command."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal_name(signum))
        self.signum = signum


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def received() -> str | None:
    """The name of the signal that is stopping this command, or None."""
    return None if _received is None else signal_name(_received)


def error(what: str, *, where: str = "") -> Interrupted:
    """The error that ends a command stopped by the signal it received (see
    ``xcompat.errors.interrupted``)."""
    return interrupted(received(), what, where=where)


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """Within: SIGINT, SIGTERM and SIGHUP raise :class:`Signalled`, the first one only."""
    global _received, _noted, _closing
    _received, _noted, _closing = None, {}, False
    previous: dict[int, Any] = {}
    try:
        for name in HANDLED:
            number = getattr(signal, name, None)
            if number is None:
                continue
            current = signal.getsignal(number)
            if current == signal.SIG_IGN:
                continue  # ignored by whoever started xcompat (nohup; SIGINT of a background job): it stays so
            previous[number] = signal.SIG_DFL if current is None else current
            signal.signal(number, _on_signal)
    except ValueError:  # not the main thread, where signals are handled: they stay as they are
        pass
    _register_fork_hook()
    try:
        yield
    finally:
        # After a signal the handler stays: the process is on its way out, and another signal
        # must not raise in what is left of it (the exit handlers).
        _closing = True  # the command is over: a signal now must not raise out of this block
        if _received is None:
            for number, handler in previous.items():
                signal.signal(number, handler)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Within: the three signals wait, for a step that must not stop half-way (moving a run's
    results into place). Nothing started within inherits the block: start no process here."""
    numbers = {getattr(signal, name) for name in HANDLED if hasattr(signal, name)}
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, numbers)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _on_signal(signum: int, frame: Any) -> None:
    global _received
    if _received is not None or _closing:
        return  # the first signal's cleanup is running (see the module's docstring), or the command is over
    _received = signum
    with contextlib.suppress(Exception):  # a bonus for end_descendants; the signal must still stop the command
        _adopt()
    raise Signalled(signum)


def _adopt() -> None:
    """Become the child subreaper (first, so nothing is orphaned to init after the look), then
    note the processes below this one."""
    global _noted
    if not sys.platform.startswith("linux"):
        return
    from xcompat.subreaper import become_subreaper

    become_subreaper()
    table = _processes()
    _noted = {pid: table[pid][2] for pid in _below(table, os.getpid())}


def _register_fork_hook() -> None:
    global _fork_hook
    if not _fork_hook and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_forked)
        _fork_hook = True


def _forked() -> None:
    global _received, _noted, _closing
    _received, _noted, _closing = None, {}, False
    for name in ("SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is not None and signal.getsignal(number) is _on_signal:
            signal.signal(number, signal.SIG_DFL)


def end_descendants() -> list[str]:
    """Kill every process below this one that still runs, and each one noted at the first
    signal wherever it is now; reap those that are children of this one. Returns "PID (its
    command line)" of each killed. Linux (through /proc); elsewhere nothing is found."""
    if not sys.platform.startswith("linux"):
        return []
    me, own_group = os.getpid(), os.getpgid(0)
    ended: dict[int, str] = {}
    deadline = time.monotonic() + _GONE_S
    for _round in range(5):  # a process can fork while its parent is being killed: look again
        table = _processes()
        targets = _below(table, me) | {pid for pid, start in _noted.items() if pid in table and table[pid][2] == start}
        targets = {pid for pid in targets if table[pid][3] != "Z"}
        if not targets:
            break
        for pid in sorted(targets):
            ended.setdefault(pid, _command(pid))
            group = table[pid][1]
            if group in targets and group != own_group:  # a group one of them leads holds only theirs
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(group, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        _wait_gone(targets, deadline)
    return [f"{pid} ({command})" for pid, command in ended.items()]


def _wait_gone(pids: set[int], deadline: float) -> None:
    """Until each of ``pids`` is gone or a zombie (reaped, when it is this process's child)."""
    left = set(pids)
    while left:
        for pid in sorted(left):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            state = _state_of(pid)
            if state is None or state == "Z":
                left.discard(pid)
        if not left or time.monotonic() > deadline:
            return
        time.sleep(0.01)


def _processes() -> dict[int, tuple[int, int, int, str]]:
    """pid -> (parent, process group, start time, state) of every process /proc shows."""
    table: dict[int, tuple[int, int, int, str]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for entry in entries:
        if entry.isdigit():
            fields = _stat(entry)
            if fields is not None:
                table[int(entry)] = fields
    return table


def _stat(pid: int | str) -> tuple[int, int, int, str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            text = fh.read()
    except OSError:
        return None
    # pid (comm) state ppid pgrp session ... starttime (field 22); comm may hold spaces and ")".
    fields = text[text.rfind(b")") + 2 :].split()
    try:
        return int(fields[1]), int(fields[2]), int(fields[19]), fields[0].decode("ascii", "replace")
    except (IndexError, ValueError):
        return None


def _state_of(pid: int) -> str | None:
    fields = _stat(pid)
    return None if fields is None else fields[3]


def _below(table: dict[int, tuple[int, int, int, str]], root: int) -> set[int]:
    """The processes whose chain of parents leads to ``root``."""
    children: dict[int, list[int]] = {}
    for pid, (parent, *_rest) in table.items():
        children.setdefault(parent, []).append(pid)
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found and child != root:
                found.add(child)
                todo.append(child)
    return found


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read(4096)
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()[:200] or "?"
