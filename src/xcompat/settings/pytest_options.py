"""pytest options that make pytest do something other than run the tests.

With any of them a run "passes" without a test body having run (``--setup-only``,
``--setup-plan``: fixtures only, every test reported passed) or ends as "no tests were
collected" although there are tests (``--collect-only``, ``--fixtures``, ``--help``). Both the
matrix's ``tests.pytest-args`` and the arguments after ``xcompat test --`` are checked
against this table; each entry says what pytest does instead.
"""

from __future__ import annotations

from collections.abc import Iterable

NOT_RUNNING = {
    "--setup-only": "set up and tear down the fixtures without running a test (each test is reported passed)",
    "--setup-plan": "show the fixtures it would set up without running a test (each test is reported passed)",
    "--collect-only": "list the tests without running them",
    "--co": "list the tests without running them",
    "--fixtures": "list the fixtures without running a test",
    "--funcargs": "list the fixtures without running a test",
    "--fixtures-per-test": "list each test's fixtures without running it",
    "--markers": "list the markers without running a test",
    "--version": "print its version without running a test",
    "-V": "print its version without running a test",
    "--help": "print its help without running a test",
    "-h": "print its help without running a test",
}


# pytest's short options that take no value; any other short option takes the rest of its
# token (``-kslow``) or the next one as its value
_SHORT_FLAGS = frozenset("xqvslhV")


def not_running_option(args: Iterable[str]) -> tuple[int, str, str] | None:
    """The first argument that keeps pytest from running the tests: (index, option, what
    pytest does instead); None when there is none. ``--opt=value`` forms and short flags
    combined in one token (``-qV``) count too."""
    takes_value = False
    for index, arg in enumerate(args):
        if takes_value:  # the value of the short option before (``-k -h`` selects "-h")
            takes_value = False
            continue
        if arg.startswith("--"):
            option = arg.partition("=")[0]
            if option in NOT_RUNNING:
                return index, option, NOT_RUNNING[option]
        elif arg.startswith("-") and len(arg) > 1:
            for position, char in enumerate(arg[1:], start=1):
                if char in ("h", "V"):
                    return index, f"-{char}", NOT_RUNNING[f"-{char}"]
                if char not in _SHORT_FLAGS:
                    takes_value = position == len(arg) - 1  # "-k" alone: its value is the next token
                    break
    return None
