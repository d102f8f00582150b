"""A loopback GitHub REST server whose contract is GitHub's own OpenAPI description.

Every request is checked against ``@octokit/openapi`` (``generated/api.github.com.json``,
installed by ``npm install`` at the repository root): the method and path must match an
operation, path and query parameters must match their declared schemas, unknown query
parameters are refused, and the JSON body must validate against the operation's
request-body schema (``$ref``s resolved, OpenAPI 3.0 ``nullable`` translated). Any
mismatch is recorded in ``violations`` and answered 400, so a test fails on it.

Answers start from the description's own example for the operation and carry GitHub's
headers (``Link`` pagination, ``x-ratelimit-*``). Faults are scripted: 5xx, primary rate
limit (403 with ``x-ratelimit-remaining: 0`` and ``x-ratelimit-reset``), secondary rate
limit (429 with ``retry-after``), read-only tokens (403 "Resource not accessible by
integration").
"""

from __future__ import annotations

import copy
import json
import re
import threading
from dataclasses import dataclass, field
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

REPO_ROOT = Path(__file__).resolve().parents[2]
OPENAPI_FILE = REPO_ROOT / "node_modules" / "@octokit" / "openapi" / "generated" / "api.github.com.json"
COMMENT_LIMIT = 65536  # GitHub refuses longer issue comment bodies (422)


def contract_missing_reason() -> str | None:
    if OPENAPI_FILE.is_file():
        return None
    return f"GitHub's OpenAPI description is not installed ({OPENAPI_FILE}); run `npm install --no-audit --no-fund` at the repository root"


