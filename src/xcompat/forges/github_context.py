"""What a GitHub Actions run tells a report: the repository, the event and its pull request, the
commit, the token, and whether that token can write (a fork's cannot)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xcompat.errors import InputError

DEFAULT_API = "https://api.github.com"
DEFAULT_COMMENT_AUTHOR = "github-actions[bot]"
READ_ONLY_EVENTS = ("pull_request", "pull_request_review", "pull_request_review_comment")


@dataclass(frozen=True, kw_only=True)
class GitHubContext:
    """What the workflow run tells us, read from the environment and the event payload."""

    api_url: str
    server_url: str
    repository: str
    event_name: str
    event: Mapping[str, Any]
    sha: str | None
    token: str | None
    run_id: str | None = None
    actor: str = ""
    repository_id: str | None = None  # GITHUB_REPOSITORY_ID: this repository's numeric id
    # Whose comments the sticky-comment lookup may edit: the login the token posts as.
    # GITHUB_TOKEN posts as github-actions[bot]; a GitHub App token as <app-slug>[bot], a
    # personal token as that user (set XCOMPAT_COMMENT_AUTHOR).
    comment_author: str = DEFAULT_COMMENT_AUTHOR

    @property
    def owner_repo(self) -> tuple[str, str]:
        owner, _, repo = self.repository.partition("/")
        if not owner or not repo:
            raise InputError(f"GITHUB_REPOSITORY must be owner/name, got {self.repository!r}")
        return owner, repo

    @property
    def run_url(self) -> str | None:
        if not self.run_id:
            return None
        return f"{self.server_url.rstrip('/')}/{self.repository}/actions/runs/{self.run_id}"

    @property
    def pull_request(self) -> Mapping[str, Any]:
        pr = self.event.get("pull_request")
        return pr if isinstance(pr, dict) else {}

    @property
    def pr_number(self) -> int | None:
        number = self.pull_request.get("number")
        if isinstance(number, int):
            return number
        if self.event_name == "workflow_run":
            run = self.event.get("workflow_run")
            prs = run.get("pull_requests") if isinstance(run, dict) else None
            # Only PRs whose base is THIS repository, matched by id or API URL: a fork (or any
            # repository) with the same name is another repository, and its PR numbers are not ours.
            for pr in prs if isinstance(prs, list) else []:
                if isinstance(pr, dict) and isinstance(pr.get("number"), int) and self._is_this_repository(
                    (pr.get("base") or {}).get("repo") if isinstance(pr.get("base"), dict) else None
                ):
                    return int(pr["number"])
        return None

    def _is_this_repository(self, repo: Any) -> bool:
        if not isinstance(repo, dict):
            return False
        this = self.event.get("repository")
        this = this if isinstance(this, dict) else {}
        ours_id = self.repository_id or (str(this["id"]) if isinstance(this.get("id"), int) else None)
        theirs_id = repo.get("id")
        if ours_id is not None and isinstance(theirs_id, int):
            return str(theirs_id) == ours_id
        ours_url = this.get("url") if isinstance(this.get("url"), str) else None
        if ours_url is None:
            ours_url = f"{self.api_url.rstrip('/')}/repos/{self.repository}"
        theirs_url = repo.get("url")
        return isinstance(theirs_url, str) and theirs_url.rstrip("/").lower() == ours_url.rstrip("/").lower()

    @property
    def head_sha(self) -> str | None:
        if self.event_name == "workflow_run":
            sha = self.event.get("workflow_run", {}).get("head_sha")
            return sha if isinstance(sha, str) else None
        sha = self.pull_request.get("head", {}).get("sha") if self.pull_request else None
        return sha if isinstance(sha, str) else self.sha

    def read_only_reason(self) -> str | None:
        """Why the token cannot write, when that is known before trying; else None."""
        if not self.token:
            return "no GitHub token was given (set GITHUB_TOKEN for the step)"
        if self.event_name in READ_ONLY_EVENTS:
            head_repo = self.pull_request.get("head", {}).get("repo") or {}
            if head_repo.get("full_name") and head_repo.get("full_name") != self.repository:
                return f"pull request from the fork {head_repo['full_name']}: GitHub gives such runs a read-only token"
            if self.actor == "dependabot[bot]":
                return "Dependabot pull request: GitHub gives such runs a read-only token"
        return None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> GitHubContext:
        event: Mapping[str, Any] = {}
        path = env.get("GITHUB_EVENT_PATH")
        if path and Path(path).is_file():
            from xcompat.jsonio import read_json

            loaded = read_json(path)
            event = loaded if isinstance(loaded, dict) else {}
        repository = env.get("GITHUB_REPOSITORY", "")
        if not repository:
            raise InputError("GITHUB_REPOSITORY is not set", hint="run inside GitHub Actions or set it (owner/name)")
        token = env.get("XCOMPAT_GITHUB_TOKEN") or env.get("GITHUB_TOKEN") or env.get("GH_TOKEN")
        return cls(
            api_url=env.get("GITHUB_API_URL", DEFAULT_API),
            server_url=env.get("GITHUB_SERVER_URL", "https://github.com"),
            repository=repository,
            event_name=env.get("GITHUB_EVENT_NAME", ""),
            event=event,
            sha=env.get("GITHUB_SHA"),
            token=token,
            run_id=env.get("GITHUB_RUN_ID"),
            actor=env.get("GITHUB_ACTOR", ""),
            repository_id=env.get("GITHUB_REPOSITORY_ID") or None,
            comment_author=env.get("XCOMPAT_COMMENT_AUTHOR") or DEFAULT_COMMENT_AUTHOR,
        )
