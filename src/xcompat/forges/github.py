"""Deliver a report on GitHub: check run with annotations, one sticky PR comment.

This is the API client; what the run tells it is ``github_context``, and the annotations and
job summary it sends are built in ``github_payloads``.

Endpoints used (GitHub REST, checked in the test suite against ``@octokit/openapi``):

* ``POST /repos/{owner}/{repo}/check-runs`` then ``PATCH .../check-runs/{id}``: created
  ``in_progress``, completed with the conclusion and output, then further PATCHes append
  annotations 50 at a time (the API's per-request maximum);
* ``GET/POST /repos/{owner}/{repo}/issues/{n}/comments`` and
  ``PATCH /repos/{owner}/{repo}/issues/comments/{id}``: the one comment whose body starts
  with xcompat's hidden marker is updated in place; it is created only when none exists;
* ``GET /repos/{owner}/{repo}/commits/{sha}/pulls`` and ``GET /repos/{owner}/{repo}/pulls``:
  find the PR of a head SHA, because a ``workflow_run`` event from a fork carries no PR.

Pull requests from forks (and Dependabot) get a read-only ``GITHUB_TOKEN``. That is
detected from the event up front (and from a 403 when it was not predictable); the
report then goes to the job summary and the report bundle, and the two-stage
``workflow_run`` workflow posts it from the base repository with
``xcompat report --github --from-artifact DIR``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from xcompat.forges.base import Delivery, PublishOutcome
from xcompat.forges.comment_mode import CommentMode, decide, digest_line
from xcompat.forges.github_context import GitHubContext
from xcompat.forges.github_payloads import annotations_for
from xcompat.forges.http import BudgetExceeded, ForgeError, ForgeHTTP, PermissionDenied, RetryPolicy
from xcompat.report.channels import Limits, load_limits
from xcompat.report.model import Report
from xcompat.report.render import marker, render

SUMMARY_SECTIONS = ("header", "grid", "failures", "abi", "coverage")
TEXT_SECTIONS = ("failures", "cells", "other")


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class GitHubPublisher:
    def __init__(
        self,
        context: GitHubContext,
        *,
        policy: RetryPolicy | None = None,
        limits: Limits | None = None,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], None] | None = None,
        wall_clock: Callable[[], float] | None = None,
    ) -> None:
        self.context = context
        self.limits = limits or load_limits()
        kwargs: dict[str, Any] = {}
        if clock is not None:
            kwargs["clock"] = clock
        if sleep is not None:
            kwargs["sleep"] = sleep
        if wall_clock is not None:
            kwargs["wall_clock"] = wall_clock
        self.http = ForgeHTTP(
            context.api_url,
            service="GitHub",
            auth_headers={"Authorization": f"Bearer {context.token}"} if context.token else {},
            secret=context.token,
            policy=policy,
            extra_headers={"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"},
            **kwargs,
        )
        owner, repo = context.owner_repo
        self.repo_path = f"/repos/{owner}/{repo}"

    # -- check runs -----------------------------------------------------------------------
    def publish_check_run(self, report: Report, *, name: str, head_sha: str, max_annotations: int | None = None) -> Delivery:
        # The summary is what the Checks tab shows first; the details (log tails, all cells) go in the text.
        summary = render(report, "markdown", "check_run_summary", include=SUMMARY_SECTIONS)
        text = render(report, "markdown", "check_run_text", include=TEXT_SECTIONS)
        title = f"{report.title}: {report.headline}"[:255]
        annotations = annotations_for(report, self.limits, max_annotations)
        chunk = self.limits.annotations.per_request
        run_id = self._create_check_run(name, head_sha)
        output: dict[str, Any] = {"title": title, "summary": summary, "text": text}
        if annotations:
            output["annotations"] = annotations[:chunk]
        body: dict[str, Any] = {"status": "completed", "conclusion": report.conclusion, "completed_at": _now(), "output": output}
        if report.artifact_url:
            body["details_url"] = report.artifact_url
        done = self.http.json("PATCH", f"{self.repo_path}/check-runs/{run_id}", json=body)
        for start in range(chunk, len(annotations), chunk):
            # Each update appends its annotations; title and summary are required with output.
            self.http.json(
                "PATCH",
                f"{self.repo_path}/check-runs/{run_id}",
                json={"output": {"title": title, "summary": summary, "annotations": annotations[start : start + chunk]}},
            )
        url = _html_url(done)
        return Delivery(channel="check run", ok=True, detail=f"{name}: {report.conclusion}, {len(annotations)} annotation(s)", url=url)

    def _create_check_run(self, name: str, head_sha: str) -> int:
        """Create the in-progress check run once, even when GitHub answers a create with a 5xx.

        A 5xx may come after the run was created; a blind retry would leave that one in
        progress forever. Each create carries a fresh ``external_id``: after a 5xx the runs of
        the commit are listed and the one with that id is used; only when there is none is
        the create sent again.
        """
        import uuid

        external_id = f"xcompat-{uuid.uuid4().hex}"
        body = {"name": name, "head_sha": head_sha, "status": "in_progress", "started_at": _now(), "external_id": external_id}
        path = f"{self.repo_path}/check-runs"
        try:
            created = self.http.json("POST", path, json=body, retry_server_errors=False)
        except PermissionDenied:
            raise
        except ForgeError as exc:
            if isinstance(exc, BudgetExceeded) or (exc.status is not None and exc.status < 500):
                raise
            existing = self._check_run_with_external_id(head_sha, name, external_id)
            if existing is not None:
                return existing
            created = self.http.json("POST", path, json=body)
        return _object_id(created, "POST " + path)

    def _check_run_with_external_id(self, head_sha: str, name: str, external_id: str) -> int | None:
        response = self.http.json(
            "GET", f"{self.repo_path}/commits/{head_sha}/check-runs", params={"check_name": name, "filter": "all", "per_page": 100}
        )
        runs = response.get("check_runs") if isinstance(response, dict) else None
        for run in runs if isinstance(runs, list) else []:
            if isinstance(run, dict) and run.get("external_id") == external_id and isinstance(run.get("id"), int):
                return int(run["id"])
        return None

    # -- sticky comment -----------------------------------------------------------------------
    def find_comments(self, pr_number: int, key: str) -> list[dict[str, Any]]:
        """xcompat's own comments: the marker at the start, written by ``comment_author``.

        A person can paste the marker into a comment of their own; a token that may edit
        it (a maintainer's, an App's) must still never overwrite it, so the author is checked.
        """
        mark = marker(key)
        author = self.context.comment_author.lower()

        def ours(c: Any) -> bool:
            user = c.get("user") if isinstance(c, dict) else None
            login = user.get("login") if isinstance(user, dict) else None
            return (
                isinstance(c.get("body"), str)
                and c["body"].lstrip().startswith(mark)
                and isinstance(login, str)
                and login.lower() == author
                and isinstance(c.get("id"), int)
            )

        return [c for c in self.http.paginate(f"{self.repo_path}/issues/{pr_number}/comments", {"per_page": 100}) if ours(c)]

    def find_comment(self, pr_number: int, key: str) -> dict[str, Any] | None:
        found = self.find_comments(pr_number, key)
        return found[0] if found else None

    def upsert_comment(self, report: Report, pr_number: int, *, key: str = "default", mode: CommentMode = "always") -> Delivery:
        from xcompat.report.channels import Channel

        existing_comments = self.find_comments(pr_number, key)
        first = existing_comments[0] if existing_comments else None
        decision = decide(mode, report, str(first.get("body", "")) if first else None)
        if not decision.post:
            return Delivery(channel="PR comment", ok=True, detail=f"skipped: {decision.reason}", url=_html_url(first) if first else None)
        hidden = digest_line(report)
        room = self.limits.channel("pr_comment")
        channel = Channel(name=room.name, limit=room.limit - len(hidden) - 1, unit=room.unit, source=room.source)
        body = render(report, "markdown", channel, marker_key=key) + hidden
        for existing in existing_comments:
            try:
                updated = self.http.json("PATCH", f"{self.repo_path}/issues/comments/{existing['id']}", json={"body": body})
                return Delivery(channel="PR comment", ok=True, detail=f"updated on #{pr_number}", url=_html_url(updated))
            except PermissionDenied:
                continue  # someone else's comment carrying the marker: try the next one
        try:
            created = self.http.json(
                "POST", f"{self.repo_path}/issues/{pr_number}/comments", json={"body": body}, retry_server_errors=False
            )
        except PermissionDenied:
            raise
        except ForgeError as exc:
            if exc.status is None or exc.status < 500:
                raise
            # A 5xx on create may still have created the comment: look again before retrying once.
            found = self.find_comment(pr_number, key)
            if found is not None:
                return Delivery(channel="PR comment", ok=True, detail=f"created on #{pr_number}", url=_html_url(found))
            created = self.http.json("POST", f"{self.repo_path}/issues/{pr_number}/comments", json={"body": body})
        return Delivery(channel="PR comment", ok=True, detail=f"created on #{pr_number}", url=_html_url(created))

    # -- PR lookup ------------------------------------------------------------------------------
    def find_pr_for_sha(self, sha: str, *, head_owner: str | None = None, head_branch: str | None = None) -> int | None:
        """The open PR whose head is ``sha`` (``workflow_run`` from a fork has no PR number)."""
        for pr in self.http.paginate(f"{self.repo_path}/commits/{sha}/pulls", {"per_page": 100}):
            if isinstance(pr, dict) and pr.get("state") == "open" and pr.get("head", {}).get("sha") == sha:
                return int(pr["number"])
        if head_owner and head_branch:
            params = {"state": "open", "head": f"{head_owner}:{head_branch}", "per_page": 100}
            for pr in self.http.paginate(f"{self.repo_path}/pulls", params):
                if isinstance(pr, dict) and pr.get("head", {}).get("sha") == sha:
                    return int(pr["number"])
        return None

    def resolve_pr(self) -> int | None:
        ctx = self.context
        if ctx.pr_number is not None:
            return ctx.pr_number
        sha = ctx.head_sha
        if not sha:
            return None
        run = ctx.event.get("workflow_run", {}) if ctx.event_name == "workflow_run" else {}
        owner = (run.get("head_repository") or {}).get("owner", {}).get("login") if isinstance(run, dict) else None
        branch = run.get("head_branch") if isinstance(run, dict) else None
        return self.find_pr_for_sha(sha, head_owner=owner, head_branch=branch)

    # -- everything ---------------------------------------------------------------------------------
    def publish(
        self,
        report: Report,
        *,
        check_name: str,
        comment: bool = True,
        check_run: bool = True,
        comment_key: str = "default",
        comment_mode: CommentMode = "always",
        max_annotations: int | None = None,
    ) -> PublishOutcome:
        outcome = PublishOutcome()
        reason = self.context.read_only_reason()
        if reason:
            for channel in [c for c, on in (("check run", check_run), ("PR comment", comment)) if on]:
                outcome.deliveries.append(Delivery(channel=channel, ok=False, detail=f"not posted: {reason}"))
            return outcome
        head_sha = self.context.head_sha
        if check_run:
            if not head_sha:
                outcome.deliveries.append(Delivery(channel="check run", ok=False, detail="not posted: no head commit SHA (GITHUB_SHA)"))
            else:
                outcome.deliveries.append(
                    self._attempt("check run", lambda: self.publish_check_run(report, name=check_name, head_sha=head_sha, max_annotations=max_annotations))
                )
        if comment and comment_mode != "off":

            def post_comment() -> Delivery:
                number = self.resolve_pr()
                if number is None:
                    return Delivery(channel="PR comment", ok=True, detail="skipped: this run belongs to no open pull request")
                return self.upsert_comment(report, number, key=comment_key, mode=comment_mode)

            outcome.deliveries.append(self._attempt("PR comment", post_comment))
        return outcome

    def _attempt(self, channel: str, action: Callable[[], Delivery]) -> Delivery:
        try:
            return action()
        except PermissionDenied as exc:
            return Delivery(
                channel=channel,
                ok=False,
                detail=f"not posted: the token may not write here ({exc.message}); "
                "for pull requests from forks use the two-stage workflow_run workflow",
            )
        except ForgeError as exc:
            return Delivery(channel=channel, ok=False, detail=f"not posted: {exc.message}")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            # An answer of an unexpected shape is a delivery failure, never a traceback: the
            # other channels are still tried and the exit code follows --on-post-failure.
            return Delivery(channel=channel, ok=False, detail=f"not posted: GitHub sent an unexpected answer ({type(exc).__name__})")


def _html_url(answer: Any) -> str | None:
    url = answer.get("html_url") if isinstance(answer, dict) else None
    return url if isinstance(url, str) else None


def _object_id(answer: Any, what: str) -> int:
    """The ``id`` of a created object; an empty or malformed 2xx answer is a delivery failure."""
    if isinstance(answer, dict) and isinstance(answer.get("id"), int) and not isinstance(answer.get("id"), bool):
        return int(answer["id"])
    shown = "an empty answer" if answer is None else "an answer without an id"
    raise ForgeError(f"GitHub: {what}: {shown}; the object may or may not exist")


