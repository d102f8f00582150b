"""The parent's side of the zygote protocol (``xcompat.isolate.zygote``), the test playing the zygote.

The spare the zygote forks is handed to the parent with its assignment pipe, and the parent
starts the next test by writing to that pipe itself: no packet to the zygote between one
test's end and the next one's start. The "spare" here is a real process (``sleep``) in its
own process group, since a spare that died is killed and discarded by its group.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from xcompat.isolate import zygote
from xcompat.isolate.devices import DeviceSlot
from xcompat.isolate.leaks import LeakPolicy
from xcompat.isolate.processes import ForkLauncher
from xcompat.isolate.wire import read_assignment

pytestmark = pytest.mark.skipif(
    not zygote.supported(), reason="no zygote on this platform (pidfds and SCM_RIGHTS are Linux's)"
)


class FakeZygote:
    """The zygote's end of the socket pair, and the descriptors of one spare it 'forked'."""

    def __init__(self, sock: socket.socket, tmp_path: Path) -> None:
        self.sock = sock
        self.sock.setblocking(False)
        self.process = subprocess.Popen(["sleep", "60"], start_new_session=True)
        self.msg_r, self.msg_w = os.pipe()
        self.ctrl_r, self.ctrl_w = os.pipe()
        self.out, self.crash = tmp_path / "out", tmp_path / "crash"
        self.out.write_text("")
        self.crash.write_text("")

    def received(self) -> list[dict]:
        packets = []
        while True:
            try:
                packets.append(json.loads(self.sock.recv(1 << 16)))
            except BlockingIOError:
                return packets

    def send(self, message: dict, fds: list[int] = ()) -> None:  # type: ignore[assignment]
        socket.send_fds(self.sock, [json.dumps(message).encode()], list(fds))

    def hand_spare(self, slot: int = 0) -> None:
        pidfd = os.pidfd_open(self.process.pid)
        message = {"op": "spare", "slot": slot, "pid": self.process.pid, "out": str(self.out),
                   "crash": str(self.crash)}
        self.send(message, [self.msg_r, pidfd, self.ctrl_w])
        os.close(pidfd)
        os.close(self.ctrl_w)  # the parent holds the write end now
        os.close(self.msg_r)

    def close(self) -> None:
        self.process.kill()
        self.process.wait()
        for fd in (self.msg_w, self.ctrl_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.sock.close()


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[zygote.ZygoteLauncher, FakeZygote, list[object]]]:
    launcher = zygote.ZygoteLauncher(
        slots=[DeviceSlot(label="cpu")], folder=str(tmp_path / "run"), timeout_s=None, threads=None,
        leak_kinds=(), leak_policy=LeakPolicy(),
    )
    items = [object(), object(), object()]
    launcher.begin(items)
    parent_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    # As if _ensure had forked the zygote (config is only read by a fork of the parent's own).
    launcher._sock, launcher._config = parent_end, object()
    fake = FakeZygote(zygote_end, tmp_path)
    yield launcher, fake, items
    launcher._sock = None
    parent_end.close()
    fake.close()


def test_the_parent_starts_a_handed_spare_itself_without_asking_the_zygote(pair) -> None:
    launcher, fake, items = pair
    launcher.prepare_spare(launcher._config, 0)
    assert fake.received() == [{"op": "spare", "slot": 0}]
    fake.hand_spare()
    process = launcher.start(launcher._config, [items[2]], 0)  # reads the spare's packet first
    assert fake.received() == []  # no "start": the parent wrote to the spare's pipe
    assert read_assignment(fake.ctrl_r) == [2]
    assert process.pid == fake.process.pid and process.items == [items[2]]
    assert process.out_path == str(fake.out) and process.pidfd is not None
    os.close(process.read_fd)
    os.close(process.pidfd)


def test_a_spare_is_asked_for_once_and_exit_reports_read_meanwhile_are_kept(pair) -> None:
    launcher, fake, items = pair
    launcher.prepare_spare(launcher._config, 0)
    launcher.prepare_spare(launcher._config, 0)  # already asked: no second fork
    assert fake.received() == [{"op": "spare", "slot": 0}]
    fake.send({"op": "ended", "pid": 4242, "status": 256})
    fake.hand_spare()
    process = launcher.start(launcher._config, [items[0], items[1]], 0)
    assert read_assignment(fake.ctrl_r) == [0, 1]
    assert launcher._ended == {4242: 256}
    os.close(process.read_fd)
    os.close(process.pidfd)


