"""Processes a test left running after its test process ended, found, ended and named.

The watchdog kills a test process's own process group, which ends the background processes a
test started in the ordinary way. A process that called ``setsid()`` (``start_new_session=True``,
a daemon) has a session and group of its own and would survive, unseen, into the next test and
past ``xcompat test`` itself. So the warm parent makes itself the *child subreaper*
(``prctl(PR_SET_CHILD_SUBREAPER)``, Linux 3.4+): orphans of its test processes are re-parented
to it instead of to init. After a test process ends, every child of the warm parent that is not
a test process of its own is a stray — it is in the ended test's process group, or in a session
other than the parent's (test processes only change their group, never their session) — and is
killed, reaped and recorded on the test that left it.

Elsewhere (macOS, Windows) nothing is found and nothing changes: those strays are outside what
this module can see, as documented in docs/testing.md.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from dataclasses import dataclass

# Re-exported: the runner and the pipeline take it from here with the rest of this module.
from xcompat.subreaper import become_subreaper as become_subreaper


@dataclass(frozen=True)
class StrayProcess:
    pid: int
    command: str

    def message(self, after: str = "the test") -> str:
        return f"left process {self.pid} ({self.command}) running after {after}; xcompat killed it"

    def finding(self, nodeid: str) -> dict[str, object]:
        """A finding in the test result's shape (schemas/test-result.schema.json, ``finding``)."""
        import hashlib

        return {
            "tool": "xcompat",
            "tools": ["xcompat"],
            "category": "stray-process",
            "kind": "stray_process",
            "summary": self.message(),
            "bytes": None,
            "frames": [self.command],
            "key": hashlib.sha256(f"stray:{nodeid}:{self.command}".encode()).hexdigest()[:16],
            "count": 1,
            "tests": [nodeid],
        }


def children() -> set[int]:
    """This process's children now (Linux; empty elsewhere)."""
    return _children() if sys.platform.startswith("linux") else set()


def _children() -> set[int]:
    # Called after every test process ends, so on every test's path: plain os calls, not
    # pathlib, whose objects cost several times the system calls themselves.
    pids: set[int] = set()
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return pids
    for task in tasks:
        with contextlib.suppress(OSError, ValueError):
            pids.update(int(p) for p in _read(f"/proc/self/task/{task}/children").split())
    return pids


def _read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 1 << 16)
    finally:
        os.close(fd)


def _stat(pid: int) -> tuple[int, int] | None:
    """(process group, session) of ``pid``, or None when it is gone."""
    try:
        text = _read(f"/proc/{pid}/stat")
    except OSError:
        return None
    # pid (comm) state ppid pgrp session ...; comm may hold spaces and parentheses.
    fields = text[text.rfind(b")") + 2 :].split()
    try:
        return int(fields[2]), int(fields[3])
    except (IndexError, ValueError):
        return None


def _command(pid: int) -> str:
    try:
        raw = _read(f"/proc/{pid}/cmdline")
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()[:200] or "?"


def collect_strays(ended_pid: int) -> list[StrayProcess]:
    """Find, kill and reap the strays the test process ``ended_pid`` left behind."""
    if not sys.platform.startswith("linux"):
        return []
    own_session = os.getsid(0)
    found: list[tuple[int, int]] = []
    for pid in sorted(_children()):
        ids = _stat(pid)
        if ids is None:
            continue
        group, session = ids
        if group != ended_pid and session == own_session:
            continue  # a test process (or a spare) of this parent, or a tool it runs itself
        found.append((pid, group))
    return _kill_and_reap(found)


def collect_new_children(before: set[int], *, only_session: int | None = None) -> list[StrayProcess]:
    """Kill and reap every child of this process that is not in ``before``: what a session
    that has ended left running (its own children and, with this process as subreaper, their
    orphans). With ``only_session``, only the children in that session: the others may belong
    to a command that is still running (``xcompat run`` builds the baseline alongside the
    project)."""
    if not sys.platform.startswith("linux"):
        return []
    strays: list[StrayProcess] = []
    for _round in range(5):  # a killed stray's own children are re-parented here in turn
        found: list[tuple[int, int]] = []
        for pid in sorted(_children() - before):
            ids = _stat(pid)
            if ids is not None and only_session in (None, ids[1]):
                found.append((pid, ids[0]))
        if not found:
            break
        strays += _kill_and_reap(found)
    return strays


def _kill_and_reap(found: list[tuple[int, int]]) -> list[StrayProcess]:
    """SIGKILL each (pid, process group) and wait for it, up to 5 s in all."""
    own_group = os.getpgid(0)
    strays: list[StrayProcess] = []
    for pid, group in found:
        strays.append(StrayProcess(pid=pid, command=_command(pid)))
        if group != own_group:  # never our own group: that would end xcompat itself
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    for stray in strays:
        while True:
            try:
                done, _ = os.waitpid(stray.pid, os.WNOHANG)
            except ChildProcessError:
                break
            if done or time.monotonic() > deadline:
                break
            time.sleep(0.01)
    return strays
