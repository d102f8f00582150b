"""xcompat report: aggregate all cells' results, render, and deliver to forges (``FORGES``) by name."""

from __future__ import annotations

import argparse
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from xcompat.errors import CheckFailed, ToolError, UsageError
from xcompat.outputs import OutputDir, OutputFile

if TYPE_CHECKING:
    from xcompat.forges.base import Forge
    from xcompat.forges.comment_mode import CommentMode
    from xcompat.report.model import Report
    from xcompat.results.collect import LoadedResults


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="RESULTS_DIR_OR_FILES", help="result JSON files or folders holding them")
    parser.add_argument("--plan", metavar="PLAN_JSON", help="the matrix plan: cells it lists but no result covers are missing")
    parser.add_argument("--format", choices=("markdown", "text", "json", "html"), default="markdown", help="output format (default: markdown)")
    parser.add_argument("--out", type=OutputFile(), metavar="FILE", help="write the rendered report here instead of stdout")
    parser.add_argument(
        "--budget",
        metavar="CHANNEL",
        help="fit the output to a channel's size limit (pr_comment, check_run_summary, job_summary, gitlab_note)",
    )
    parser.add_argument("--title", default="xcompat report", help="report title (also the check run name)")
    parser.add_argument("--artifact-url", metavar="URL", help="link to the full report, shown wherever sections are folded")
    from xcompat.forges import FORGES

    for forge in FORGES.values():
        parser.add_argument(f"--{forge.name}", dest=forge.name, action="store_true", help=forge.flag_help)
    parser.add_argument(
        "--from-artifact",
        metavar="DIR",
        help="read the report bundle a read-only (fork) run uploaded; for the workflow_run stage",
    )
    parser.add_argument(
        "--bundle-dir",
        type=OutputDir(),
        metavar="DIR",
        default=Path("xcompat-report"),
        help="where --github/--gitlab write report.json/.md/.html, the results and artifacts (default: xcompat-report)",
    )
    parser.add_argument("--check-name", default=None, help="check run name (default: the title)")
    parser.add_argument("--comment-key", default="default", help="tells several xcompat comments on one PR apart")
    parser.add_argument("--no-check-run", action="store_true", help="do not create a check run")
    parser.add_argument("--no-comment", action="store_true", help="do not post or update the PR comment / MR note")
    parser.add_argument(
        "--comment-mode",
        choices=("always", "on-failure", "on-change", "off"),
        default="always",
        help="when to post or update the PR comment / MR note (default: always; --no-comment is off)",
    )
    parser.add_argument(
        "--max-annotations",
        type=int,
        metavar="N",
        default=None,
        help="at most N check-run annotations, most important first (default: 1000, GitHub's cap; 0: none)",
    )
    parser.add_argument("--badge-dir", metavar="DIR", help="also write badge.json and badge.svg there (bundles always have them)")
    parser.add_argument(
        "--on-post-failure",
        choices=("fail", "warn"),
        default="warn",
        help="when posting fails after retries: exit 4 (fail) or only warn (default: warn)",
    )
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when the report is red")


def _write_bundle(folder: Path, loaded: LoadedResults, report: Report) -> None:
    """The report bundle. Every file name is xcompat's own (an index and a known stage kind):
    nothing a result says becomes a path, and every write is checked to stay in the bundle."""
    from xcompat.jsonio import dump_json
    from xcompat.outputs import write_inside
    from xcompat.report import render, write_html
    from xcompat.report import write_json as write_report_json
    from xcompat.results.stages import STAGES

    folder.mkdir(parents=True, exist_ok=True)
    results_dir = folder / "results"
    if results_dir.is_symlink() or results_dir.is_file():
        results_dir.unlink()
    elif results_dir.exists():
        shutil.rmtree(results_dir)
    results_dir.mkdir()
    for index, result in enumerate(loaded.results):
        kind = result.kind if result.kind in STAGES else "result"
        write_inside(results_dir, f"{index:04d}-{kind}.json", dump_json(result.data).encode("utf-8"))
    if loaded.settings is not None:
        write_inside(results_dir, "settings.json", dump_json(loaded.settings).encode("utf-8"))
    if loaded.plan is not None:
        write_inside(folder, "plan.json", dump_json(loaded.plan).encode("utf-8"))
    write_report_json(report, folder / "report.json")
    write_inside(folder, "report.md", render(report, "markdown").encode("utf-8"))
    write_html(report, folder / "report.html")


