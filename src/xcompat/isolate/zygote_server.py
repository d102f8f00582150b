"""The zygote's own side: a loop that forks test processes on request and reports their exits.

It runs only in the zygote, a copy of the warm parent forked by ``xcompat.isolate.zygote``,
whose docstring describes the protocol spoken here.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from xcompat.isolate.processes import ForkLauncher
from xcompat.isolate.watchdog import kill_group

# Largest packet either side sends: a file's test positions (JSON) with room to spare.
PACKET = 1 << 20


def send(sock: socket.socket, message: dict[str, Any], fds: Sequence[int] = ()) -> None:
    """One packet: ``message`` as JSON, with ``fds`` passed along (``SCM_RIGHTS``)."""
    data = json.dumps(message).encode()
    if fds:
        socket.send_fds(sock, [data], list(fds))
    else:
        sock.send(data)


@dataclass
class ZygoteChild:
    """A process of the zygote: a spare waiting for its tests, or one running them."""

    pid: int
    pidfd: int
    read_fd: int  # message pipe, read end: the zygote's copy until it is handed over
    out_path: str
    crash_path: str
    ctrl_fd: int | None  # a spare's assignment pipe (write end), until it is handed over
    handed: bool = False  # the parent knows it (its exit is reported)


class ZygoteServer:
    """The zygote's side: fork on request, report exits. Runs in the forked zygote only."""

    def __init__(self, sock: socket.socket, config: Any, items: list[Any], launcher: ForkLauncher) -> None:
        """``launcher`` forks the test processes (``ForkLauncher.fork_child``)."""
        self.sock = sock
        self.config = config
        self.items = items
        self.launcher = launcher
        self.processes: dict[int, ZygoteChild] = {}  # by pidfd: every process not yet reaped
        self.selector = selectors.DefaultSelector()

    def serve(self) -> None:
        self.selector.register(self.sock, selectors.EVENT_READ, None)
        try:
            while True:
                for key, _ in self.selector.select():
                    if key.data is None:
                        if not self._command():
                            return
                    else:
                        self._reap(key.data)
        finally:
            self._stop()

    def _command(self) -> bool:
        try:
            data = self.sock.recv(PACKET)
        except OSError:
            return False
        if not data:
            return False
        message = json.loads(data)
        slot = int(message["slot"])
        spare = message["op"] == "spare"
        process = self._fork(slot, None if spare else [int(i) for i in message["positions"]])
        process.handed = True
        answer = {"op": "spare" if spare else "started", "slot": slot, "pid": process.pid,
                  "out": process.out_path, "crash": process.crash_path}
        fds = [process.read_fd, process.pidfd]
        if process.ctrl_fd is not None:
            fds.append(process.ctrl_fd)
        send(self.sock, answer, fds)
        for fd in (process.read_fd, process.ctrl_fd):
            if fd is not None:
                os.close(fd)
        process.read_fd, process.ctrl_fd = -1, None
        return True

    def _fork(self, slot: int, positions: list[int] | None) -> ZygoteChild:
        group = None if positions is None else [self.items[i] for i in positions]
        child = self.launcher.fork_child(self.config, slot, group, release=self._in_child)
        pidfd = os.pidfd_open(child.pid)
        process = ZygoteChild(child.pid, pidfd, child.read_fd, child.out_path, child.crash_path, child.ctrl_fd)
        self.processes[pidfd] = process
        self.selector.register(pidfd, selectors.EVENT_READ, process)
        return process

    def _in_child(self) -> None:
        """In a new test process: let go of everything that is the zygote's."""
        fds = [self.sock.detach()]
        for process in self.processes.values():
            fds += [process.pidfd, process.read_fd, process.ctrl_fd if process.ctrl_fd is not None else -1]
        self.selector.close()
        for fd in fds:
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _reap(self, process: ZygoteChild) -> None:
        self.selector.unregister(process.pidfd)
        del self.processes[process.pidfd]
        _, status = os.waitpid(process.pid, 0)
        os.close(process.pidfd)
        for fd in (process.read_fd, process.ctrl_fd):
            if fd is not None and fd >= 0:
                os.close(fd)
        if not process.handed:
            return  # died before the parent heard of it
        # OSError: the parent is gone; the loop ends at the socket's end
        with contextlib.suppress(OSError):
            send(self.sock, {"op": "ended", "pid": process.pid, "status": status})

    def _stop(self) -> None:
        for process in self.processes.values():
            kill_group(process.pid)
        for process in self.processes.values():
            with contextlib.suppress(ChildProcessError):
                os.waitpid(process.pid, 0)
