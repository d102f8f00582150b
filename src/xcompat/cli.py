"""Command-line entry point.

Subcommands are data: ``COMMANDS`` maps a command path to the module that implements it
and its one-line help. Only the module of the command being run is imported, so
``xcompat --help`` stays fast. Each command module provides

    def configure_parser(parser: argparse.ArgumentParser) -> None
    def execute(args: argparse.Namespace) -> int

``main`` is the only place that catches ``XcompatError`` and turns it into an exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from xcompat import __version__
from xcompat.errors import Interrupted, XcompatError

# (group, command) or (command,) -> (module, help)
COMMANDS: dict[tuple[str, ...], tuple[str, str]] = {
    ("matrix", "validate"): ("xcompat.commands.matrix_validate", "check a matrix file: YAML, schema, duplicate keys"),
    ("matrix", "sign"): ("xcompat.commands.matrix_sign", "bump serial and sign a matrix with an SSH key"),
    ("matrix", "verify"): ("xcompat.commands.matrix_verify", "verify a matrix signature against allowed_signers"),
    ("matrix", "plan"): ("xcompat.commands.matrix_plan", "expand a matrix into CI jobs (json, github, gitlab, cibuildwheel)"),
    ("matrix", "init"): ("xcompat.commands.matrix_init", "write a starter matrix for a project (Pythons, tests, torch)"),
    ("matrix", "settings"): ("xcompat.commands.matrix_settings", "the resolved settings of a cell, for CI jobs (env or json)"),
    ("keys", "fingerprint"): ("xcompat.commands.keys_fingerprint", "print the SHA256 fingerprint of an SSH public key"),
    ("build",): ("xcompat.commands.build", "build, repair and audit wheels for this runner's cells"),
    ("abi", "diff"): ("xcompat.commands.abi_diff", "diff the binary and Python interface of two wheels"),
    ("abi", "snapshot"): ("xcompat.commands.abi_snapshot", "write a gzipped ABI manifest to diff against later"),
    ("abi", "links"): ("xcompat.commands.abi_links", "resolve an extension's symbols against torch versions"),
    ("abi", "stable"): ("xcompat.commands.abi_stable", "audit an extension's use of LibTorch's stable ABI"),
    ("abi", "isa"): ("xcompat.commands.abi_isa", "list instructions above an ISA floor (x86-64-v2, armv8.0-a), per function"),
    ("probe",): ("xcompat.commands.probe", "describe this machine's device stack and check it"),
    ("kernels", "run"): ("xcompat.commands.kernels_run", "build and run the conformance kernels with a fallback chain"),
    ("kernels", "operators"): ("xcompat.commands.kernels_operators", "check the project's own PyTorch operators from declared samples"),
    ("test",): ("xcompat.commands.test", "run a project's tests, each isolated, with crash, hang and leak detection"),
    ("coverage", "collect"): ("xcompat.commands.coverage_collect", "gather Python and native coverage in a test cell"),
    ("coverage", "merge"): ("xcompat.commands.coverage_merge", "merge the coverage of all cells, with diff coverage"),
    ("report",): ("xcompat.commands.report", "render and deliver the report (GitHub, GitLab, Markdown, JSON)"),
    ("gate",): ("xcompat.commands.gate", "release gate: refuse a tag unless the matrix was satisfied"),
    ("run",): ("xcompat.commands.run", "run the whole pipeline locally and write report.md/json/html"),
    ("contracts", "stubs"): ("xcompat.commands.contracts_stubs", "check a wheel's .pyi stubs against its runtime (stubtest)"),
    ("contracts", "libraries"): ("xcompat.commands.contracts_libraries", "list the shared objects an import maps; duplicate runtimes"),
    ("contracts", "python-floor"): ("xcompat.commands.contracts_python_floor", "the lowest Python the sources need vs Requires-Python"),
    ("stage",): ("xcompat.commands.stage", "run one stage of a CI pipeline, as the GitHub action and GitLab template do"),
}

GROUP_HELP = {
    "matrix": "the signed test matrix",
    "keys": "SSH keys",
    "abi": "ABI diff and torch link checks",
    "kernels": "device conformance kernels",
    "coverage": "merged Python and native coverage",
    "contracts": "stub, runtime-library and Python-floor contracts",
}


def _selected(argv: Sequence[str]) -> tuple[str, ...] | None:
    words = [a for a in argv if not a.startswith("-")]
    for key in COMMANDS:
        if tuple(words[: len(key)]) == key:
            return key
    return None


def _columns() -> int:
    """The terminal's width, as ``shutil.get_terminal_size`` finds it."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter with the width given: argparse would import ``shutil`` for it
    (with ``bz2``, ``lzma`` and ``zlib``), about 4 ms of every command's start-up, help or not."""

    def __init__(self, prog: str, **kwargs: Any) -> None:
        if kwargs.get("width") is None:
            kwargs["width"] = _columns() - 2
        super().__init__(prog, **kwargs)


