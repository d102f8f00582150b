"""The link to the report bundle among a GitLab job's artifacts."""

from __future__ import annotations

from pathlib import Path

from xcompat.forges.gitlab_ci import GitLabForge

JOB = "https://gitlab.example.com/acme/pkg/-/jobs/9"


def test_the_bundle_link_is_its_path_in_the_project_folder(tmp_path: Path) -> None:
    forge = GitLabForge()
    env = {"CI_JOB_URL": JOB, "CI_PROJECT_DIR": str(tmp_path)}
    # the CI stages pass the bundle folder as an absolute path
    assert forge.artifact_url(env, tmp_path / ".xcompat-out" / "report") == \
        f"{JOB}/artifacts/browse/.xcompat-out/report"
    assert forge.artifact_url(env, Path(".xcompat-out/report")) == f"{JOB}/artifacts/browse/.xcompat-out/report"
    # a folder outside the project is not among the job's artifacts: no link rather than a dead one
    assert forge.artifact_url(env, tmp_path.parent / "elsewhere") is None
    assert forge.artifact_url({"CI_PROJECT_DIR": str(tmp_path)}, tmp_path / "report") is None  # no job URL
