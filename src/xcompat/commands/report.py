"""xcompat report: aggregate all cells' results, render, and deliver to GitHub / GitLab."""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

from xcompat.errors import CheckFailed, ToolError, UsageError
from xcompat.outputs import OutputDir, OutputFile


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
    parser.add_argument("--github", action="store_true", help="deliver on GitHub: job summary, check run, sticky PR comment")
    parser.add_argument("--gitlab", action="store_true", help="deliver on GitLab: MR note and JUnit / Code Quality artifacts")
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


def _write_bundle(folder: Path, loaded, report) -> None:  # type: ignore[no-untyped-def]
    """The report bundle. Every file name is xcompat's own (an index and a known stage kind):
    nothing a result says becomes a path, and every write is checked to stay in the bundle."""
    from xcompat.jsonio import dump_json
    from xcompat.outputs import write_inside
    from xcompat.report import render, write_html
    from xcompat.report import write_json as write_report_json
    from xcompat.results.envelope import STAGE_KINDS

    folder.mkdir(parents=True, exist_ok=True)
    results_dir = folder / "results"
    if results_dir.is_symlink() or results_dir.is_file():
        results_dir.unlink()
    elif results_dir.exists():
        shutil.rmtree(results_dir)
    results_dir.mkdir()
    for index, result in enumerate(loaded.results):
        kind = result.kind if result.kind in STAGE_KINDS else "result"
        write_inside(results_dir, f"{index:04d}-{kind}.json", dump_json(result.data).encode("utf-8"))
    if loaded.settings is not None:
        write_inside(results_dir, "settings.json", dump_json(loaded.settings).encode("utf-8"))
    if loaded.plan is not None:
        write_inside(folder, "plan.json", dump_json(loaded.plan).encode("utf-8"))
    write_report_json(report, folder / "report.json")
    write_inside(folder, "report.md", render(report, "markdown").encode("utf-8"))
    write_html(report, folder / "report.html")