class _Parser(argparse.ArgumentParser):
    """An argument parser using :class:`_Formatter`; sub-parsers are made of the parent's class,
    so every parser of the command line gets it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="xcompat",
        description="Cross-architecture compatibility CI for Python packages with native extensions.",
        epilog="Exit codes: 0 ok, 1 check failed, 2 usage/input error, 3 verification failed, "
        "4 external tool failed, 5 backend/tool unavailable, 129/130/143 interrupted by SIGHUP/SIGINT/SIGTERM.",
    )
    parser.add_argument("--version", action="version", version=f"xcompat {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more output (repeatable)")
    top = parser.add_subparsers(dest="command", metavar="COMMAND")
    groups: dict[str, argparse._SubParsersAction[_Parser]] = {}
    selected = _selected(argv)
    for key, (module, help_text) in COMMANDS.items():
        if selected is not None and key != selected:
            continue  # a selected subcommand's help and errors never list the others
        if len(key) == 1:
            sub = top.add_parser(key[0], help=help_text, description=help_text)
        else:
            if key[0] not in groups:
                gp = top.add_parser(key[0], help=GROUP_HELP[key[0]], description=GROUP_HELP[key[0]])
                groups[key[0]] = gp.add_subparsers(dest="subcommand", metavar="SUBCOMMAND")
            sub = groups[key[0]].add_parser(key[1], help=help_text, description=help_text)
        sub.set_defaults(_module=module)
        if key == selected:
            mod = importlib.import_module(module)
            mod.configure_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from xcompat.log import configure

    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser(argv)
    except ModuleNotFoundError as exc:
        print(f"xcompat: this command is not available in this installation ({exc.name})", file=sys.stderr)
        return 5
    args = parser.parse_args(argv)
    configure(verbosity=args.verbose)
    module = getattr(args, "_module", None)
    if module is None:
        # `xcompat matrix` alone: the group's help (its subcommands), not the top-level one.
        _group_parser(parser, getattr(args, "command", None)).print_help()
        return 2
    from xcompat import interrupts

    command = " ".join(w for w in (args.command, getattr(args, "subcommand", None)) if w)
    with interrupts.handled():  # SIGTERM and SIGHUP end a command as Ctrl-C does
        try:
            return _execute(module, args, command)
        except KeyboardInterrupt as exc:  # the signal came while the command's own error was reported
            return _ended(exc, command)


def _execute(module: str, args: argparse.Namespace, command: str) -> int:
    try:
        mod = importlib.import_module(module)
        return int(mod.execute(args) or 0)
    except (XcompatError, KeyboardInterrupt) as exc:
        return _ended(exc, command)
    except BrokenPipeError:
        return 0


def _ended(exc: BaseException, command: str) -> int:
    """Report how the command ended and return its exit code. One a signal stopped first ends
    every process it started that still runs."""
    from xcompat import interrupts
    from xcompat.log import get_logger, report_error

    signal_name = interrupts.received()
    if isinstance(exc, XcompatError) and not isinstance(exc, Interrupted) and signal_name is None:
        report_error(exc)
        return exc.exit_code
    if signal_name is not None:  # only then: a KeyboardInterrupt raised in code stops what its own code started
        for process in interrupts.end_descendants():
            get_logger().debug(f"xcompat {command}: ended process {process}, which it had started")
    if not isinstance(exc, Interrupted) or exc.signal_name != (signal_name or Interrupted.signal_name):
        # A KeyboardInterrupt that no command turned into its error, or an error the signal
        # caused (a tool that the same signal ended): the signal is why the command stopped.
        exc = interrupts.error("no partial results were written")
    report_error(type(exc)(f"xcompat {command}: {exc.message}", hint=exc.hint, details=exc.details))
    return exc.exit_code


def _group_parser(parser: argparse.ArgumentParser, group: str | None) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and group in action.choices:
            found: argparse.ArgumentParser = action.choices[group]
            return found
    return parser


def run() -> int:
    """The console entry point (``xcompat``, ``python -m xcompat``): :func:`main`, then
    :func:`exit_now` when nothing runs around xcompat in this process. Under a wrapper that
    acts after the program returns (``coverage run -m xcompat`` saves its data then; a
    profiler, a debugger) the exit code is returned instead."""
    code = main()
    if _called_at_top(sys._getframe(1)):
        exit_now(code)
    return code


def _called_at_top(frame: Any) -> bool:
    """Whether ``frame`` is a script's top level with nothing under it but ``runpy`` (``-m``)."""
    if frame.f_code.co_name != "<module>":
        return False
    below = frame.f_back
    while below is not None:
        if below.f_globals.get("__name__") != "runpy":  # its file may be "<frozen runpy>"
            return False
        below = below.f_back
    return True


def exit_now(code: int) -> None:
    """End the process with ``code`` once the command is done, skipping the interpreter's
    teardown of its modules and objects.

    The exit handlers still run (``atexit``: logging, the finalizers of temporary files and
    folders, coverage, multiprocessing) and the standard streams are flushed; only the
    object-by-object teardown is skipped, a noticeable share of a short command's CPU time
    (it visits every object still alive, module by module). While other threads run, the normal
    exit is kept, since it waits for them.

    What teardown alone would do is lost: ``__del__`` of objects still alive, and the flush of
    a file object left open in a global. Commands write their files in ``with`` blocks (or
    through :mod:`xcompat.outputs`); keep it so.
    """
    import atexit

    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    threading = sys.modules.get("threading")  # never imported: no other thread was started
    if (threading is not None and threading.active_count() > 1) or run_exit_handlers is None:
        raise SystemExit(code)
    run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe (`xcompat ... | head`): nothing more to say
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    raise SystemExit(run())
