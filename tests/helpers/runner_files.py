"""The files a CI runner reads back, read the way the runner reads them.

``github_file_variables`` follows GitHub's documented rule for ``$GITHUB_ENV`` and
``$GITHUB_OUTPUT`` ("Workflow commands": setting an environment variable, multiline strings)
as the Actions runner applies it: the file is split at line feeds; an empty line is skipped;
in each other line, whichever of ``=`` and ``<<`` comes first decides: ``NAME=value`` is one
variable, ``NAME<<DELIMITER`` opens a block whose value is every following line up to a line
that is exactly ``DELIMITER``. Every variable is returned in order, repeats included, so a
test sees a second one that a value smuggled in.

``gitlab_dotenv_variables`` follows GitLab's dotenv report rule: one ``KEY=VALUE`` per line,
the key ``[A-Za-z_][A-Za-z0-9_]*``; GitLab rejects the whole report on any other line.
"""

from __future__ import annotations

import re


def github_file_variables(text: str) -> list[tuple[str, str]]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    found: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line == "":
            continue
        equals, heredoc = line.find("="), line.find("<<")
        if equals >= 0 and (heredoc < 0 or equals < heredoc):
            name, value = line.split("=", 1)
        elif heredoc >= 0:
            name, delimiter = line.split("<<", 1)
            if not delimiter:
                raise AssertionError(f"empty delimiter: {line!r}")
            body: list[str] = []
            while True:
                if i >= len(lines):
                    raise AssertionError(f"matching delimiter not found: {delimiter!r}")
                if lines[i] == delimiter:
                    i += 1
                    break
                body.append(lines[i])
                i += 1
            value = "\n".join(body)
        else:
            raise AssertionError(f"invalid format: {line!r}")
        if not name:
            raise AssertionError(f"no name: {line!r}")
        found.append((name, value))
    return found


_DOTENV_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=([^\n]*)")


def gitlab_dotenv_variables(text: str) -> list[tuple[str, str]]:
    found = []
    for line in text.splitlines():
        match = _DOTENV_LINE.fullmatch(line)
        if match is None:
            raise AssertionError(f"GitLab rejects the dotenv report at {line!r}")
        found.append((match.group(1), match.group(2)))
    return found
