"""``xcompat matrix init [PROJECT]``: write a starter ``.xcompat/matrix.yml`` for a project.

It reads the project's metadata (nothing is imported): the Python versions its
``requires-python`` allows, where its tests are (``tests/`` at the top, or inside the
package: then ``tests.pytest: [PKG.tests]`` with ``--pyargs``, so they run against the
installed wheel), whether it uses torch (kernels run only then) and the repository from
``git remote get-url origin``. The file is validated before it is written, and it is
unsigned: ``xcompat run`` runs it locally with a warning; sign it before CI.

``tests.isolation`` is measured unless ``--no-measure``: the suite runs here under plain
pytest, ``--isolate test`` and ``--isolate file`` within ``--measure-timeout`` seconds, and the
strictest mode within the bound is written with what each cost (``xcompat.isolate.costs``).
When the suite cannot be measured here the default is written, with the reason, in one line.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from xcompat.isolate.costs import DEFAULT_BUDGET_S, DEFAULT_PER_TEST_S, DEFAULT_RATIO
from xcompat.outputs import OutputFile

# CPython versions a starter matrix picks from (what requires-python allows).
KNOWN_PYTHONS = ("3.10", "3.11", "3.12", "3.13", "3.14")


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("project", nargs="?", type=Path, default=Path("."), help="project folder (default: .)")
    parser.add_argument("--repo", metavar="OWNER/NAME",
                        help="repository the matrix is bound to (default: from git remote origin)")
    parser.add_argument("--output", "-o", type=OutputFile(stdout=False), metavar="FILE",
                        help="where to write (default: PROJECT/.xcompat/matrix.yml)")
    parser.add_argument("--force", action="store_true", help="replace an existing matrix")
    parser.add_argument("--no-measure", action="store_true",
                        help="do not run the tests to choose tests.isolation; write its default (test)")
    parser.add_argument("--measure-timeout", type=_seconds, default=DEFAULT_BUDGET_S, metavar="S",
                        help=f"time the measurement of tests.isolation may take (default {DEFAULT_BUDGET_S:g})")
    parser.add_argument("--isolation-bound", type=_ratio, default=DEFAULT_RATIO, metavar="X",
                        help=f"what an isolation mode may cost, in times plain pytest's time (default "
                             f"{DEFAULT_RATIO:g}; up to +{DEFAULT_PER_TEST_S * 1000:g} ms a test is always allowed)")
    parser.epilog = ("Exit codes: 0 written (also when the tests could not be measured: the default is written, "
                     "with a note), 2 not a project, the file exists (without --force), bad metadata or a bad option.")


def _seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {value!r}") from None
    if not 1 <= number <= 24 * 3600:
        raise argparse.ArgumentTypeError(f"must be between 1 and 86400 seconds, not {value}")
    return number


def _ratio(value: str) -> float:
    try:
        number = float(value.removesuffix("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a ratio such as 2 or 1.5x, got {value!r}") from None
    if not 1 <= number <= 1000:
        raise argparse.ArgumentTypeError(f"must be at least 1 (plain pytest's own time), not {value}")
    return number


def _repo_from_git(project: Path) -> str | None:
    import re
    import subprocess

    try:
        url = subprocess.run(["git", "-C", str(project), "remote", "get-url", "origin"], capture_output=True,
                             text=True, timeout=10, check=False).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"(?:[:/])([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+?)(?:\.git)?/?$", url)
    if not m:
        return None
    path = m.group(1)
    # https://host/owner/name or git@host:owner/name: drop the host when it came along
    parts = path.split("/")
    if "." in parts[0] and len(parts) > 2:
        parts = parts[1:]
    return "/".join(parts)


def isolation_lines(mode: str, comment: list[str] | None = None, why_default: str | None = None) -> list[str]:
    """The ``isolation:`` line of the starter matrix, with the measurement above it (``comment``)
    or, for the default, why it was not measured (``why_default``)."""
    if why_default is not None:
        return [f"  isolation: {mode}  # the default; not measured: {why_default}"]
    return [f"  # isolation, {line}" if i == 0 else f"  #   {line}" for i, line in enumerate(comment or [])] + [
        f"  isolation: {mode}"]


def starter_matrix(project: Path, repo: str, isolation: list[str] | None = None) -> str:
    from xcompat.settings import defaults
    from xcompat.settings.project import find_tests, project_facts, supported_pythons

    pythons = supported_pythons(project, KNOWN_PYTHONS) or list(KNOWN_PYTHONS[-1:])
    paths, args = find_tests(project)
    if isolation is None:
        isolation = [f"  isolation: {defaults()['tests.isolation']}"]
    facts = project_facts(project)
    kernels = "all" if facts.uses_torch else "none"
    why_kernels = ("the project uses torch (" + facts.torch_evidence + ")") if facts.uses_torch \
        else "the project does not use torch"

    def flow(items: list[str]) -> str:
        return "[" + ", ".join(f'"{i}"' for i in items) + "]"

    lines = [
        "# Starter matrix written by `xcompat matrix init`: review it, then sign it",
        "#   xcompat matrix sign .xcompat/matrix.yml --key ~/.ssh/id_ecdsa",
        "# Keys: docs/matrix.md",
        "xcompat: 1",
        f"repo: {repo}",
        "serial: 1",
        "",
        f"python: {flow(pythons)}  # what requires-python allows",
        "",
        "platforms:",
        "  linux:",
        "    archs: [x86_64]",
        "",
        "backends:",
        "  cpu:",
        "    required: true",
        "",
        "tests:",
        f"  pytest: {flow(paths)}",
    ]
    if args:
        lines.append(f"  pytest-args: {flow(args)}  # tests inside the package run against the installed wheel")
    lines += [
        f"  kernels: {kernels}  # {why_kernels}",
        *isolation,
        "  timeout: 300",
        "",
        "abi:",
        "  baseline: last-release-tag",
        "",
        "gate:",
        '  tag-pattern: "v*"',
        "",
    ]
    return "\n".join(lines)


def execute(args: argparse.Namespace) -> int:
    from xcompat.errors import UsageError
    from xcompat.jsonio import atomic_write_text
    from xcompat.log import get_logger
    from xcompat.matrix import load_matrix

    log = get_logger()
    project = args.project.resolve()
    if not ((project / "pyproject.toml").is_file() or (project / "setup.py").is_file()):
        raise UsageError(f"{project} is not a Python project (no pyproject.toml or setup.py)",
                         hint="pass the folder that holds your pyproject.toml")
    out = args.output or project / ".xcompat" / "matrix.yml"
    if out.exists() and not args.force:
        raise UsageError(f"{out} exists; not replacing it", hint="pass --force to write a new starter matrix")
    repo = args.repo or _repo_from_git(project)
    if repo is None:
        repo = "your-org/" + (project.name or "project")
        log.warning(f"no git remote 'origin': bound the matrix to {repo}; edit repo: before signing")
    starter_matrix(project, repo)  # bad metadata is refused before the tests are run
    text = starter_matrix(project, repo, _isolation(args, project, log))
    load_matrix(text.encode(), source=str(out))  # a starter that does not validate is never written
    atomic_write_text(out, text)
    log.success(f"wrote {out} (unsigned): review it, then `xcompat matrix sign {out} --key KEY`")
    return 0


def _isolation(args: argparse.Namespace, project: Path, log: Any) -> list[str]:
    """``tests.isolation`` measured on the project's suite, or its default with the reason."""
    from xcompat.isolate.costs import Bound, NotMeasured, measure, one_line
    from xcompat.settings import defaults
    from xcompat.settings.project import find_tests

    default = str(defaults()["tests.isolation"])
    if args.no_measure:
        return isolation_lines(default, why_default="--no-measure")
    paths, pytest_args = find_tests(project)
    log.info(f"measuring what test isolation costs the suite (at most {args.measure_timeout:g} s; "
             "--no-measure skips it)")
    try:
        found = measure(project, paths, pytest_args, budget_s=args.measure_timeout,
                        bound=Bound(ratio=args.isolation_bound))
    except NotMeasured as exc:
        why = one_line(str(exc))
        log.notice(f"isolation not measured: {why}; wrote the default, {default}")
        return isolation_lines(default, why_default=why)
    except OSError as exc:  # the interpreter or the temporary folder: still no traceback
        why = one_line(f"{type(exc).__name__}: {exc}")
        log.notice(f"isolation not measured: {why}; wrote the default, {default}")
        return isolation_lines(default, why_default=why)
    log.info(found.summary())
    return isolation_lines(found.decision, found.comment_lines())
