"""The zygote: a fork server for test processes, forked once from the warm parent.

Forking each test process from the warm parent itself costs the parent twice per test. The
fork copies the page tables of its whole heap, and after it every page the parent writes
(replaying the test's reports, printing its line, keeping its record) is shared with the new
process and is copied on the write: hundreds of page faults per test in the one process all
tests wait on. The zygote is a copy of the warm parent made after collection that then runs
only a small loop. Test processes are forked from it; it writes almost nothing, so they share
its pages, and the parent's writes land on pages it already owns. The fork, and forking the
next test's process ahead of time, happen in the zygote, on another core, while the parent
replays the last test.

Protocol, on a ``SOCK_SEQPACKET`` socket pair (one JSON object per packet, descriptors passed
with ``SCM_RIGHTS``):

* parent → zygote ``{"op": "spare", "slot": i}``: fork a process for slot ``i`` that prepares
  itself and waits for its tests. Answer ``{"op": "spare", "slot", "pid", "out", "crash"}``
  with three descriptors: the read end of the process's message pipe, a pidfd of the process
  and the write end of its assignment pipe. The parent starts the next test by writing to that
  pipe itself, so no round trip to the zygote lies between one test's end and the next's start;
* parent → zygote ``{"op": "start", "slot": i, "positions": [...]}``: fork a process of slot
  ``i`` that runs those tests (positions in the parent's collection order), when the slot has
  no spare. Answer ``{"op": "started", "pid", "out", "crash"}`` with the message pipe's read
  end and a pidfd;
* zygote → parent ``{"op": "ended", "pid", "status"}``: a test process exited (``waitpid``
  status); only the zygote can reap its children;
* end of the socket, either way: the zygote kills its processes, reaps them and exits; the
  parent, which is the child subreaper, can then reap the orphans itself.

Linux only (pidfds, ``SCM_RIGHTS``); ``xcompat.isolate.processes.ForkLauncher`` forks from the
parent where it is not available, or with ``XCOMPAT_TEST_ZYGOTE=0``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import time
from typing import Any

from xcompat.isolate import forking
from xcompat.isolate.child import drop_reporter_hooks
from xcompat.isolate.processes import ForkLauncher, release
from xcompat.isolate.tracked import TestProcess
from xcompat.isolate.watchdog import reap as reap_own_child
from xcompat.isolate.wire import MessageReader
from xcompat.isolate.zygote_server import PACKET, ZygoteServer, send

# The zygote answers within milliseconds (a fork). One that has not after this long (stopped by
# a test, say) is killed, and the parent forks test processes itself from then on.
ANSWER_S = float(os.environ.get("XCOMPAT_ZYGOTE_ANSWER_S") or 30.0)


def available() -> bool:
    """Do test processes come from a zygote here (supported, and not switched off)?"""
    return supported() and os.environ.get("XCOMPAT_TEST_ZYGOTE") != "0"


def supported() -> bool:
    """Can test processes come from a zygote on this platform?"""
    return (
        sys.platform.startswith("linux")
        and hasattr(os, "pidfd_open")
        and hasattr(socket, "send_fds")
        and hasattr(socket, "SOCK_SEQPACKET")
    )


class ZygoteLauncher(ForkLauncher):
    """Starts test processes from a zygote (see the module's docstring); falls back to forking
    from the parent itself if the zygote could not start or died."""

    def __init__(self, **options: Any) -> None:  # ForkLauncher's
        super().__init__(**options)
        self._sock: socket.socket | None = None
        self._zygote_pid: int | None = None
        self._ended: dict[int, int] = {}  # exit statuses the zygote reported, by pid
        self._asked: set[int] = set()  # slots whose spare the zygote is forking
        self._config: Any = None
        self._own: set[int] = set()  # processes the parent forked itself (without a zygote)
        self._unreported: dict[int, float] = {}  # pid -> when its exit report was first asked for

    # -- the parent's side ----------------------------------------------------------
    def start(self, config: Any, group: list[Any], slot_index: int) -> TestProcess:
        """The slot's spare, told its tests by the parent itself; else a process the zygote
        forks for ``group``; else (no zygote) one the parent forks."""
        sock = self._ensure(config)
        if sock is not None and slot_index in self._asked:
            try:  # the zygote is forking it: wait for it rather than ask for another fork
                while slot_index in self._asked:
                    self._note(*self._next(wait=True))
            except OSError:
                self._lost()
        process = self.take_spare(group, slot_index)
        if process is not None:
            return process
        if self._sock is not None:
            positions = [self._positions[id(item)] for item in group]
            message: dict[str, Any] | None = None
            fds: list[int] = []
            try:
                send(self._sock, {"op": "start", "slot": slot_index, "positions": positions})
                message, fds = self._receive("started")
            except OSError:
                pass
            if message is not None and len(fds) == 2:
                return self._arm(self._process(message, fds, slot_index, group))
            for fd in fds:
                os.close(fd)
            self._lost()
        return super().start(config, group, slot_index)

    def prepare_spare(self, config: Any, slot_index: int) -> None:
        sock = self._ensure(config)
        if sock is None:
            super().prepare_spare(config, slot_index)
            return
        if slot_index in self._spares or slot_index in self._asked:
            return
        try:
            send(sock, {"op": "spare", "slot": slot_index})
        except OSError:
            self._lost()
        else:
            self._asked.add(slot_index)

    def discard(self, process: TestProcess) -> None:
        """A spare of the zygote is killed through its pidfd, not by pid: the zygote reaps its
        children, so once one has died its pid may already belong to another process."""
        if process.pid in self._own or process.pidfd is None:
            super().discard(process)
            return
        with contextlib.suppress(ProcessLookupError, OSError):
            signal.pidfd_send_signal(process.pidfd, signal.SIGKILL)
        release(process)

    def reap(self, process: TestProcess, *, block: bool) -> None:
        """The exit status of a process that ended, as the zygote reports it (``block``: wait
        for the report; a process of the parent's own is reaped by the parent).

        The parent calls this once the process's pidfd says it ended, without blocking: the
        report comes when the zygote is done with what it was doing (forking the next spare:
        milliseconds the parent would otherwise wait for), and the zygote's socket
        (``notice_fd``) wakes the parent then. A report that has not come ``ANSWER_S`` after
        the first ask means a stopped zygote: it is given up, and the process, an orphan of
        this subreaper then, is reaped here."""
        if self._sock is not None and process.pid not in self._own:
            try:
                while process.pid not in self._ended:
                    message, fds = self._next(wait=block)
                    if message is None:
                        asked = self._unreported.setdefault(process.pid, time.monotonic())
                        if time.monotonic() - asked < ANSWER_S:
                            return  # not reported yet
                        raise TimeoutError(f"the zygote did not report the exit of {process.pid}")
                    self._note(message, fds)
            except OSError:
                self._lost()  # its process is an orphan now, re-parented to this subreaper
        self._unreported.pop(process.pid, None)
        if process.pid in self._ended:
            process.status = self._ended.pop(process.pid)
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)  # stray grandchildren die with their test
        else:
            reap_own_child(process, block=block)

    def notice_fd(self) -> int | None:
        """The zygote's socket, while there is a zygote: exit reports and spares arrive there."""
        return None if self._sock is None else self._sock.fileno()

    def read_notices(self) -> None:
        """Note every packet waiting on the socket (exit statuses, spares); a socket at its end
        means the zygote is gone."""
        if self._sock is None:
            return
        try:
            while True:
                message, fds = self._next(wait=False)
                if message is None:
                    return
                self._note(message, fds)
        except OSError:
            self._lost()

    def close(self) -> None:
        super().close()
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()  # the zygote kills and reaps what is left, then exits
        pid, self._zygote_pid = self._zygote_pid, None
        if pid is not None:
            deadline = time.monotonic() + ANSWER_S
            try:
                while os.waitpid(pid, os.WNOHANG)[0] == 0:
                    if time.monotonic() > deadline:  # stopped, or stuck: it does not get to decide
                        os.kill(pid, signal.SIGKILL)
                        os.waitpid(pid, 0)
                        break
                    time.sleep(0.001)
            except (ChildProcessError, ProcessLookupError):
                pass

    # -- helpers --------------------------------------------------------------------
    def _fork(self, config: Any, slot_index: int, group: list[Any] | None) -> TestProcess:
        process = super()._fork(config, slot_index, group)
        self._own.add(process.pid)
        return process

    def _ensure(self, config: Any) -> socket.socket | None:
        """The zygote's socket, forking the zygote on first use."""
        if self._sock is not None or self._config is not None:
            return self._sock
        self._config = config
        try:
            parent_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        except OSError:
            return None
        sys.stdout.flush()
        sys.stderr.flush()
        pid = forking.fork()
        if pid == 0:
            code = 0
            try:
                parent_end.close()
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when it ends
                drop_reporter_hooks(config)  # once here, not in every test process
                ZygoteServer(zygote_end, config, self._items, self).serve()
            except BaseException:  # noqa: BLE001 - never run the parent's code in the zygote
                code = 1
            finally:
                os._exit(code)
        zygote_end.close()
        self._sock = parent_end
        self._zygote_pid = pid
        return parent_end

    def _receive(self, op: str) -> tuple[dict[str, Any], list[int]]:
        """Read the zygote's packets until one with ``op`` (the others are noted)."""
        while True:
            message, fds = self._next(wait=True)
            if message is not None and message.get("op") == op:
                return message, fds
            self._note(message, fds)

    def _next(self, *, wait: bool) -> tuple[dict[str, Any] | None, list[int]]:
        """One packet from the zygote, ``(None, [])`` if none is there and ``wait`` is false.
        OSError: the zygote ended, or did not answer within ``ANSWER_S``."""
        assert self._sock is not None
        self._sock.settimeout(ANSWER_S if wait else 0.0)
        try:
            data, fds, _flags, _addr = socket.recv_fds(self._sock, PACKET, 4)
        except BlockingIOError:
            if wait:
                raise
            return None, []
        if not data:
            for fd in fds:
                os.close(fd)
            raise ConnectionError("the zygote ended")
        return json.loads(data), list(fds)

    def _note(self, message: dict[str, Any] | None, fds: list[int]) -> None:
        """Keep what a packet says: an exit status, or a spare (its descriptors are kept)."""
        op = (message or {}).get("op")
        if message is not None and op == "spare":
            slot = int(message["slot"])
            self._asked.discard(slot)
            if len(fds) == 3:
                spare = self._process(message, fds[:2], slot, [])
                spare.ctrl_fd = fds[2]
                self._spares[slot] = spare
                return
            # Descriptors lost on the way (the parent at its file limit): closing the pipe's
            # write end ends the spare, which the zygote reaps; the slot's next test is forked.
        for fd in fds:
            os.close(fd)
        if message is not None and op == "ended":
            self._ended[int(message["pid"])] = int(message["status"])

    @staticmethod
    def _process(message: dict[str, Any], fds: list[int], slot: int, group: list[Any]) -> TestProcess:
        read_fd, pidfd = fds
        os.set_blocking(read_fd, False)
        return TestProcess(
            pid=int(message["pid"]),
            slot=slot,
            items=list(group),
            messages=MessageReader(read_fd),
            out_path=str(message["out"]),
            crash_path=str(message["crash"]),
            spawned=time.monotonic(),
            pidfd=pidfd,
        )

    def _lost(self) -> None:
        """The zygote is gone: its test processes are re-parented here (the child subreaper);
        new ones are forked from the parent."""
        sock, self._sock = self._sock, None
        self._asked.clear()
        if sock is not None:
            sock.close()
        if self._zygote_pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._zygote_pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self._zygote_pid, 0)
            self._zygote_pid = None
