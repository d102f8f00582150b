"""``xcompat gate``: refuse a release unless the signed matrix was satisfied.

Exit codes: 0 allowed, 1 refused (gate.json names every reason), 2 unreadable input, 3 no
verified matrix or a forged plan, 4 git failed, 5 git missing: each is the ``exit_code`` of the
error raised (``xcompat.errors``), turned into the exit code by ``cli.main`` alone.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from xcompat.outputs import OutputFile


def configure_parser(parser: argparse.ArgumentParser) -> None:
    from xcompat.results.stages import STAGES

    parser.description = (
        "Release gate. Allows a tag only when every requested check passes: the matrix signature "
        "against a protected trust ref, a passing result for every required cell of the plan, an ABI "
        "diff whose required bump does not exceed the version bump since the last release tag, and "
        "coverage thresholds. Asking for no check at all is refused."
    )
    parser.epilog = ("Exit codes: 0 release allowed, 1 refused (every reason is in --out), 2 unreadable input "
                     "or bad usage, 3 no verified matrix (--matrix) and no --insecure-no-verify, or a plan that is "
                     "not the one the verified matrix yields, 4 git failed, 5 git missing. See docs/gate.md.")
    evidence = parser.add_argument_group("evidence")
    evidence.add_argument("--plan", type=Path, metavar="PLAN_JSON",
                          help="plan written by `xcompat matrix plan --format json`")
    evidence.add_argument("--results", type=Path, action="append", default=[], metavar="DIR",
                          help="folder searched recursively for per-cell result JSON (repeatable)")
    kinds = tuple(STAGES)
    evidence.add_argument("--require-kind", action="append", default=[], choices=kinds,
                          dest="require_kinds", metavar="KIND",
                          help=f"every required cell must have a passing result of this kind "
                          f"({', '.join(kinds)}; repeatable)")
    evidence.add_argument("--abi", type=Path, action="append", default=[], metavar="ABI_DIFF_JSON",
                          help="`xcompat abi diff --format json` output (repeatable; the largest bump counts)")
    evidence.add_argument("--coverage", type=Path, action="append", default=[], metavar="COVERAGE_JSON",
                          help="`xcompat coverage merge` output whose status must be passed (repeatable)")
    evidence.add_argument("--dist", type=Path, metavar="DIR",
                          help="wheels about to be published: must be exactly those passing builds recorded (sha256)")
    trust = parser.add_argument_group("matrix signature")
    trust.add_argument("--matrix", type=Path, metavar="FILE", help="the signed matrix to verify")
    trust.add_argument("--allowed-signers", type=Path, metavar="PATH",
                       help="trust list path (read from --trust-ref when given)")
    trust.add_argument("--trust-ref", metavar="REF",
                       help="protected git ref the trust list and previous matrix come from (never the PR head)")
    trust.add_argument("--signature", type=Path, metavar="PATH", help="detached signature (default FILE.sig)")
    trust.add_argument("--revoked", type=Path, metavar="PATH", help="revoked keys list")
    trust.add_argument("--insecure-no-verify", action="store_true",
                       help="judge the plan's cells and settings without a verified matrix (INSECURE: a plan made "
                       "with --backend cpu, or edited, would be taken as it is); without it and without --matrix "
                       "the gate refuses with exit 3")
    trust.add_argument("--repo", metavar="OWNER/NAME",
                       help="repository the matrix must be bound to (default: $GITHUB_REPOSITORY or $CI_PROJECT_PATH)")
    release = parser.add_argument_group("release")
    release.add_argument("--tag", help="tag being released (default: GITHUB_REF_NAME on tag runs, CI_COMMIT_TAG)")
    release.add_argument("--previous-tag", metavar="TAG",
                         help="last release tag (default: the greatest release tag reachable from --tag)")
    release.add_argument("--tag-prefix", default="", metavar="PREFIX",
                         help="strip this before reading a tag as a version (e.g. 'mypkg-'); 'v' is always accepted")
    release.add_argument("--git-dir", type=Path, default=Path("."), metavar="DIR",
                         help="git checkout holding the tags (default: current folder)")
    parser.add_argument("--out", type=OutputFile(), default=Path("gate.json"), metavar="PATH",
                        help="where to write the decision (default: gate.json)")


def execute(args: argparse.Namespace) -> int:
    from xcompat.errors import CheckFailed, UsageError
    from xcompat.gate import GateRequest, decision_document, evaluate_gate
    from xcompat.gate.render import render_markdown, render_text
    from xcompat.jsonio import write_json
    from xcompat.log import get_logger

    log = get_logger()
    if args.results and args.plan is None:
        raise UsageError("--results needs --plan: the plan says which cells ran")
    if args.dist is not None and not args.results:
        raise UsageError("--dist needs --plan and --results: the build results record the wheels' sha256")
    if args.matrix is None and (args.allowed_signers or args.trust_ref):
        raise UsageError("--allowed-signers/--trust-ref need --matrix")
    if args.matrix is not None and args.allowed_signers is None:
        raise UsageError("--matrix needs --allowed-signers (with --trust-ref, the path inside that ref)")
    request = GateRequest(
        plan=args.plan,
        results=tuple(args.results),
        require_kinds=tuple(dict.fromkeys(args.require_kinds)),
        abi=tuple(args.abi),
        coverage=tuple(args.coverage),
        dist=args.dist,
        matrix=args.matrix,
        allowed_signers=args.allowed_signers,
        trust_ref=args.trust_ref,
        signature=args.signature,
        revoked=args.revoked,
        bound_repo=args.repo,
        tag=args.tag,
        previous_tag=args.previous_tag,
        tag_prefix=args.tag_prefix,
        git_dir=args.git_dir,
        insecure_no_verify=args.insecure_no_verify,
    )
    decision = evaluate_gate(request, dict(os.environ))
    document = decision_document(decision)
    # Not re-validated here: the schema is the contract the test suite holds real output to,
    # and validating 1,000 checks costs more than judging them.
    write_json(args.out, document)
    for warning in decision.warnings:
        log.warning(warning)
    for line in render_text(decision):
        log.info(line)
    log.write_summary(render_markdown(decision))
    log.set_output("gate", str(args.out))
    log.set_output("allowed", "true" if decision.allowed else "false")
    if not decision.allowed:
        raise CheckFailed(decision.summary, hint=f"every reason is in {args.out}")
    log.success(decision.summary)
    return 0