def execute(args: argparse.Namespace) -> int:
    from xcompat.jsonio import atomic_write_text
    from xcompat.log import get_logger
    from xcompat.report import render
    from xcompat.report.folder import report_from_folder

    log = get_logger()
    env = os.environ
    if args.from_artifact:
        bundle = Path(args.from_artifact)
        if not bundle.is_dir():
            raise UsageError(f"--from-artifact {bundle}: not a folder", hint="download the report bundle artifact first")
        if args.paths:
            raise UsageError("--from-artifact reads its results from the bundle; give no result paths")
        results_dir = bundle / "results"
        paths = [results_dir] if results_dir.is_dir() else []
        plan = bundle / "plan.json"
        sources, plan_path = paths, plan if plan.is_file() else None
    else:
        if not args.paths:
            raise UsageError("give result files or folders (or --from-artifact DIR)")
        sources, plan_path = list(args.paths), args.plan

    github_ctx = None
    artifact_url = args.artifact_url
    if args.github:
        from xcompat.forges.github import GitHubContext

        github_ctx = GitHubContext.from_env(env)
        artifact_url = artifact_url or github_ctx.run_url
    if args.gitlab and not artifact_url:
        artifact_url = env.get("CI_JOB_URL") and f"{env['CI_JOB_URL']}/artifacts/browse/{args.bundle_dir}"
    # A run's output folder or downloaded artifacts: its own report.json, verify.json and
    # run.json are not stage results and are listed in the notes; settings.json is read.
    loaded, report = report_from_folder(sources, plan_path=plan_path, title=args.title,
                                        artifact_url=artifact_url or None)

    rendered = render(report, args.format, args.budget)
    if args.out:
        atomic_write_text(args.out, rendered)
        log.info(f"wrote {args.out}")
    elif not (args.github or args.gitlab):
        if args.format != "json":
            # Standard output is a CI log too: a log tail's "::" line must not run as a command there.
            from xcompat.neutralise import log_text

            rendered = log_text(rendered)
        print(rendered, end="" if rendered.endswith("\n") else "\n")

    from xcompat.forges.comment_mode import parse_mode
    from xcompat.report.badge import write_badge

    comment_mode = parse_mode("off" if args.no_comment else args.comment_mode)
    urls: dict[str, str | None] = {}
    badge_paths = write_badge(report, args.badge_dir) if args.badge_dir else None
    failed_posts: list[str] = []
    if args.github or args.gitlab:
        bundle_dir = Path(args.bundle_dir)
        _write_bundle(bundle_dir, loaded, report)
        badge_paths = write_badge(report, bundle_dir)
        log.info(f"wrote the report bundle to {bundle_dir}/ (report.json, report.md, report.html, results/)")
    if github_ctx is not None:
        from xcompat.forges.github import GitHubPublisher, job_summary_budget, summary_markdown

        summary_file = env.get("GITHUB_STEP_SUMMARY")
        reason = github_ctx.read_only_reason()
        summary_notes = []
        if reason:
            summary_notes.append(
                f"Not posted as a check run or PR comment: {reason}. The report bundle artifact carries it; "
                "the workflow_run stage posts it from the base repository."
            )
        if summary_file:
            log.write_summary(summary_markdown(report, job_summary_budget(summary_file), summary_notes))
        publisher = GitHubPublisher(github_ctx)
        outcome = publisher.publish(
            report,
            check_name=args.check_name or args.title,
            comment=not args.no_comment,
            check_run=not args.no_check_run,
            comment_key=args.comment_key,
            comment_mode=comment_mode,
            max_annotations=args.max_annotations,
        )
        for delivery in outcome.deliveries:
            urls[delivery.channel] = delivery.url
            text = f"GitHub {delivery.channel}: {delivery.detail}" + (f" ({delivery.url})" if delivery.url else "")
            if delivery.ok:
                log.info(text)
            else:
                log.warning(text)
                failed_posts.append(text)
        if reason and failed_posts:
            # Expected on forks: the report is in the summary and the bundle; not a posting failure.
            failed_posts = []
        if summary_file and failed_posts:
            lines = "".join(f"> {line}\n" for line in failed_posts)
            if len(lines.encode()) < job_summary_budget(summary_file):
                log.write_summary("\n" + lines)
        step_annotations = 10 if args.max_annotations is None else max(0, min(10, args.max_annotations))
        for failure in [f for f in report.failures if f.file and f.required][:step_annotations]:
            if failure.file and failure.required:
                log.error(f"{failure.outcome}: {failure.name} [{failure.cell_id}]", file=failure.file, line=failure.line)
    if args.gitlab:
        from xcompat.forges.gitlab import GitLabContext, GitLabPublisher, write_artifacts

        written = write_artifacts(report, loaded.results, Path(args.bundle_dir))
        log.info("wrote GitLab report artifacts: " + ", ".join(str(p) for p in written))
        if comment_mode != "off":
            delivery = GitLabPublisher(GitLabContext.from_env(env)).publish(report, key=args.comment_key, mode=comment_mode)
            text = f"GitLab {delivery.channel}: {delivery.detail}"
            if delivery.ok:
                log.info(text)
            else:
                log.warning(text)
                failed_posts.append(text)

    if github_ctx is not None:
        from xcompat.report.step_outputs import step_outputs

        outputs = step_outputs(
            report,
            check_run_url=urls.get("check run"),
            comment_url=urls.get("PR comment"),
            report_dir=str(args.bundle_dir),
            badge_json=str(badge_paths[0]) if badge_paths else None,
            badge_svg=str(badge_paths[1]) if badge_paths else None,
        )
        for name, value in outputs.items():
            log.set_output(name, value)
    if failed_posts and args.on_post_failure == "fail":
        raise ToolError(
            f"{len(failed_posts)} delivery(ies) failed; the report is in the job summary and {args.bundle_dir}/",
            details=failed_posts,
        )
    if report.conclusion == "failure" and not args.exit_zero:
        raise CheckFailed(f"report is red: {report.headline}", details=[f"- {p}" for p in report.problems[:20]])
    return 0
