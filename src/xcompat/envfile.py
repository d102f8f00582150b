"""Variables for the files a CI runner reads back: ``$GITHUB_ENV``, ``$GITHUB_OUTPUT`` and
GitLab dotenv reports (and ``--format env`` text meant for either).

Values come from files a pull request can edit (a matrix's ``gate.tag-pattern``, a plan's cell
ids), and a runner reads these files line by line: a value holding a line break, written raw,
ends its own variable and starts another (``LD_PRELOAD=...``, ``BASH_ENV=...``) for every later
step. So every variable xcompat writes there is made by ``assignment``:

* the name must be ``[A-Za-z_][A-Za-z0-9_]*`` (step outputs may also hold ``-``, as in
  ``cells-passed``): a name is never text that could carry ``=``, ``<<`` or a line break;
* a NUL byte is refused: runners and shells cut a value there, so what was checked is not
  what is used;
* ``form="github"`` (the runner's own files): ``NAME<<ghadelimiter_<random>``, the value, the
  delimiter; the runner's documented multi-line syntax, written for every value as the
  Actions toolkit writes it, with a delimiter the value cannot have known;
* ``form="dotenv"`` (a GitLab dotenv report, and text printed for either runner): ``NAME=value``;
  GitLab's dotenv has no multi-line syntax, so a value with a line break (LF or CR) is refused.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from xcompat.errors import InputError

Form = Literal["github", "dotenv"]

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
OUTPUT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
DELIMITER_PREFIX = "ghadelimiter_"


def _shown(value: str) -> str:
    return repr(value if len(value) <= 60 else value[:60] + "…")


def assignment(
    name: str,
    value: str,
    form: Form,
    *,
    names: re.Pattern[str] = ENV_NAME,
    source: str | Path | None = None,
    what: str = "",
) -> str:
    """One variable as the text to append to a file of ``form`` (ending in a newline).

    ``what`` names where the value came from (``gate.tag-pattern``) in the refusal;
    ``source`` is the file it came from.
    """
    where = what or name
    if not isinstance(name, str) or not names.fullmatch(name):
        allowed = "letters, digits and _" + (" or -" if names is OUTPUT_NAME else "")
        raise InputError(f"variable name {_shown(str(name))} is not a name: {allowed}, not starting with a digit",
                         file=source)
    if not isinstance(value, str):
        raise InputError(f"{where}: expected a string value, got {type(value).__name__}", file=source)
    if "\0" in value:
        raise InputError(f"{where}: the value {_shown(value)} holds a NUL byte", file=source,
                         hint="a CI variable cannot carry one")
    if form == "github":
        delimiter = DELIMITER_PREFIX + uuid.uuid4().hex
        while delimiter in value:  # never: the value was made before the delimiter
            delimiter = DELIMITER_PREFIX + uuid.uuid4().hex
        return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"
    if "\n" in value or "\r" in value:
        raise InputError(f"{where}: the value {_shown(value)} spans lines, which NAME=value cannot hold",
                         file=source, hint="a CI variable here is one line; remove the line break")
    return f"{name}={value}\n"


def assignments(
    pairs: Iterable[tuple[str, str]],
    form: Form,
    *,
    names: re.Pattern[str] = ENV_NAME,
    source: str | Path | None = None,
    what: dict[str, str] | None = None,
) -> str:
    """Several variables; every one is checked before any text is returned, so a refusal writes nothing."""
    what = what or {}
    return "".join(assignment(n, v, form, names=names, source=source, what=what.get(n, "")) for n, v in pairs)


def append(path: str | Path, text: str) -> None:
    """Append made text (``assignment``) to a runner's file in one write."""
    # newline="" : the runner splits on LF (and CRLF on Windows); no translation adds a CR.
    with open(path, "a", encoding="utf-8", newline="") as fh:
        fh.write(text)


__all__ = ["DELIMITER_PREFIX", "ENV_NAME", "OUTPUT_NAME", "Form", "append", "assignment", "assignments"]
