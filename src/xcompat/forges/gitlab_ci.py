"""GitLab as a forge: recognised by GitLab CI's environment, published as artifacts and an MR note.

``publish`` writes the report artifacts GitLab's merge request widgets read (JUnit XML,
Code Quality JSON, Cobertura) into the bundle, then creates or updates the MR note
(``xcompat.forges.gitlab``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xcompat.forges.base import PublishOptions, PublishOutcome
    from xcompat.report.model import Report


class GitLabForge:
    name = "gitlab"
    title = "GitLab"
    flag_help = "deliver on GitLab: MR note and JUnit / Code Quality artifacts"
    channels: tuple[str, ...] = ("junit", "codequality", "cobertura", "gitlab_note")

    def detect(self, env: Mapping[str, str]) -> bool:
        from xcompat.ci import under_forge_ci

        return under_forge_ci(self.name, env)

    def artifact_url(self, env: Mapping[str, str], bundle_dir: Path) -> str | None:
        job_url = env.get("CI_JOB_URL")
        if not job_url:
            return None
        # GitLab browses a job's artifacts by their path in the project folder: an absolute bundle
        # folder (the CI stages pass one) would give a link to nothing
        project = env.get("CI_PROJECT_DIR")
        if project and bundle_dir.is_absolute():
            try:
                bundle_dir = bundle_dir.resolve().relative_to(Path(project).resolve())
            except ValueError:
                return None  # outside the project folder: not among the job's artifacts
        return f"{job_url}/artifacts/browse/{bundle_dir.as_posix()}"

    def publish(self, report: Report, options: PublishOptions) -> PublishOutcome:
        from xcompat.forges.base import PublishOutcome, log_deliveries
        from xcompat.forges.gitlab import GitLabContext, GitLabPublisher, write_artifacts
        from xcompat.log import get_logger

        written = write_artifacts(report, options.results, options.bundle_dir)
        get_logger().info("wrote GitLab report artifacts: " + ", ".join(str(p) for p in written))
        outcome = PublishOutcome()
        if options.comment_mode != "off":
            context = GitLabContext.from_env(options.env)
            outcome.deliveries.append(
                GitLabPublisher(context).publish(report, key=options.comment_key, mode=options.comment_mode)
            )
        log_deliveries(self.title, outcome.deliveries)
        return outcome
