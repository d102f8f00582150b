"""``xcompat matrix settings``: the resolved settings of one cell, for CI jobs.

``--format abi-policy`` prints the ``abi:`` section for ``xcompat abi diff --policy``;
``--format test-argv`` the arguments of ``xcompat test`` one per line (``mapfile -t``).
``--format env`` prints ``XCOMPAT_TESTS_TIMEOUT=120`` lines (lists and mappings
JSON-encoded) for ``$GITHUB_ENV`` or a GitLab dotenv report; ``--format json`` prints the
settings document. In CI (``CI=true``) the settings come only from the verified matrix:
the plan artifact (``--plan``) or the matrix file with ``--expect-sha256`` (the hash
``matrix verify`` printed). A pull request's own copy of the matrix is never read on trust.

``--plan P --matrix M --expect-sha256 H`` binds the plan's settings to the verified matrix:
M (the matrix bytes the plan artifact carries) must have the SHA-256 H, and P must be the
plan M yields (``plan_mismatch``), settings and cells alike, or nothing is printed (exit 3).
A plan's own ``matrix_sha256`` field is not evidence: anyone who edits the settings can
keep it, so ``--expect-sha256`` with ``--plan`` and no ``--matrix`` is refused.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xcompat.model import Cell
    from xcompat.settings import Settings


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cell", metavar="ID", help="the plan cell whose settings to print (must be in the plan)")
    parser.add_argument("--plan", type=Path, metavar="PLAN_JSON",
                        help="plan written by `xcompat matrix plan --format json` (what CI jobs use)")
    parser.add_argument("--matrix", type=Path, metavar="FILE",
                        help="matrix file (default .xcompat/matrix.yml); in CI only with --expect-sha256. "
                        "With --plan: the verified matrix the plan was made from, which the plan must match")
    parser.add_argument("--expect-sha256", metavar="HEX",
                        help="refuse (exit 3) unless the matrix the settings come from has this SHA-256 "
                        "(with --plan, the --matrix file's)")
    parser.add_argument("--format", choices=("env", "json", "abi-policy", "test-argv"), default="env",
                        help="env: NAME=value lines; json: the settings document; abi-policy: the abi section as "
                        "`xcompat abi diff --policy` reads it; test-argv: the arguments of `xcompat test` "
                        "(tests.pytest, --isolate, --timeout, -- tests.pytest-args), one per line (default: env)")
    parser.add_argument("--project", type=Path, metavar="DIR",
                        help="project folder: test-argv paths are given under it, and --cell says whether each "
                        "stage is required for it (kernels need torch)")
    parser.epilog = ("Exit codes: 0 printed, 2 unreadable plan/matrix or unknown cell, "
                     "3 the sha256 does not match, the plan is not the one the matrix yields, "
                     "or CI without a verified source.")


def test_argv(settings: Settings, project: Path | None = None) -> list[str]:
    """The arguments of ``xcompat test`` these settings mean, as the settings table's
    ``test_argv`` says: the paths, then each option in the table's order, then ``--`` and the
    pytest arguments.

    ``tests.pytest`` paths are relative to the project: under ``project`` when given; with
    ``--pyargs`` they are importable names and stay as they are.
    """
    from xcompat.settings.table import setting_rows, typed_value

    paths: list[str] = []
    options: list[str] = []
    pytest_args: list[str] = []
    for row in setting_rows():
        value = typed_value(settings, row)
        if row.test_argv == "paths":
            paths += value
        elif row.test_argv == "--":
            pytest_args += value
        elif row.test_argv is not None:
            options += [row.test_argv, row.type.argv(value)]
    if project is not None and "--pyargs" not in pytest_args:
        paths = [str(project / p) for p in paths]
    return [*paths, *options, *(["--", *pytest_args] if pytest_args else [])]


def execute(args: argparse.Namespace) -> int:
    import json
    import os
    import sys

    from xcompat.errors import InputError, VerificationError

    env = os.environ
    expect = args.expect_sha256.lower() if args.expect_sha256 else None
    if args.plan is not None:
        settings, cells, where = _from_plan(args, env, expect)
    else:
        settings, cells, where = _from_matrix(args, env, expect)
    if expect is not None and settings.matrix_sha256 != expect:
        raise VerificationError(
            f"settings of matrix sha256 {settings.matrix_sha256}, expected {expect} (the verified matrix)",
            file=where,
        )
    document_out = settings.to_dict()
    cell_vars: list[tuple[str, str, str]] = []  # (NAME, value, what it is)
    if args.cell is not None:
        cell_vars = _cell(args, cells, settings, where, document_out)
    if args.format == "json":
        sys.stdout.write(json.dumps(document_out, indent=2, sort_keys=True) + "\n")
    elif args.format == "abi-policy":
        sys.stdout.write(json.dumps(settings.abi_policy_document(), indent=2, sort_keys=True) + "\n")
    elif args.format == "test-argv":
        argv = test_argv(settings, args.project)
        bad = [a for a in argv if "\n" in a or "\r" in a or not a]
        if bad:
            raise InputError(f"a tests setting holds an empty or multi-line argument: {bad[0]!r}", file=where)
        sys.stdout.write("".join(a + "\n" for a in argv))
    else:
        from xcompat.envfile import assignments

        # Every line is made (and checked) before one is printed: a refused value prints nothing,
        # so `>> "$GITHUB_ENV"` never takes half of the variables.
        text = "".join(line + "\n" for line in settings.to_env(source=where))
        text += assignments([(n, v) for n, v, _ in cell_vars], "dotenv", source=where,
                            what={n: w for n, _, w in cell_vars})
        sys.stdout.write(text)
    return 0


def _from_plan(args: argparse.Namespace, env: Mapping[str, str], expect: str | None) -> tuple[Settings, list[Cell], Path]:
    """The settings and cells of ``--plan``, bound to ``--matrix`` when given."""
    from xcompat.errors import InputError, VerificationError
    from xcompat.matrix import load_matrix
    from xcompat.matrix.plan import plan_mismatch
    from xcompat.model import Cell
    from xcompat.results.collect import load_plan
    from xcompat.settings import is_ci, settings_from_plan

    document = load_plan(args.plan)
    settings = settings_from_plan(document, source=str(args.plan))
    if is_ci(env) and settings.matrix_sha256 is None:
        raise VerificationError("in CI the plan must carry matrix_sha256 (the verified matrix it was made from)",
                                file=args.plan)
    cells: list[Cell] = []
    for index, raw in enumerate(document["cells"]):
        try:
            cells.append(Cell.from_dict(raw))
        except (KeyError, TypeError, ValueError, AttributeError):
            raise InputError(f"$.cells[{index}]: not a plan cell", file=args.plan) from None
    if expect is not None and args.matrix is None:
        raise VerificationError(
            "--expect-sha256 cannot vouch for a plan's settings without the verified matrix bytes: "
            "pass --matrix FILE (the matrix.yml beside the plan in its artifact)",
            file=args.plan,
        )
    if args.matrix is not None:
        matrix = load_matrix(args.matrix)
        if expect is not None and matrix.sha256 != expect:
            raise VerificationError(f"matrix sha256 {matrix.sha256}, expected {expect} (the verified matrix)",
                                    file=args.matrix)
        mismatch = plan_mismatch(document, matrix)
        if mismatch is not None:
            raise VerificationError(
                f"{mismatch} is not what the verified matrix {args.matrix} (sha256 {matrix.sha256[:16]}) "
                "yields; refusing the plan's settings",
                file=args.plan,
            )
    return settings, cells, args.plan


def _from_matrix(args: argparse.Namespace, env: Mapping[str, str], expect: str | None) -> tuple[Settings, list[Cell], Path]:
    """The settings and cells of the matrix file (in CI only with ``--expect-sha256``)."""
    from xcompat.errors import VerificationError
    from xcompat.matrix import load_matrix
    from xcompat.matrix.plan import expand
    from xcompat.settings import is_ci, resolve_settings

    path = args.matrix or Path(".xcompat/matrix.yml")
    if is_ci(env) and expect is None:
        raise VerificationError(
            "in CI the settings come only from the verified matrix: pass --plan PLAN_JSON, or "
            "--expect-sha256 HEX with the hash `xcompat matrix verify` printed",
            file=path,
        )
    matrix = load_matrix(path)
    return resolve_settings(matrix, env=env), expand(matrix), path


def _cell(args: argparse.Namespace, cells: list[Cell], settings: Settings, where: Path,
          document_out: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Add ``--cell``'s id and stages to ``document_out``; its CI variables ``(NAME, value, what)``."""
    import json

    from xcompat.errors import InputError
    from xcompat.results.required import is_required, required_stages
    from xcompat.settings.project import project_facts

    cell = next((c for c in cells if c.id == args.cell), None)
    if cell is None:
        raise InputError(f"cell {args.cell!r} is not in the plan", file=where,
                         hint="cell ids: xcompat matrix plan FILE --format json")
    facts = project_facts(args.project) if args.project is not None and args.project.is_dir() else None
    stages = required_stages(cell, settings, facts)
    document_out["cell"] = {"id": cell.id, "backend": cell.backend, "required": cell.required}
    document_out["stages"] = {kind: {"required": req.required, "reason": req.reason}
                              for kind, req in stages.items()}
    return [
        ("XCOMPAT_CELL", cell.id, "the cell id"),
        ("XCOMPAT_CELL_REQUIRED", "true" if is_required(cell, settings) else "false", "required"),
        ("XCOMPAT_REQUIRED_STAGES", json.dumps(sorted(k for k, r in stages.items() if r.required),
                                               separators=(",", ":")), "stages"),
    ]