class Contract:
    """Operations of the OpenAPI description, with request validation."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.doc = document
        self.operations: list[tuple[str, str, re.Pattern[str], int, dict[str, Any]]] = []
        for template, item in document["paths"].items():
            pattern = "^" + re.sub(r"\\\{[^/]+?\\\}", "([^/]+)", re.escape(template)) + "$"
            literals = sum(1 for seg in template.split("/") if seg and not seg.startswith("{"))
            for method, op in item.items():
                if method in ("get", "post", "put", "patch", "delete"):
                    params = [self.deref(p) for p in item.get("parameters", [])] + [self.deref(p) for p in op.get("parameters", [])]
                    self.operations.append((method.upper(), template, re.compile(pattern), literals, {**op, "_params": params}))
        self._schemas: dict[str, Any] = {}

    def deref(self, node: Any) -> Any:
        while isinstance(node, dict) and "$ref" in node:
            node = self._pointer(node["$ref"])
        return node

    def _pointer(self, ref: str) -> Any:
        if not ref.startswith("#/"):
            raise ValueError(f"external $ref not supported: {ref}")
        node: Any = self.doc
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def to_jsonschema(self, node: Any, stack: tuple[str, ...] = ()) -> Any:
        """Inline ``$ref``s and translate OpenAPI 3.0 ``nullable`` to JSON Schema."""
        if isinstance(node, list):
            return [self.to_jsonschema(n, stack) for n in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            ref = node["$ref"]
            if ref in stack:
                return {}  # recursive schema: accept deeper levels
            return self.to_jsonschema(self._pointer(ref), stack + (ref,))
        out = {}
        for key, value in node.items():
            if key in ("properties", "patternProperties"):
                out[key] = {k: self.to_jsonschema(v, stack) for k, v in value.items()}
            elif key in ("items", "additionalProperties", "not", "allOf", "anyOf", "oneOf"):
                out[key] = self.to_jsonschema(value, stack)
            elif key in ("example", "examples", "description", "nullable", "readOnly", "writeOnly", "deprecated", "discriminator", "externalDocs", "xml") or key.startswith("x-"):
                continue
            else:
                out[key] = value
        if node.get("nullable"):
            return {"anyOf": [out, {"type": "null"}]}
        return out

    def match(self, method: str, path: str) -> tuple[str, dict[str, Any], dict[str, str]] | None:
        best = None
        for m, template, regex, literals, op in self.operations:
            if m != method:
                continue
            found = regex.match(path)
            if found and (best is None or literals > best[0]):
                names = re.findall(r"\{([^/]+?)\}", template)
                best = (literals, template, op, dict(zip(names, found.groups())))
        return None if best is None else best[1:]

    def check(self, method: str, path: str, query: dict[str, list[str]], body: bytes) -> tuple[str, dict[str, Any], dict[str, Any], list[str]]:
        """Validate one request; returns (template, operation, typed params, violations)."""
        import jsonschema

        problems: list[str] = []
        matched = self.match(method, path)
        if matched is None:
            return "", {}, {}, [f"{method} {path}: no such operation in GitHub's OpenAPI description"]
        template, op, raw_path_params = matched
        typed: dict[str, Any] = {}
        declared = {(p["in"], p["name"]): p for p in op["_params"]}
        for name, value in raw_path_params.items():
            spec = declared.get(("path", name))
            typed[name] = self._coerce(value, spec, f"path parameter {name}", problems)
        for name, values in query.items():
            spec = declared.get(("query", name))
            if spec is None:
                problems.append(f"{method} {template}: unknown query parameter {name!r}")
                continue
            typed[name] = self._coerce(values[-1], spec, f"query parameter {name}", problems)
        for (where, name), spec in declared.items():
            if where == "query" and spec.get("required") and name not in query:
                problems.append(f"{method} {template}: missing required query parameter {name!r}")
        request_body = self.deref(op.get("requestBody")) if op.get("requestBody") else None
        if request_body is None:
            if body.strip():
                problems.append(f"{method} {template}: this operation takes no request body")
            return template, op, typed, problems
        if not body.strip():
            if request_body.get("required"):
                problems.append(f"{method} {template}: request body is required")
            return template, op, typed, problems
        try:
            document = json.loads(body)
        except ValueError:
            problems.append(f"{method} {template}: request body is not JSON")
            return template, op, typed, problems
        schema = self._body_schema(template, method, request_body)
        validator = jsonschema.Draft4Validator(schema)
        for error in sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path)):
            where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
            problems.append(f"{method} {template}: body {where}: {error.message[:300]}")
        typed["_body"] = document
        return template, op, typed, problems

    def _body_schema(self, template: str, method: str, request_body: dict[str, Any]) -> Any:
        key = f"{method} {template}"
        if key not in self._schemas:
            content = request_body.get("content", {}).get("application/json", {})
            self._schemas[key] = self.to_jsonschema(content.get("schema", {}))
        return self._schemas[key]

    def _coerce(self, value: str, spec: dict[str, Any] | None, what: str, problems: list[str]) -> Any:
        import jsonschema

        if spec is None:
            problems.append(f"{what} is not declared")
            return value
        schema = self.to_jsonschema(spec.get("schema", {}))
        typ = schema.get("type")
        converted: Any = value
        if typ == "integer":
            try:
                converted = int(value)
            except ValueError:
                problems.append(f"{what}: {value!r} is not an integer")
                return value
        elif typ == "boolean":
            converted = value == "true"
        errors = list(jsonschema.Draft4Validator(schema).iter_errors(converted))
        if errors:
            problems.append(f"{what}: {errors[0].message[:200]}")
        return converted

    def example(self, op: dict[str, Any], status: str) -> Any:
        response = self.deref(op.get("responses", {}).get(status, {}))
        content = response.get("content", {}).get("application/json", {})
        examples = content.get("examples") or {}
        for ex in examples.values():
            ex = self.deref(ex)
            if "value" in ex:
                return copy.deepcopy(ex["value"])
        return copy.deepcopy(content.get("example"))


@cache
def load_contract() -> Contract:
    return Contract(json.loads(OPENAPI_FILE.read_text(encoding="utf-8")))


@dataclass
class Fault:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = field(default_factory=dict)  # JSON, or bytes sent as they are (truncated JSON, empty)
    method: str | None = None  # None: any request
    after: bool = False  # carry the request out, then answer with this fault (a 5xx after a create)


class FakeGitHub:
    """State of one fake repository (``octo/proj``) and the scripted faults."""

    def __init__(self, contract: Contract, *, owner: str = "octo", repo: str = "proj") -> None:
        self.contract = contract
        self.owner, self.repo = owner, repo
        self.tokens = {"good-token": "write", "read-only-token": "read"}
        self.check_runs: dict[int, dict[str, Any]] = {}
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.pulls: list[dict[str, Any]] = []
        self.faults: list[Fault] = []
        self.requests: list[dict[str, Any]] = []
        self.violations: list[str] = []
        self._next_id = 1000
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None
        self.reset_epoch = 0

    # -- scripting --------------------------------------------------------------------------------
    def fail_next(self, status: int, *, times: int = 1, method: str | None = None, headers: dict[str, str] | None = None, message: str = "Server Error") -> None:
        for _ in range(times):
            self.faults.append(Fault(status=status, headers=dict(headers or {}), body={"message": message}, method=method))

    def primary_rate_limit_next(self, reset_epoch: int) -> None:
        self.faults.append(
            Fault(
                status=403,
                headers={"x-ratelimit-limit": "1000", "x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset_epoch), "x-ratelimit-used": "1000"},
                body={"message": "API rate limit exceeded for installation ID 1.", "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"},
            )
        )

    def secondary_rate_limit_next(self, retry_after: int) -> None:
        self.faults.append(
            Fault(
                status=429,
                headers={"retry-after": str(retry_after)},
                body={"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.", "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"},
            )
        )

    def add_pull(self, number: int, head_sha: str, *, head_repo: str | None = None, branch: str = "topic", state: str = "open") -> None:
        self.pulls.append({"number": number, "state": state, "head": {"sha": head_sha, "ref": branch, "repo": {"full_name": head_repo or f"{self.owner}/{self.repo}"}, "label": f"{(head_repo or self.owner).split('/')[0]}:{branch}"}})

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    # -- request handling ----------------------------------------------------------------------------
    def handle(self, method: str, raw_path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], Any]:
        split = urlsplit(raw_path)
        query = parse_qs(split.query, keep_blank_values=True)
        template, op, params, problems = self.contract.check(method, split.path, query, body)
        with self.lock:
            self.requests.append({"method": method, "path": split.path, "template": template, "query": query, "body": params.get("_body"), "headers": headers})
            if problems:
                self.violations.extend(problems)
                return 400, {}, {"message": "; ".join(problems)}
            auth = headers.get("authorization", "")
            token = auth.split(" ", 1)[1] if " " in auth else ""
            if token not in self.tokens:
                return 401, {}, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}
            for i, fault in enumerate(self.faults):
                if fault.method in (None, method):
                    del self.faults[i]
                    if fault.after:
                        owner, repo = params.get("owner"), params.get("repo")
                        if (owner, repo) == (self.owner, self.repo):
                            self._route(method, template, op, params)
                    return fault.status, fault.headers, fault.body
            if method != "GET" and self.tokens[token] == "read":
                return 403, {}, {"message": "Resource not accessible by integration", "documentation_url": "https://docs.github.com/rest"}
            owner, repo = params.get("owner"), params.get("repo")
            if (owner, repo) != (self.owner, self.repo):
                return 404, {}, {"message": "Not Found"}
            return self._route(method, template, op, params)

    def _paged(self, items: list[dict[str, Any]], params: dict[str, Any], path: str, extra: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        per_page = min(int(params.get("per_page", 30)), 100)
        page = max(int(params.get("page", 1)), 1)
        chunk = items[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(items):
            query = "&".join([f"{k}={v}" for k, v in extra.items()] + [f"per_page={per_page}", f"page={page + 1}"])
            headers["Link"] = f'<{self.url}{path}?{query}>; rel="next"'
        return 200, headers, chunk

    def _route(self, method: str, template: str, op: dict[str, Any], params: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        base = f"/repos/{self.owner}/{self.repo}"
        body = params.get("_body") or {}
        if (method, template) == ("POST", "/repos/{owner}/{repo}/check-runs"):
            run = self.contract.example(op, "201") or {}
            run.update({"id": self.new_id(), "name": body["name"], "head_sha": body["head_sha"], "status": body.get("status", "queued"), "conclusion": body.get("conclusion"), "external_id": body.get("external_id")})
            run["html_url"] = f"https://github.com/{self.owner}/{self.repo}/runs/{run['id']}"
            run["_annotations"] = list(body.get("output", {}).get("annotations", []))
            run["_output"] = body.get("output")
            self.check_runs[run["id"]] = run
            return 201, {}, {k: v for k, v in run.items() if not k.startswith("_")}
        if (method, template) == ("GET", "/repos/{owner}/{repo}/commits/{ref}/check-runs"):
            found = [{k: v for k, v in run.items() if not k.startswith("_")} for run in self.check_runs.values()
                     if run["head_sha"] == params["ref"] and params.get("check_name") in (None, run["name"])]
            return 200, {}, {"total_count": len(found), "check_runs": found}
        if template == "/repos/{owner}/{repo}/check-runs/{check_run_id}":
            run = self.check_runs.get(params["check_run_id"])
            if run is None:
                return 404, {}, {"message": "Not Found"}
            if method == "PATCH":
                for key in ("status", "conclusion", "completed_at", "details_url", "name"):
                    if key in body:
                        run[key] = body[key]
                if "conclusion" in body:
                    run["status"] = "completed"
                if "output" in body:
                    run["_output"] = {**(run.get("_output") or {}), **{k: v for k, v in body["output"].items() if k != "annotations"}}
                    run["_annotations"].extend(body["output"].get("annotations", []))
            return 200, {}, {k: v for k, v in run.items() if not k.startswith("_")}
        if template == "/repos/{owner}/{repo}/issues/{issue_number}/comments":
            number = params["issue_number"]
            if not any(p["number"] == number for p in self.pulls):
                return 404, {}, {"message": "Not Found"}
            comments = self.comments.setdefault(number, [])
            if method == "GET":
                return self._paged(comments, params, f"{base}/issues/{number}/comments", {})
            if len(body["body"]) > COMMENT_LIMIT:
                return 422, {}, {"message": "Validation Failed", "errors": [{"resource": "IssueComment", "code": "custom", "field": "body", "message": "body is too long (maximum is 65536 characters)"}]}
            comment = self.contract.example(op, "201") or {}
            cid = self.new_id()
            comment.update({"id": cid, "body": body["body"], "html_url": f"https://github.com/{self.owner}/{self.repo}/pull/{number}#issuecomment-{cid}"})
            comment["user"] = {**(comment.get("user") or {}), "login": "github-actions[bot]", "type": "Bot"}
            comments.append(comment)
            return 201, {}, comment
        if template == "/repos/{owner}/{repo}/issues/comments/{comment_id}":
            for comments in self.comments.values():
                for comment in comments:
                    if comment["id"] == params["comment_id"]:
                        if method == "PATCH" and (comment.get("user") or {}).get("login") != "github-actions[bot]":
                            return 403, {}, {"message": "Resource not accessible by integration", "documentation_url": "https://docs.github.com/rest"}
                        if method == "PATCH":
                            if len(body["body"]) > COMMENT_LIMIT:
                                return 422, {}, {"message": "Validation Failed"}
                            comment["body"] = body["body"]
                        return 200, {}, comment
            return 404, {}, {"message": "Not Found"}
        if template == "/repos/{owner}/{repo}/commits/{commit_sha}/pulls":
            sha = params["commit_sha"]
            # A fork's commits are reachable through refs/pull/N/head; GitHub lists the PR either way.
            found = [self._pull(p, op) for p in self.pulls if p["head"]["sha"] == sha]
            return self._paged(found, params, f"{base}/commits/{sha}/pulls", {})
        if (method, template) == ("GET", "/repos/{owner}/{repo}/pulls"):
            state = params.get("state", "open")
            head = params.get("head")
            found = [
                self._pull(p, op)
                for p in self.pulls
                if (state == "all" or p["state"] == state) and (head is None or p["head"]["label"] == head)
            ]
            extra = {k: params[k] for k in ("state", "head") if k in params}
            return self._paged(found, params, f"{base}/pulls", extra)
        self.violations.append(f"{method} {template}: valid GitHub operation, but xcompat is not expected to call it")
        return 501, {}, {"message": "not implemented by the fake"}

    def _pull(self, pull: dict[str, Any], op: dict[str, Any]) -> dict[str, Any]:
        example = self.contract.example(op, "200")
        base = copy.deepcopy(example[0]) if isinstance(example, list) and example else {}
        base.update({"number": pull["number"], "state": pull["state"]})
        base["head"] = {**(base.get("head") or {}), "sha": pull["head"]["sha"], "ref": pull["head"]["ref"], "label": pull["head"]["label"]}
        return base


def _handler(fake: Any) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, extra, payload = fake.handle(self.command, self.path, headers, body)
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for key, value in extra.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def start(fake: Any) -> Any:
    """Serve ``fake`` on 127.0.0.1 (a free port) in a daemon thread."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    fake.server = server
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return fake


def stop(fake: Any) -> None:
    if fake.server is not None:
        fake.server.shutdown()
        fake.server.server_close()
        fake.server = None
