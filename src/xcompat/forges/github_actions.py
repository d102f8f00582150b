"""GitHub as a forge: recognised by GitHub Actions' environment, published through the REST API.

``publish`` writes the job summary (with why nothing was posted, on a fork), creates the
check run and the sticky PR comment (``xcompat.forges.github``), appends what did not
arrive to the summary, prints the step's ``::error`` annotations and sets the step outputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xcompat.forges.base import PublishOptions, PublishOutcome
    from xcompat.report.model import Report


class GitHubForge:
    name = "github"
    title = "GitHub"
    flag_help = "deliver on GitHub: job summary, check run, sticky PR comment"
    channels: tuple[str, ...] = (
        "job_summary",
        "check_run_summary",
        "check_run_text",
        "check_run_annotations",
        "pr_comment",
        "step_annotations",
        "step_outputs",
    )

    def detect(self, env: Mapping[str, str]) -> bool:
        from xcompat.ci import under_forge_ci

        return under_forge_ci(self.name, env)

    def artifact_url(self, env: Mapping[str, str], bundle_dir: Path) -> str | None:
        from xcompat.forges.github_context import GitHubContext

        return GitHubContext.from_env(env).run_url

    def publish(self, report: Report, options: PublishOptions) -> PublishOutcome:
        from xcompat.forges.base import PublishOutcome, log_deliveries
        from xcompat.forges.github import GitHubPublisher
        from xcompat.forges.github_context import GitHubContext
        from xcompat.forges.github_payloads import job_summary_budget, summary_markdown
        from xcompat.log import GITHUB_ANNOTATIONS_PER_STEP, get_logger
        from xcompat.report.step_outputs import step_outputs

        log = get_logger()
        context = GitHubContext.from_env(options.env)
        summary_file = options.env.get("GITHUB_STEP_SUMMARY")
        reason = context.read_only_reason()
        summary_notes = []
        if reason:
            summary_notes.append(
                f"Not posted as a check run or PR comment: {reason}. The report bundle artifact carries it; "
                "the workflow_run stage posts it from the base repository."
            )
        if summary_file:
            log.write_summary(summary_markdown(report, job_summary_budget(summary_file), summary_notes))
        posted = GitHubPublisher(context).publish(
            report,
            check_name=options.check_name,
            comment=options.comment_mode != "off",
            check_run=options.check_run,
            comment_key=options.comment_key,
            comment_mode=options.comment_mode,
            max_annotations=options.max_annotations,
        )
        # On a fork the token is read-only by design: the report is in the summary and the bundle.
        outcome = PublishOutcome(deliveries=posted.deliveries, expected_failures=reason)
        log_deliveries(self.title, outcome.deliveries)
        failed = [delivery.describe(self.title) for delivery in outcome.posting_failures]
        if summary_file and failed:
            lines = "".join(f"> {line}\n" for line in failed)
            if len(lines.encode()) < job_summary_budget(summary_file):
                log.write_summary("\n" + lines)
        cap = options.max_annotations
        step_annotations = GITHUB_ANNOTATIONS_PER_STEP if cap is None else max(0, min(GITHUB_ANNOTATIONS_PER_STEP, cap))
        for failure in [f for f in report.failures if f.file and f.required][:step_annotations]:
            log.error(f"{failure.outcome}: {failure.name} [{failure.cell_id}]", file=failure.file, line=failure.line)

        urls = {delivery.channel: delivery.url for delivery in outcome.deliveries}
        badge_paths = options.badge_paths
        outputs = step_outputs(
            report,
            check_run_url=urls.get("check run"),
            comment_url=urls.get("PR comment"),
            report_dir=str(options.bundle_dir),
            badge_json=str(badge_paths[0]) if badge_paths else None,
            badge_svg=str(badge_paths[1]) if badge_paths else None,
        )
        for name, value in outputs.items():
            log.set_output(name, value)
        return outcome
