"""``xcompat matrix init [PROJECT]``: write a starter ``.xcompat/matrix.yml`` for a project.

It reads the project's metadata (nothing is imported or run): the Python versions its
``requires-python`` allows, where its tests are (``tests/`` at the top, or inside the
package: then ``tests.pytest: [PKG.tests]`` with ``--pyargs``, so they run against the
installed wheel), whether it uses torch (kernels run only then) and the repository from
``git remote get-url origin``. The file is validated before it is written, and it is
unsigned: ``xcompat run`` runs it locally with a warning; sign it before CI.
"""

from __future__ import annotations

import argparse
from pathlib import Path

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
    parser.epilog = "Exit codes: 0 written, 2 not a project, the file exists (without --force) or bad metadata."


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


def starter_matrix(project: Path, repo: str) -> str:
    from xcompat.settings.project import find_tests, project_facts, supported_pythons

    pythons = supported_pythons(project, KNOWN_PYTHONS) or list(KNOWN_PYTHONS[-1:])
    paths, args = find_tests(project)
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
        "  isolation: test",
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
    text = starter_matrix(project, repo)
    load_matrix(text.encode(), source=str(out))  # a starter that does not validate is never written
    atomic_write_text(out, text)
    log.success(f"wrote {out} (unsigned): review it, then `xcompat matrix sign {out} --key KEY`")
    return 0