def test_a_spare_that_died_is_killed_through_its_pidfd_and_the_zygote_asked_to_fork(pair) -> None:
    launcher, fake, items = pair
    launcher.prepare_spare(launcher._config, 0)
    fake.hand_spare()
    os.close(fake.ctrl_r)  # the spare is gone: writing its assignment fails
    # The zygote's answer to the "start" the parent is about to send, queued ahead.
    started_r, started_w = os.pipe()
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    pidfd = os.pidfd_open(child.pid)
    fake.send({"op": "started", "slot": 0, "pid": child.pid, "out": str(fake.out), "crash": str(fake.crash)},
              [started_r, pidfd])
    try:
        process = launcher.start(launcher._config, [items[1]], 0)
        assert fake.received() == [{"op": "spare", "slot": 0}, {"op": "start", "slot": 0, "positions": [1]}]
        assert process.pid == child.pid
        assert fake.process.wait(timeout=10) == -9  # killed through its pidfd
        os.close(process.read_fd)
        os.close(process.pidfd)
    finally:
        child.kill()
        child.wait()
        os.close(pidfd)
        os.close(started_r)
        os.close(started_w)


def test_a_spare_whose_descriptors_were_lost_is_not_waited_for(pair) -> None:
    """A "spare" packet without its three descriptors (cut short by the file limit) ends the
    wait for that slot's spare: the next test is forked by the zygote instead."""
    launcher, fake, items = pair
    launcher.prepare_spare(launcher._config, 0)
    fake.send({"op": "spare", "slot": 0, "pid": fake.process.pid, "out": str(fake.out), "crash": str(fake.crash)})
    started_r, started_w = os.pipe()
    pidfd = os.pidfd_open(fake.process.pid)
    fake.send({"op": "started", "slot": 0, "pid": fake.process.pid, "out": str(fake.out), "crash": str(fake.crash)},
              [started_r, pidfd])
    os.close(started_r)
    os.close(pidfd)
    process = launcher.start(launcher._config, [items[0]], 0)
    assert fake.received() == [{"op": "spare", "slot": 0}, {"op": "start", "slot": 0, "positions": [0]}]
    assert launcher._asked == set() and 0 not in launcher._spares
    os.close(process.read_fd)
    os.close(process.pidfd)
    os.close(started_w)


def _ended_process(launcher: zygote.ZygoteLauncher, fake: FakeZygote, items: list[object]):
    launcher.prepare_spare(launcher._config, 0)
    fake.hand_spare()
    process = launcher.start(launcher._config, [items[0]], 0)
    os.close(process.read_fd)
    os.close(process.pidfd)
    return process


def test_an_exit_not_reported_yet_does_not_keep_the_parent_waiting(pair) -> None:
    """The parent asks without blocking once a process's pidfd says it ended; the zygote's
    socket (``notice_fd``) turns readable when the report comes, and ``read_notices`` takes it."""
    launcher, fake, items = pair
    process = _ended_process(launcher, fake, items)
    notices = launcher.notice_fd()
    assert notices is not None
    assert select.select([notices], [], [], 0)[0] == []
    launcher.reap(process, block=False)  # nothing reported: returns at once
    assert process.status is None and launcher._sock is not None
    fake.send({"op": "ended", "pid": process.pid, "status": 9})
    assert select.select([notices], [], [], 5)[0] == [notices]
    launcher.read_notices()
    assert select.select([notices], [], [], 0)[0] == []  # everything waiting was taken in
    launcher.reap(process, block=False)
    assert process.status == 9
    assert launcher._unreported == {}


def test_a_zygote_that_never_reports_an_exit_is_given_up_after_its_answer_time(pair, monkeypatch) -> None:
    launcher, fake, items = pair
    process = _ended_process(launcher, fake, items)
    monkeypatch.setattr(zygote, "ANSWER_S", 0.2)
    launcher.reap(process, block=False)
    assert process.status is None and launcher._sock is not None  # the clock starts here
    time.sleep(0.3)
    lost = []
    monkeypatch.setattr(launcher, "_lost", lambda: lost.append(True))
    launcher.reap(process, block=False)
    assert lost == [True]  # then the orphan is the parent's to reap


def test_launchers_without_a_zygote_have_no_notices(tmp_path: Path) -> None:
    launcher = ForkLauncher(slots=[DeviceSlot(label="cpu")], folder=str(tmp_path), timeout_s=None, threads=None,
                            leak_kinds=(), leak_policy=LeakPolicy())
    assert launcher.notice_fd() is None
    launcher.read_notices()  # nothing to read, nothing raised
