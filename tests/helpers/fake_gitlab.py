"""A loopback GitLab server for the merge request Notes API, as GitLab documents it.

Contract (docs.gitlab.com/api/notes, docs.gitlab.com/api/rest "Pagination",
docs.gitlab.com/ci/jobs/ci_job_token):

* ``GET /api/v4/projects/:id/merge_requests/:merge_request_iid/notes`` with ``sort``
  (asc|desc), ``order_by`` (created_at|updated_at), ``page``, ``per_page`` (max 100,
  default 20); answers carry ``X-Page``, ``X-Per-Page``, ``X-Next-Page``, ``X-Total``,
  ``X-Total-Pages`` and a ``Link`` header;
* ``POST .../notes`` with a required string ``body`` of at most 1,000,000 characters
  (and optional ``internal``, ``merge_request_diff_head_sha``, ``created_at``);
* ``PUT .../notes/:note_id`` with ``body`` (same limit);
* ``:id`` is a number or a URL-encoded ``namespace/project`` path;
* authentication by ``PRIVATE-TOKEN`` or ``JOB-TOKEN``; a job token may read notes but
  gets 403 on creating or editing them.

Anything else is recorded in ``violations`` and answered 400/404.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

NOTE_LIMIT = 1_000_000
_NOTES = re.compile(r"^/api/v4/projects/(?P<id>[^/]+)/merge_requests/(?P<iid>[0-9]+)/notes(?:/(?P<note>[0-9]+))?$")
_ALLOWED_QUERY = {"GET": {"sort", "order_by", "page", "per_page"}, "POST": set(), "PUT": set()}
_ALLOWED_BODY = {"POST": {"body", "internal", "confidential", "merge_request_diff_head_sha", "created_at"}, "PUT": {"body", "confidential"}}


class FakeGitLab:
    def __init__(self, *, project_id: str = "42", project_path: str = "group/proj", mr_iid: int = 7) -> None:
        self.project_ids = {project_id, project_path}
        self.mr_iid = mr_iid
        self.tokens = {"glpat-good": "write"}
        self.job_tokens = {"job-token-123"}
        self.notes: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.violations: list[str] = []
        self.faults: list[tuple[int, dict[str, str]]] = []
        self._next = 500
        self.lock = threading.Lock()
        self.server: Any = None

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def add_note(self, body: str, *, system: bool = False, author: str = "someone") -> dict[str, Any]:
        self._next += 1
        note = {
            "id": self._next,
            "type": None,
            "body": body,
            "attachment": None,
            "author": {"id": 1, "username": author, "name": author, "state": "active"},
            "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z",
            "system": system,
            "noteable_id": 1,
            "noteable_type": "MergeRequest",
            "project_id": 42,
            "noteable_iid": self.mr_iid,
            "resolvable": False,
            "confidential": False,
            "internal": False,
        }
        self.notes.append(note)
        return note

    def handle(self, method: str, raw_path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], Any]:
        split = urlsplit(raw_path)
        query = parse_qs(split.query, keep_blank_values=True)
        with self.lock:
            self.requests.append({"method": method, "path": split.path, "query": query, "headers": headers, "body": body})
            match = _NOTES.match(split.path)
            note_id = match.group("note") if match else None
            if not match or method not in ("GET", "POST", "PUT") or (method == "POST" and note_id) or (method == "PUT" and not note_id):
                self.violations.append(f"{method} {split.path}: not a documented merge request notes endpoint")
                return 404, {}, {"message": "404 Not Found"}
            for name in query:
                if name not in _ALLOWED_QUERY[method]:
                    self.violations.append(f"{method} {split.path}: undocumented query parameter {name!r}")
                    return 400, {}, {"error": f"{name} is not allowed"}
            for name, allowed in (("sort", {"asc", "desc"}), ("order_by", {"created_at", "updated_at"})):
                if name in query and query[name][-1] not in allowed:
                    self.violations.append(f"{method}: {name}={query[name][-1]!r} is not one of {sorted(allowed)}")
                    return 400, {}, {"error": f"{name} does not have a valid value"}
            if "per_page" in query and not (query["per_page"][-1].isdigit() and 1 <= int(query["per_page"][-1]) <= 100):
                self.violations.append(f"per_page={query['per_page'][-1]!r} is outside 1..100")
                return 400, {}, {"error": "per_page is invalid"}
            private, job = headers.get("private-token"), headers.get("job-token")
            if private not in self.tokens and job not in self.job_tokens:
                return 401, {}, {"message": "401 Unauthorized"}
            if self.faults:
                status, extra = self.faults.pop(0)
                return status, extra, {"message": f"{status} fault"}
            if unquote(match.group("id")) not in self.project_ids or int(match.group("iid")) != self.mr_iid:
                return 404, {}, {"message": "404 Not found"}
            if method != "GET" and private not in self.tokens:
                return 403, {}, {"message": "403 Forbidden"}
            if method == "GET":
                return self._list(query, split.path)
            document = self._json_body(method, split.path, body)
            if isinstance(document, tuple):
                return document
            if method == "POST":
                note = self.add_note(document["body"], author="project_42_bot")
                return 201, {}, note
            note_id = int(match.group("note"))
            for note in self.notes:
                if note["id"] == note_id:
                    if note["author"]["username"] != "project_42_bot":
                        return 403, {}, {"message": "403 Forbidden"}  # only the author may edit a note
                    if "body" in document:
                        note["body"] = document["body"]
                    return 200, {}, note
            return 404, {}, {"message": "404 Note Not Found"}

    def _json_body(self, method: str, path: str, raw: bytes) -> dict[str, Any] | tuple[int, dict[str, str], Any]:
        try:
            document = json.loads(raw or b"{}")
        except ValueError:
            self.violations.append(f"{method} {path}: body is not JSON")
            return 400, {}, {"error": "body is not JSON"}
        if not isinstance(document, dict):
            self.violations.append(f"{method} {path}: body is not an object")
            return 400, {}, {"error": "body must be an object"}
        unknown = set(document) - _ALLOWED_BODY[method]
        if unknown:
            self.violations.append(f"{method} {path}: undocumented attributes {sorted(unknown)}")
            return 400, {}, {"error": "unknown attributes"}
        if method == "POST" and not isinstance(document.get("body"), str):
            self.violations.append(f"{method} {path}: body is required and must be a string")
            return 400, {}, {"error": "body is missing"}
        text = document.get("body")
        if text is not None and (not isinstance(text, str) or len(text) > NOTE_LIMIT):
            return 400, {}, {"message": {"note": ["is too long (maximum is 1000000 characters)"]}}
        return document

    def _list(self, query: dict[str, list[str]], path: str) -> tuple[int, dict[str, str], Any]:
        per_page = int(query.get("per_page", ["20"])[-1])
        page = max(int(query.get("page", ["1"])[-1] or 1), 1)
        notes = list(self.notes)
        if query.get("sort", ["desc"])[-1] == "desc":
            notes.reverse()
        total_pages = max(1, -(-len(notes) // per_page))
        chunk = notes[(page - 1) * per_page : page * per_page]
        headers = {
            "X-Page": str(page),
            "X-Per-Page": str(per_page),
            "X-Total": str(len(notes)),
            "X-Total-Pages": str(total_pages),
            "X-Next-Page": str(page + 1) if page < total_pages else "",
            "X-Prev-Page": str(page - 1) if page > 1 else "",
        }
        if page < total_pages:
            rest = "&".join(f"{k}={v[-1]}" for k, v in query.items() if k != "page")
            headers["Link"] = f'<{self.url}{path}?{rest}&page={page + 1}>; rel="next"'
        return 200, headers, chunk
