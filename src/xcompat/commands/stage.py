"""``xcompat stage NAME``: one stage of a CI pipeline, as the GitHub action and the GitLab template run it.

Each job of a CI pipeline runs stages: ``plan`` (the verified matrix expanded into jobs),
``build`` per cell, then on the cell's runner and Python ``probe``, ``kernels``, ``test``,
``abi`` (against the matrix's baseline) and ``coverage``, then the merged ``coverage``,
``report`` and ``gate`` over every cell (``xcompat stage --help`` lists them, in order). The options
are the action's inputs by the same names; ``--arg`` passes one extra argument to the stage's
command (repeatable, no shell parsing). In a GitHub Actions job the stage's outputs
(``result``, ``conclusion``, ``exit-code``; the plan's ``matrix``, ``cells``, ``plan``,
``matrix-sha256``) are appended to ``$GITHUB_OUTPUT``. The exit code is the stage command's.
"""

from __future__ import annotations

import argparse


def _flag(value: str) -> bool:
    if value not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"'true' or 'false', got {value!r}")
    return value == "true"


def configure_parser(parser: argparse.ArgumentParser) -> None:
    from xcompat.pipeline.ci.table import CI_STAGES

    parser.epilog = "See docs/github-action.md and docs/gitlab.md for the inputs of each stage."
    parser.add_argument("name", choices=tuple(CI_STAGES), metavar="NAME",
                        help=f"the stage: {', '.join(CI_STAGES)}")
    where = parser.add_argument_group("where")
    where.add_argument("--project-dir", default=".", metavar="DIR", help="the Python project (default: .)")
    where.add_argument("--matrix", default=".xcompat/matrix.yml", metavar="FILE",
                       help="the signed matrix, relative to the project (default: .xcompat/matrix.yml)")
    where.add_argument("--output-dir", default=".xcompat-out", metavar="DIR",
                       help="results, wheels and the plan (default: .xcompat-out); it must exist")
    where.add_argument("--plan", default="", metavar="FILE", help="plan JSON (default: OUTPUT-DIR/plan.json)")
    where.add_argument("--results-dir", default="", metavar="DIR",
                       help="per-cell results (default: OUTPUT-DIR/results)")
    where.add_argument("--wheelhouse", default="", metavar="DIR",
                       help="the cell's wheels (default: OUTPUT-DIR/wheelhouse)")
    cell = parser.add_argument_group("cell")
    cell.add_argument("--cell", default="", metavar="ID", help="build, test, coverage: the cell this job runs")
    cell.add_argument("--matrix-sha256", default="", metavar="SHA256",
                      help="the verified matrix's hash: the plan and OUTPUT-DIR/matrix.yml must be its "
                      "(plan: the hash the matrix is planned with)")
    cell.add_argument("--frameworks", default="", metavar="JSON",
                      help='build, test: the cell\'s framework versions, e.g. {"torch": "2.5"}')
    cell.add_argument("--install-wheel", type=_flag, default=True, metavar="BOOL",
                      help="test: install the cell's wheel that fits this Python first (default: true)")
    checks = parser.add_argument_group("abi, report, gate")
    for flag, text in (("--abi-old", "abi: baseline wheel, wheel folder or ABI snapshot"),
                       ("--abi-new", "abi: new wheel or wheel folder"),
                       ("--report-from", "report: a report bundle a read-only run uploaded, posted as it is"),
                       ("--verification-failed", "report: why this head's matrix signature did not verify: the "
                        "report is red and says so, whatever results there are"),
                       ("--abi-diff", "gate: ABI diff JSON whose required bump must fit the version bump"),
                       ("--coverage-file", "gate: merged coverage JSON whose thresholds must hold"),
                       ("--dist", "gate: folder of the wheels about to be published"),
                       ("--require-kinds", "gate: stage kinds every required cell must have passed, comma separated"),
                       ("--tag", "gate: the tag being released"), ("--previous-tag", "gate: the last release tag")):
        checks.add_argument(flag, default="", help=text)
    checks.add_argument("--forge", choices=("github", "gitlab"), default="github",
                        help="plan, report: the forge whose jobs and reports to write (default: github)")
    checks.add_argument("--no-comment", dest="post", action="store_false",
                        help="report: do not post the pull request comment or merge request note")
    checks.add_argument("--comment-mode", default="always", help="report (GitHub): always, on-failure, on-change, off")
    checks.add_argument("--max-annotations", default="", help="report (GitHub): at most this many annotations")
    trust = parser.add_argument_group("matrix signature (gate)")
    trust.add_argument("--verify", type=_flag, default=True, metavar="BOOL",
                       help="verify the matrix signature (default: true; false judges the plan as it is)")
    trust.add_argument("--allowed-signers", default=".xcompat/allowed_signers", metavar="PATH",
                       help="trust list, relative to the project")
    trust.add_argument("--revoked", default="", metavar="PATH", help="revoked keys list, relative to the project")
    trust.add_argument("--trust-ref", default="", metavar="REF", help="protected ref the trust list comes from")
    trust.add_argument("--repository", default="", metavar="OWNER/NAME",
                       help="repository the matrix must be bound to")
    parser.add_argument("--print-extras", action="store_true",
                        help="print the xcompat extras the stage installs by default (the action's `extras`) and exit")
    parser.add_argument("--arg", action="append", default=[], dest="args", metavar="ARG",
                        help="one extra argument for the stage's command (repeatable; --arg=--flag)")


def execute(args: argparse.Namespace) -> int:
    from dataclasses import fields

    from xcompat.pipeline.ci.step import CiInputs
    from xcompat.pipeline.ci.table import EXTRAS, run_stage

    if args.print_extras:
        print(EXTRAS.get(args.name, ""))
        return 0
    given = {f.name: getattr(args, f.name) for f in fields(CiInputs) if f.name != "args"}
    return run_stage(args.name, CiInputs(**given, args=tuple(args.args)))
