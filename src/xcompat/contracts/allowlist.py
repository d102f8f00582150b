"""The stubtest allowlist (``.xcompat/stubtest-allowlist.txt``): stubtest's own format, checked
before stubtest sees it, so a malformed file is the user's input error, not a tool crash.

One entry per line, a regular expression matched against the full object name
(``pkg\\.mod\\.name``); ``#`` starts a comment; blank lines are ignored.
"""

from __future__ import annotations

import re
from pathlib import Path

from xcompat.errors import InputError
from xcompat.limits import read_bounded_text

DEFAULT = Path(".xcompat/stubtest-allowlist.txt")
LIMIT = 1024 * 1024
MAX_ENTRY = 1000


def check_allowlist(path: Path) -> list[str]:
    """The entries of ``path``; InputError naming the line of the first bad one."""
    text = read_bounded_text(path, what="stubtest allowlist", limit=LIMIT)
    entries: list[str] = []
    for number, raw in enumerate(text.splitlines(), 1):
        entry = raw.split("#", 1)[0].strip()
        if not entry:
            continue
        if len(entry) > MAX_ENTRY:
            raise InputError(f"entry of {len(entry)} characters, over the limit of {MAX_ENTRY}", file=path,
                             line=number)
        if "\0" in entry:
            raise InputError("entry holds a NUL character", file=path, line=number)
        try:
            re.compile(entry)
        except re.error as exc:
            raise InputError(f"not a regular expression: {exc}", file=path, line=number,
                             hint="entries are Python regular expressions over full names, "
                                  r"such as pkg\.mod\.name") from None
        entries.append(entry)
    return entries