def _sources(args: argparse.Namespace) -> tuple[list[Path | str], Path | str | None]:
    """The result paths and plan: the command line's, or those of the bundle ``--from-artifact`` names."""
    if not args.from_artifact:
        if not args.paths:
            raise UsageError("give result files or folders (or --from-artifact DIR)")
        return list(args.paths), args.plan
    bundle = Path(args.from_artifact)
    if not bundle.is_dir():
        raise UsageError(f"--from-artifact {bundle}: not a folder", hint="download the report bundle artifact first")
    if args.paths:
        raise UsageError("--from-artifact reads its results from the bundle; give no result paths")
    results_dir = bundle / "results"
    plan = bundle / "plan.json"
    return ([results_dir] if results_dir.is_dir() else []), (plan if plan.is_file() else None)


def _print_or_write(args: argparse.Namespace, report: Report, *, to_forges: bool) -> None:
    """The rendered report to ``--out``, else to standard output unless it goes to forges."""
    from xcompat.jsonio import atomic_write_text
    from xcompat.log import get_logger
    from xcompat.report import render

    rendered = render(report, args.format, args.budget)
    if args.out:
        atomic_write_text(args.out, rendered)
        get_logger().info(f"wrote {args.out}")
    elif not to_forges:
        if args.format != "json":
            # Standard output is a CI log too: a log tail's "::" line must not run as a command there.
            from xcompat.neutralise import log_text

            rendered = log_text(rendered)
        print(rendered, end="" if rendered.endswith("\n") else "\n")


def _publish(args: argparse.Namespace, forges: Sequence[Forge], loaded: LoadedResults, report: Report,
             env: Mapping[str, str], comment_mode: CommentMode) -> list[str]:
    """Write the bundle and its badges, then deliver on each forge; the failed deliveries' log lines."""
    from xcompat.forges.base import PublishOptions
    from xcompat.log import get_logger
    from xcompat.report.badge import write_badge

    bundle_dir = Path(args.bundle_dir)
    _write_bundle(bundle_dir, loaded, report)
    badge_paths = write_badge(report, bundle_dir)
    get_logger().info(f"wrote the report bundle to {bundle_dir}/ (report.json, report.md, report.html, results/)")
    options = PublishOptions(
        env=env,
        bundle_dir=bundle_dir,
        check_name=args.check_name or args.title,
        comment_key=args.comment_key,
        comment_mode=comment_mode,
        check_run=not args.no_check_run,
        max_annotations=args.max_annotations,
        results=tuple(loaded.results),
        badge_paths=badge_paths,
    )
    failed_posts: list[str] = []
    for forge in forges:
        outcome = forge.publish(report, options)
        failed_posts.extend(delivery.describe(forge.title) for delivery in outcome.posting_failures)
    return failed_posts


def execute(args: argparse.Namespace) -> int:
    from xcompat.forges import FORGES
    from xcompat.forges.comment_mode import parse_mode
    from xcompat.report.badge import write_badge
    from xcompat.report.folder import report_from_folder

    env = os.environ
    sources, plan_path = _sources(args)
    forges = [forge for forge in FORGES.values() if getattr(args, forge.name, False)]
    artifact_url = args.artifact_url
    for forge in forges:
        # Asked even when --artifact-url is given: a forge that cannot publish from here says so now.
        forge_url = forge.artifact_url(env, Path(args.bundle_dir))
        artifact_url = artifact_url or forge_url
    # A run's output folder or downloaded artifacts: its own report.json, verify.json and
    # run.json are not stage results and are listed in the notes; settings.json is read.
    loaded, report = report_from_folder(sources, plan_path=plan_path, title=args.title,
                                        artifact_url=artifact_url or None)
    _print_or_write(args, report, to_forges=bool(forges))
    comment_mode = parse_mode("off" if args.no_comment else args.comment_mode)
    if args.badge_dir:
        write_badge(report, args.badge_dir)
    failed_posts = _publish(args, forges, loaded, report, env, comment_mode) if forges else []

    if failed_posts and args.on_post_failure == "fail":
        raise ToolError(
            f"{len(failed_posts)} delivery(ies) failed; the report is in the job summary and {args.bundle_dir}/",
            details=failed_posts,
        )
    if report.conclusion == "failure" and not args.exit_zero:
        raise CheckFailed(f"report is red: {report.headline}", details=[f"- {p}" for p in report.problems[:20]])
    return 0
