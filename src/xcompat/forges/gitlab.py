"""Deliver a report on GitLab: one MR note kept up to date, plus report artifacts.

Notes API (docs.gitlab.com/api/notes): ``GET /projects/:id/merge_requests/:iid/notes``
(paginated), ``POST .../notes`` and ``PUT .../notes/:note_id``; bodies are limited to
1,000,000 characters. The note is found again by xcompat's hidden marker, so a re-run
edits it instead of adding another.

Tokens: ``CI_JOB_TOKEN`` can read merge request notes but cannot create or edit them, so
posting needs a project (or group) access token with the ``api`` scope, given as the
masked CI/CD variable ``XCOMPAT_GITLAB_TOKEN`` (``GITLAB_TOKEN`` also works). When only
the job token is there, nothing is posted and the command says exactly that.

Artifacts for GitLab's own widgets: JUnit XML (``reports:junit``), Code Quality JSON for
ABI findings (``reports:codequality``) and the Cobertura file the coverage stage wrote
(``reports:coverage_report``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from xcompat.errors import InputError
from xcompat.forges.base import Delivery
from xcompat.forges.comment_mode import CommentMode, decide, digest_line
from xcompat.forges.http import ForgeError, ForgeHTTP, PermissionDenied, RetryPolicy
from xcompat.jsonio import atomic_write_bytes, atomic_write_text, dump_json, validate
from xcompat.limits import LIMITS, read_bounded
from xcompat.log import get_logger
from xcompat.report.model import Report
from xcompat.report.render import marker, render
from xcompat.results.stage_result import StageResult

JOB_TOKEN_ONLY = (
    "only CI_JOB_TOKEN is available, and GitLab does not let the job token create or edit merge request "
    "notes; create a project access token with the 'api' scope and pass it as the masked CI/CD variable "
    "XCOMPAT_GITLAB_TOKEN"
)


@dataclass(frozen=True, kw_only=True)
class GitLabContext:
    api_url: str
    project_id: str
    mr_iid: str | None
    token: str | None
    job_token: str | None
    pipeline_url: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> GitLabContext:
        server = env.get("CI_SERVER_URL", "https://gitlab.com").rstrip("/")
        return cls(
            api_url=env.get("CI_API_V4_URL") or f"{server}/api/v4",
            project_id=env.get("CI_PROJECT_ID") or env.get("CI_PROJECT_PATH", ""),
            mr_iid=env.get("CI_MERGE_REQUEST_IID") or None,
            token=env.get("XCOMPAT_GITLAB_TOKEN") or env.get("GITLAB_TOKEN") or None,
            job_token=env.get("CI_JOB_TOKEN") or None,
            pipeline_url=env.get("CI_PIPELINE_URL") or None,
        )

    def token_problem(self) -> str | None:
        if self.token:
            return None
        if self.job_token:
            return JOB_TOKEN_ONLY
        return "no GitLab token: set XCOMPAT_GITLAB_TOKEN to a project access token with the 'api' scope"


class GitLabPublisher:
    def __init__(
        self,
        context: GitLabContext,
        *,
        policy: RetryPolicy | None = None,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], None] | None = None,
        wall_clock: Callable[[], float] | None = None,
    ) -> None:
        self.context = context
        kwargs: dict[str, Any] = {k: v for k, v in (("clock", clock), ("sleep", sleep), ("wall_clock", wall_clock)) if v is not None}
        self.http = ForgeHTTP(
            context.api_url,
            service="GitLab",
            auth_headers={"PRIVATE-TOKEN": context.token} if context.token else {},
            secret=context.token,
            policy=policy,
            **kwargs,
        )
        self.notes_path = f"/projects/{quote(str(context.project_id), safe='')}/merge_requests/{context.mr_iid}/notes"

    def find_notes(self, key: str) -> list[dict[str, Any]]:
        mark = marker(key)
        return [
            note
            for note in self.http.paginate(self.notes_path, {"per_page": 100, "sort": "asc", "order_by": "created_at"})
            if isinstance(note, dict) and not note.get("system") and isinstance(note.get("id"), int)
            and str(note.get("body", "")).lstrip().startswith(mark)
        ]

    def find_note(self, key: str) -> dict[str, Any] | None:
        found = self.find_notes(key)
        return found[0] if found else None

    def upsert_note(self, report: Report, *, key: str = "default", mode: CommentMode = "always") -> Delivery:
        from xcompat.report.channels import Channel, load_limits

        found = self.find_notes(key)
        decision = decide(mode, report, str(found[0].get("body", "")) if found else None)
        if not decision.post:
            return Delivery(channel="MR note", ok=True, detail=f"skipped: {decision.reason}")
        hidden = digest_line(report)
        room = load_limits().channel("gitlab_note")
        channel = Channel(name=room.name, limit=room.limit - len(hidden) - 1, unit=room.unit, source=room.source)
        # The gitlab_note channel's rendering keeps every line from starting a quick action.
        body = render(report, "markdown", channel, marker_key=key) + hidden
        for existing in found:
            try:
                self.http.json("PUT", f"{self.notes_path}/{existing['id']}", json={"body": body})
                return Delivery(channel="MR note", ok=True, detail=f"updated on !{self.context.mr_iid}")
            except PermissionDenied:
                continue  # someone else's note carrying the marker: try the next one
        try:
            self.http.json("POST", self.notes_path, json={"body": body}, retry_server_errors=False)
        except PermissionDenied:
            raise
        except ForgeError as exc:
            if exc.status is None or exc.status < 500:
                raise
            if self.find_note(key) is None:  # a 5xx may still have created it
                self.http.json("POST", self.notes_path, json={"body": body})
        return Delivery(channel="MR note", ok=True, detail=f"created on !{self.context.mr_iid}")

    def publish(self, report: Report, *, key: str = "default", mode: CommentMode = "always") -> Delivery:
        if mode == "off":
            return Delivery(channel="MR note", ok=True, detail="skipped: comment mode is off")
        problem = self.context.token_problem()
        if problem:
            return Delivery(channel="MR note", ok=False, detail=f"not posted: {problem}")
        if not self.context.mr_iid:
            return Delivery(channel="MR note", ok=True, detail="skipped: this pipeline belongs to no merge request")
        if not self.context.project_id:
            return Delivery(channel="MR note", ok=False, detail="not posted: CI_PROJECT_ID is not set")
        try:
            return self.upsert_note(report, key=key, mode=mode)
        except PermissionDenied as exc:
            return Delivery(channel="MR note", ok=False, detail=f"not posted: the token may not write notes ({exc.message})")
        except ForgeError as exc:
            return Delivery(channel="MR note", ok=False, detail=f"not posted: {exc.message}")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            return Delivery(channel="MR note", ok=False, detail=f"not posted: GitLab sent an unexpected answer ({type(exc).__name__})")


def write_artifacts(report: Report, results: Iterable[StageResult], folder: str | Path) -> list[Path]:
    """Write JUnit XML, Code Quality JSON and (when the coverage stage made one) Cobertura XML."""
    from xcompat.report.artifacts import codequality, junit_xml

    folder = Path(folder)
    results = list(results)
    written = [atomic_write_text(folder / "xcompat-junit.xml", junit_xml(report, results))]
    issues = codequality(report)
    validate("codequality", issues, source=str(folder / "gl-code-quality-report.json"))
    written.append(atomic_write_text(folder / "gl-code-quality-report.json", dump_json(issues)))
    for result in results:
        if result.kind != "coverage":
            continue
        name = result.data.get("cobertura")
        if isinstance(name, dict):
            name = name.get("path")
        if isinstance(name, str) and name:
            data = read_result_attachment(Path(result.source), name, what="Cobertura report")
            if data is not None:
                written.append(atomic_write_bytes(folder / "cobertura.xml", data))
                break
    return written


def read_result_attachment(result_file: Path, name: str, *, what: str) -> bytes | None:
    """The bytes of a file a result names, only when it lies inside the result's own folder.

    Results come from pull requests and fork runs: a name is refused (logged, not copied)
    when it is absolute, has a ``..`` part, or leads (through symlinks) out of the folder
    of the result file, and only regular files of bounded size are read. Without this a
    result naming ``/proc/self/environ`` would put the job's token into an uploaded artifact.
    """
    log = get_logger()
    folder = result_file.parent.resolve()
    if not name or name.startswith(("/", "\\")) or Path(name).is_absolute() or ".." in Path(name).parts or "\0" in name:
        log.warning(f"{result_file}: {what} path {name!r} is not a relative path inside the results folder; not copied")
        return None
    candidate = (folder / name).resolve()
    if candidate != folder and folder not in candidate.parents:
        log.warning(f"{result_file}: {what} path {name!r} leads out of the results folder; not copied")
        return None
    if not candidate.exists():
        return None
    try:
        return read_bounded(candidate, what=what, limit=LIMITS.json_bytes)
    except InputError as exc:
        log.warning(f"{result_file}: {what} not copied: {exc}")
        return None
