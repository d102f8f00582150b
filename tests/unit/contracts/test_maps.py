"""/proc/<pid>/maps parsing: the kernel's format, hostile lines, the read bound."""

from __future__ import annotations

import os
import sys

import pytest

from xcompat.contracts.maps import is_shared_object, parse_maps, read_maps
from xcompat.errors import InputError

LINES = """\
55d4c8a00000-55d4c8a01000 r--p 00000000 08:01 131 /usr/bin/python3.11
7f1c2a000000-7f1c2a021000 rw-p 00000000 00:00 0
7f1c2b000000-7f1c2b1c0000 r-xp 00028000 08:01 4242 /usr/lib/x86_64-linux-gnu/libc.so.6
7f1c2b1c0000-7f1c2b1d0000 r--p 001c0000 08:01 4242 /usr/lib/x86_64-linux-gnu/libc.so.6
7f1c2c000000-7f1c2c001000 r-xp 00000000 08:01 77 /home/u/my dir/libspace y.so
7f1c2d000000-7f1c2d001000 r-xp 00000000 08:01 78 /tmp/libgone.so.1 (deleted)
7ffd1a000000-7ffd1a021000 rw-p 00000000 00:00 0                          [stack]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
"""


def test_files_once_each_with_spaces_and_deleted() -> None:
    maps = parse_maps(LINES)
    paths = [f.path for f in maps.files]
    assert paths == ["/usr/bin/python3.11", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/home/u/my dir/libspace y.so",
                     "/tmp/libgone.so.1"]
    assert [f.deleted for f in maps.files] == [False, False, False, True]
    assert maps.files[1].inode == 4242
    assert maps.malformed == 0


@pytest.mark.parametrize("line", [
    "not a maps line",
    "7f00-7f01 rwxq 0 08:01 1 /lib/x.so",  # bad permission letter
    "7f00-7f01 r-xp zz 08:01 1 /lib/x.so",
    "7f00 r-xp 0 08:01 1 /lib/x.so",
    "\x00\x01\x02",
    "7f00-7f01 r-xp 0 08:01 -1 /lib/x.so",
])
def test_malformed_lines_are_counted_not_kept(line: str) -> None:
    maps = parse_maps(line + "\n" + "7f00-7f01 r-xp 0 08:01 5 /lib/ok.so\n")
    assert [f.path for f in maps.files] == ["/lib/ok.so"]
    assert maps.malformed == 1


def test_huge_text_parses_in_bounded_entries() -> None:
    text = "".join(f"{i:x}-{i + 1:x} r-xp 0 08:01 {i} /lib/lib{i % 7}.so\n" for i in range(50_000))
    assert len(parse_maps(text).files) == 7


@pytest.mark.parametrize(("name", "shared"), [
    ("libc.so.6", True), ("libgomp-a34b3233.so.1.0.0", True), ("_core.cpython-311-x86_64-linux-gnu.so", True),
    ("python3.11", False), ("locale-archive", False), ("x.so.bak~", False), ("libfoo.sox", False),
])
def test_shared_object_names(name: str, shared: bool) -> None:
    assert is_shared_object("/x/" + name) is shared


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/<pid>/maps is Linux's")
def test_read_self_and_bounds() -> None:
    maps = read_maps("self")
    assert any("libc" in f.path for f in maps.files)
    with pytest.raises(InputError, match="over the limit"):
        read_maps(os.getpid(), limit=64)
    with pytest.raises(InputError, match="no process"):
        read_maps(2**22 + 12345)
