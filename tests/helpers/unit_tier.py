"""The unit tier's rule: no test under tests/unit starts ``xcompat run``.

``xcompat run`` is the whole pipeline (builds, test processes, ABI diffs): a test of it belongs
in tests/integration. An audit hook sees every process this interpreter starts
(``subprocess``, ``os.posix_spawn``, ``os.exec*``, ``os.system``); while a unit test runs
(:func:`guarding`, used by tests/unit/conftest.py), starting ``xcompat run`` raises
:class:`StartsXcompatRun` and fails the test, even one that catches the error. ``cli.main``
called in the test's own process starts no process and is not refused.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import sys
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["StartsXcompatRun", "guarding", "starts_xcompat_run"]

# `cli.main(["run", ...])` or `sys.argv = ["xcompat", "run", ...]` in the code of a `python -c`.
_RUN_IN_CODE = re.compile(r"""(?:main\(\s*\[\s*|\[\s*['"]xcompat['"]\s*,\s*)['"]run['"]""")
_ENTRIES = ("xcompat", "xcompat.cli", "xcompat.__main__")


class StartsXcompatRun(RuntimeError):
    """A unit test started ``xcompat run``."""


def _words(command: Any) -> list[str]:
    if isinstance(command, (str, bytes, os.PathLike)):
        text = os.fsdecode(command)
        try:
            return shlex.split(text)
        except ValueError:
            return text.split()
    if isinstance(command, Sequence):
        return [os.fsdecode(w) if isinstance(w, (str, bytes, os.PathLike)) else str(w) for w in command]
    return []


def _command_after(words: list[str]) -> str | None:
    """The first word that is not an option: the subcommand xcompat is given."""
    return next((w for w in words if not w.startswith("-")), None)


def starts_xcompat_run(command: Any, _depth: int = 0) -> bool:
    """Whether ``command`` (an argv list or a shell string) runs ``xcompat run``: the console
    script, ``python -m xcompat``, or ``cli.main`` in a ``python -c``, also inside a shell
    command (``bash -c "..."``)."""
    words = _words(command)
    for i, word in enumerate(words):
        rest = words[i + 1:]
        if os.path.basename(word) == "xcompat" and _command_after(rest) == "run":
            return True
        if word == "-m" and rest and rest[0] in _ENTRIES and _command_after(rest[1:]) == "run":
            return True
        if word.startswith("-m") and word[2:] in _ENTRIES and _command_after(rest) == "run":
            return True
        if word == "-c" and rest and "xcompat" in rest[0] and _RUN_IN_CODE.search(rest[0]):
            return True
        if _depth < 3 and i > 0 and any(c.isspace() for c in word) and starts_xcompat_run(word, _depth + 1):
            return True
    return False


_state: dict[str, Any] = {"active": False, "started": []}


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _state["active"]:
        return
    if event in ("subprocess.Popen", "os.posix_spawn", "os.exec"):  # (executable or path, argv, ...)
        command = args[1]
    elif event == "os.system":
        command = args[0]
    else:
        return
    if starts_xcompat_run(command):
        shown = command if isinstance(command, str) else " ".join(_words(command))
        _state["started"].append(shown)
        raise StartsXcompatRun(
            f"a unit test started `xcompat run` ({shown[:300]}): the whole pipeline belongs in "
            "tests/integration; here, call the function under test or xcompat.cli.main in this process")


sys.addaudithook(_audit)  # once per interpreter: this module is imported once


@contextlib.contextmanager
def guarding() -> Iterator[list[str]]:
    """Within: starting ``xcompat run`` raises; yields the list of such commands seen."""
    started: list[str] = []
    previous = dict(_state)
    _state.update(active=True, started=started)
    try:
        yield started
    finally:
        _state.update(previous)
