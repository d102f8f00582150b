"""``xcompat test``: run a project's tests, each in its own process, with crash, hang and leak detection."""

from __future__ import annotations

import argparse
from pathlib import Path

from xcompat.outputs import OutputFile

ISOLATION_CHOICES = ("none", "file", "test")
LEAK_CHOICES = ("host", "device")


def _leak_list(value: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in value.split(",") if k.strip())
    bad = [k for k in kinds if k not in LEAK_CHOICES]
    if bad or not kinds:
        raise argparse.ArgumentTypeError(f"expected a comma list of {', '.join(LEAK_CHOICES)}, got {value!r}")
    return kinds


def _positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError("must be 0 (no timeout) or more")
    return number


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "targets",
        nargs="*",
        metavar="PROJECT_OR_PATHS",
        help="a project folder (its tests/ is used when present) or test files/folders; default: .",
    )
    parser.add_argument(
        "--isolate",
        choices=ISOLATION_CHOICES,
        default=None,
        help="one process per test, per file, or none (in-process); default: tests.isolation's default (test)",
    )
    parser.add_argument("--junit", type=OutputFile(), metavar="OUT", help="write JUnit XML (test names carry the cell id)")
    parser.add_argument("--json", type=OutputFile(), metavar="OUT", help="write the versioned JSON result (schema: test-result)")
    parser.add_argument(
        "--timeout",
        type=_positive_float,
        default=None,
        metavar="S",
        help="per-test timeout in seconds; 0: none; default: tests.timeout's default (300)",
    )
    parser.add_argument("--cell-id", metavar="ID", help="the matrix cell these results belong to")
    parser.add_argument(
        "--leaks",
        type=_leak_list,
        default=(),
        metavar="host,device",
        help="repeat each passing test and watch memory",
    )
    parser.add_argument(
        "--leak-repeat", type=_positive_int, default=5, metavar="N", help="calls measured (default 5)"
    )
    parser.add_argument(
        "--leak-threshold",
        type=_positive_int,
        default=1 << 20,
        metavar="BYTES",
        help="host growth over the repeats that counts as a leak (default 1 MiB)",
    )
    parser.add_argument(
        "--deep",
        choices=("valgrind", "compute-sanitizer"),
        help="re-run the tests under a memory checker; report only what each test adds",
    )
    parser.add_argument(
        "--devices",
        default="auto",
        metavar="auto|N",
        help="workers: one per visible GPU (auto) or N in parallel",
    )
    parser.add_argument(
        "--start-method",
        choices=("auto", "fork", "spawn"),
        default="auto",
        help="fork from a warm parent (Linux default) or spawn fresh interpreters (macOS, Windows)",
    )
    warm = parser.add_mutually_exclusive_group()
    warm.add_argument(
        "--warm-torch", dest="warm_torch", action="store_true", default=None,
        help="import and warm up torch in the parent (default: only when the tests import torch)",
    )
    warm.add_argument(
        "--no-warm-torch", dest="warm_torch", action="store_false", help="never import torch in the parent"
    )
    parser.add_argument(
        "--preload", action="append", default=[], metavar="MODULE", help="import MODULE in the warm parent"
    )
    parser.set_defaults(pytest_args=[])
    parser.epilog = (
        "Arguments after -- go to pytest unchanged. Exit codes: 0 all passed, 1 a test failed, "
        "crashed, timed out or leaked, 2 usage error (no tests collected), 5 tool unavailable."
    )
    _split_at_double_dash(parser)


def _split_at_double_dash(parser: argparse.ArgumentParser) -> None:
    """Everything after ``--`` is pytest's; argparse alone would try to read it as targets."""
    original = parser.parse_known_args

    def parse_known_args(args=None, namespace=None):  # type: ignore[no-untyped-def]
        args = list(args or [])
        tail: list[str] = []
        if "--" in args:
            cut = args.index("--")
            args, tail = args[:cut], args[cut + 1 :]
        namespace, extras = original(args, namespace)
        namespace.pytest_args = tail
        return namespace, extras

    parser.parse_known_args = parse_known_args  # type: ignore[method-assign]


def _targets(raw: list[str], pyargs: bool = False) -> tuple[str, ...]:
    from xcompat.errors import UsageError

    if not raw:
        return ()
    if pyargs:
        # -- --pyargs: the targets are importable names (tests inside an installed package)
        return tuple(raw)
    out = []
    for target in raw:
        path = Path(target.split("::", 1)[0])
        if not path.exists():
            raise UsageError(f"no such test file or project folder: {target}")
        if (
            path.is_dir()
            and "::" not in target
            and (path / "pyproject.toml").is_file()
            and (path / "tests").is_dir()
        ):
            out.append(str(path / "tests"))
        else:
            out.append(target)
    return tuple(out)


def execute(args: argparse.Namespace) -> int:
    from xcompat.isolate.leaks import LeakPolicy
    from xcompat.isolate.session import RunOptions, run_tests
    from xcompat.isolate.writers import write_json_result, write_junit
    from xcompat.log import get_logger

    log = get_logger()
    from xcompat.settings import defaults

    pytest_args = list(args.pytest_args or [])
    from xcompat.errors import CheckFailed, UsageError
    from xcompat.settings.pytest_options import not_running_option

    refused = not_running_option(pytest_args)
    if refused is not None:
        _index, option, instead = refused
        raise UsageError(f"pytest option {option} makes pytest {instead}; xcompat test would report a run that "
                         "tested nothing", hint=f"remove {option} from the arguments after -- or from tests.pytest-args")
    isolation = args.isolate if args.isolate is not None else defaults()["tests.isolation"]
    timeout = args.timeout if args.timeout is not None else float(defaults()["tests.timeout"])
    options = RunOptions(
        paths=_targets(args.targets, pyargs="--pyargs" in pytest_args),
        pytest_args=tuple(pytest_args),
        isolation=isolation,
        timeout_s=timeout or None,
        cell_id=args.cell_id,
        leak_kinds=tuple(args.leaks),
        leak_policy=LeakPolicy(repeats=args.leak_repeat, host_threshold_bytes=args.leak_threshold),
        deep=args.deep,
        devices=args.devices,
        start_method=args.start_method,
        warm_torch=args.warm_torch,
        preload=tuple(args.preload),
    )
    result = run_tests(options)
    if args.json:
        write_json_result(args.json, result)
    if args.junit:
        write_junit(args.junit, result)
    for record in result.records:
        if record.outcome == "error":  # the logger's own "error:" prefix names the outcome
            log.error(f"{record.nodeid}: {record.message}")
        elif record.outcome in ("crashed", "timeout", "leaked"):
            log.error(f"{record.outcome}: {record.nodeid}: {record.message}")
    if result.records and all(r.message.startswith("collection failed") for r in result.records):
        log.error(
            "pytest ran no tests because a test file could not be collected; fix it, or pass "
            "-- --continue-on-collection-errors to run the other files"
        )
    line = result.summary()
    if result.failed:
        raise CheckFailed(line)
    log.success(line)
    return 0
