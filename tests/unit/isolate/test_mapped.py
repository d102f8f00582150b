"""What a test process maps at its end: read from this process's real /proc/self/maps (a
library copied to a temp folder and loaded with ctypes), sent as what it added to what it
inherited, and kept per run as each distinct set once."""

from __future__ import annotations

import ctypes
import shutil
import sys
from pathlib import Path

import pytest

from xcompat.isolate import mapped
from xcompat.isolate.mapped import MAX_SETS, MappedUnion, end_message, mapped_objects, remember_inherited

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/maps is Linux's")


def _load_copy(tmp_path: Path, name: str) -> str:
    """A copy of ctypes' own extension module, loaded from ``tmp_path`` as ``name``: a new file
    mapped, and harmless (dlopen runs no Python initialisation)."""
    import _ctypes

    copy = tmp_path / name
    shutil.copy(_ctypes.__file__, copy)
    ctypes.CDLL(str(copy))
    return str(copy)


def test_the_maps_of_this_process_name_its_shared_objects_only(tmp_path: Path) -> None:
    before = mapped_objects()
    assert before is not None and any(Path(p).name.startswith("libc.so") for p in before)
    assert all(mapped.is_shared_object(p) and p.startswith("/") for p in before)
    assert sys.executable not in before  # the interpreter is mapped, but it is no shared object
    planted = _load_copy(tmp_path, "libplanted_a.so")
    after = mapped_objects()
    assert after is not None and after - before == {planted}


def test_maps_over_the_limit_are_not_read() -> None:
    assert mapped_objects(limit=100) is None
    assert mapped_objects(pid=2**22 + 12345) is None  # no such process


def test_a_test_process_sends_only_what_it_added_to_what_it_inherited(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mapped, "INHERITED", frozenset())
    inherited = remember_inherited()
    assert inherited and inherited == mapped.INHERITED
    assert end_message() == {"event": "libraries", "nodeid": "", "paths": []}
    planted = _load_copy(tmp_path, "libplanted_b.so")
    assert end_message() == {"event": "libraries", "nodeid": "", "paths": [planted]}


def test_the_run_keeps_each_distinct_set_of_additions_once() -> None:
    union = MappedUnion(frozenset({"/usr/lib/libc.so.6"}))
    for paths in (["/tmp/a/liba.so"], [], ["/tmp/a/liba.so"], ["/tmp/b/libb.so", "/tmp/a/liba.so"]):
        union.add({"event": "libraries", "nodeid": "", "paths": paths})
    union.add({"event": "libraries", "nodeid": "", "unread": True})
    union.add({"event": "libraries", "nodeid": "", "paths": "not a list"})  # ignored, not counted
    union.add({"event": "libraries", "nodeid": "", "paths": [3, "relative.so"]})  # read, nothing usable
    assert union.to_dict() == {"processes": 5, "unread": 1, "common": ["/usr/lib/libc.so.6"],
                               "added": [["/tmp/a/liba.so"], ["/tmp/a/liba.so", "/tmp/b/libb.so"]]}


def test_past_the_bound_of_sets_later_ones_join_the_last() -> None:
    union = MappedUnion(frozenset())
    for i in range(MAX_SETS + 3):
        union.add({"event": "libraries", "nodeid": "", "paths": [f"/t/lib{i}.so"]})
    added = union.to_dict()["added"]
    assert len(added) == MAX_SETS
    assert {f"/t/lib{i}.so" for i in range(MAX_SETS - 1, MAX_SETS + 3)} == set(added[-1])
    assert sum(len(s) for s in added) == MAX_SETS + 3  # no path is lost


def test_no_process_read_means_no_common_libraries() -> None:
    assert MappedUnion(frozenset({"/usr/lib/libc.so.6"})).to_dict()["common"] == []


def test_a_test_that_broke_the_reading_costs_only_the_libraries(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(path: str, limit: int) -> bytes:
        raise TypeError("a test left os.open patched")

    monkeypatch.setattr(mapped, "_read_bounded", broken)
    assert end_message() is None  # not an error of the test process: the message is left out
