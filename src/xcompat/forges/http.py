"""HTTP for forge APIs: one ``requests.Session`` with retries, rate-limit waits and a time budget.

Rules (GitHub's documented rate-limit guidance; GitLab sends the same headers):

* 5xx answers and network errors are retried with exponential backoff;
* 403 and 429 answers that are rate limits wait ``retry-after`` seconds when given,
  else until ``x-ratelimit-reset`` when ``x-ratelimit-remaining`` is 0, else at least
  a minute (doubling on repeats); any other 401/403 is a permission error, not retried;
* every wait must fit the total time budget, otherwise the call fails at once and says
  how long the service asked to wait;
* the token is never part of a log line or an error: the session sends it in a header,
  and every message built here passes through ``redact``.

The clock and sleep are injectable, so tests run rate-limit scenarios without waiting.
"""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests

from xcompat.errors import ToolError
from xcompat.limits import LIMITS
from xcompat.log import get_logger


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    total_budget_s: float = 300.0
    max_attempts: int = 8
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    rate_limit_floor_s: float = 60.0
    request_timeout_s: float = 30.0
    max_pages: int = LIMITS.http_pages

    def __post_init__(self) -> None:
        if self.total_budget_s <= 0 or self.max_attempts < 1 or self.max_pages < 1:
            raise ValueError("retry policy needs a positive budget, attempts and page count")


class ForgeError(ToolError):
    """A forge API call failed for good (after the retries the policy allows)."""

    def __init__(self, message: str, *, status: int | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.status = status


class PermissionDenied(ForgeError):
    """401/403 that is not a rate limit: the token may not do this (read-only fork token...)."""


class BudgetExceeded(ForgeError):
    """The service asked to wait longer than the remaining time budget."""


def _retry_after_seconds(value: str, now: float) -> float | None:
    """Seconds a ``Retry-After`` value asks for (delta-seconds or an HTTP date), else None."""
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when is None:
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - now
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)  # a wait longer than the time budget is refused by the caller


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc


class ForgeHTTP:
    def __init__(
        self,
        base_url: str,
        *,
        service: str,
        auth_headers: Mapping[str, str],
        secret: str | None,
        policy: RetryPolicy | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        wall_clock: Callable[[], float] = time.time,
        session: requests.Session | None = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.service = service
        self.policy = policy or RetryPolicy()
        self._secret = secret or None
        self._clock = clock
        self._sleep = sleep
        self._wall = wall_clock
        self._session = session or requests.Session()
        self._session.headers.update({"User-Agent": "xcompat-report", **(extra_headers or {})})
        self._session.headers.update(dict(auth_headers))
        self._deadline: float | None = None
        self.requests_made = 0

    # -- secrecy ------------------------------------------------------------------------
    def redact(self, text: str) -> str:
        if self._secret and self._secret in text:
            text = text.replace(self._secret, "***")
        return text

    def _fail(self, cls: type[ForgeError], message: str, *, status: int | None = None, hint: str | None = None) -> ForgeError:
        return cls(self.redact(message), status=status, hint=self.redact(hint) if hint else None)

    # -- budget ------------------------------------------------------------------------
    def _remaining(self) -> float:
        if self._deadline is None:
            self._deadline = self._clock() + self.policy.total_budget_s
        return self._deadline - self._clock()

    def _wait(self, seconds: float, why: str, what: str) -> None:
        remaining = self._remaining()
        if seconds > remaining:
            raise self._fail(
                BudgetExceeded,
                f"{self.service}: {what}: {why}; it asked to wait {seconds:.0f} s, "
                f"more than the {max(remaining, 0):.0f} s left of the {self.policy.total_budget_s:.0f} s budget",
                hint="the report is still in the job summary and the report artifact",
            )
        get_logger().info(self.redact(f"{self.service}: {what}: {why}; retrying in {seconds:.1f} s"))
        self._sleep(seconds)

    def _rate_limit_wait(self, response: requests.Response, repeats: int) -> float | None:
        """Seconds to wait for a rate-limited answer, or None when it is not a rate limit."""
        headers = response.headers
        retry_after = headers.get("retry-after")
        if retry_after:
            seconds = _retry_after_seconds(retry_after, self._wall())
            if seconds is not None:
                return seconds
            # An unreadable Retry-After (neither seconds nor an HTTP date) is ignored: the
            # other rate-limit signals below still apply.
        if headers.get("x-ratelimit-remaining") == "0" and headers.get("x-ratelimit-reset"):
            try:
                return max(0.0, float(headers["x-ratelimit-reset"]) - self._wall()) + 1.0
            except ValueError:
                pass
        body = response.text[:2000].lower() if response.content else ""
        if response.status_code == 429 or "rate limit" in body:
            return self.policy.rate_limit_floor_s * (2.0**repeats)
        return None

    # -- requests -------------------------------------------------------------------------
    def url(self, path: str) -> str:
        if path.startswith(("http://", "https://")):
            if _origin(path) != _origin(self.base_url):
                raise self._fail(ForgeError, f"{self.service}: refusing to follow a link to another host: {path}")
            return path
        return f"{self.base_url}/{path.lstrip('/')}"

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        retry_server_errors: bool = True,
    ) -> requests.Response:
        url = self.url(path)
        shown = urlsplit(url).path
        what = f"{method} {shown}"
        attempt = 0
        rate_limited = 0
        while True:
            attempt += 1
            if self._remaining() <= 0:
                raise self._fail(BudgetExceeded, f"{self.service}: {what}: time budget of {self.policy.total_budget_s:.0f} s used up")
            try:
                self.requests_made += 1
                response = self._session.request(
                    method,
                    url,
                    params=params,
                    json=json,
                    timeout=min(self.policy.request_timeout_s, max(self._remaining(), 1.0)),
                    allow_redirects=False,
                    stream=True,
                )
                self._read_bounded_body(response, what)
            except (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError,
                    requests.exceptions.ContentDecodingError) as exc:
                if attempt >= self.policy.max_attempts or not retry_server_errors:
                    raise self._fail(
                        ForgeError, f"{self.service}: {what}: network error after {attempt} attempt(s): {type(exc).__name__}"
                    ) from None
                self._wait(self._backoff(attempt), f"network error ({type(exc).__name__})", what)
                continue
            status = response.status_code
            if 200 <= status < 300:
                return response
            if status in (403, 429):
                wait = self._rate_limit_wait(response, rate_limited)
                if wait is not None:
                    rate_limited += 1
                    if attempt >= self.policy.max_attempts:
                        raise self._fail(BudgetExceeded, f"{self.service}: {what}: still rate limited after {attempt} attempts", status=status)
                    self._wait(wait, f"rate limited ({status})", what)
                    continue
            if status >= 500:
                if attempt >= self.policy.max_attempts or not retry_server_errors:
                    raise self._fail(ForgeError, f"{self.service}: {what}: server error {status} after {attempt} attempt(s)", status=status)
                self._wait(self._backoff(attempt), f"server error {status}", what)
                continue
            message = self._message(response)
            if status in (401, 403):
                raise self._fail(PermissionDenied, f"{self.service}: {what}: {status} {message}", status=status)
            raise self._fail(ForgeError, f"{self.service}: {what}: {status} {message}", status=status)

    def _read_bounded_body(self, response: requests.Response, what: str) -> None:
        """Read the body now, refusing one larger than ``LIMITS.http_response_bytes``."""
        limit = LIMITS.http_response_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            response.close()
            raise self._fail(ForgeError, f"{self.service}: {what}: answer of {declared} bytes is over the limit of {limit}")
        data = bytearray()
        for chunk in response.iter_content(chunk_size=1 << 16):
            data += chunk
            if len(data) > limit:
                response.close()
                raise self._fail(ForgeError, f"{self.service}: {what}: answer is over the limit of {limit} bytes")
        response._content = bytes(data)  # the body, read once; .json() and .text use it

    def _backoff(self, attempt: int) -> float:
        return min(self.policy.backoff_max_s, self.policy.backoff_base_s * 2.0 ** (attempt - 1))

    @staticmethod
    def _message(response: requests.Response) -> str:
        try:
            data = response.json()
        except ValueError:
            return " ".join(response.text.split())[:200]
        if isinstance(data, dict):
            text = data.get("message") or data.get("error") or ""
            return " ".join(str(text).split())[:300]
        return ""

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.request(method, path, **kwargs)
        if not response.content:
            return None
        return self._decode(response, f"{method} {urlsplit(self.url(path)).path}")

    def _decode(self, response: requests.Response, what: str) -> Any:
        try:
            return response.json()
        except (ValueError, RecursionError):
            raise self._fail(ForgeError, f"{self.service}: {what}: answer is not JSON (truncated or malformed)") from None

    def paginate(self, path: str, params: Mapping[str, Any] | None = None) -> Iterator[Any]:
        """Yield the items of a list endpoint, following ``Link: rel="next"`` (bounded)."""
        next_url: str | None = path
        query: Mapping[str, Any] | None = params
        for _ in range(self.policy.max_pages):
            if next_url is None:
                return
            response = self.request("GET", next_url, params=query)
            data = self._decode(response, f"GET {urlsplit(self.url(path)).path}")
            if not isinstance(data, list):
                raise self._fail(ForgeError, f"{self.service}: GET {urlsplit(self.url(path)).path}: expected a list")
            yield from data
            link = response.links.get("next", {}).get("url")
            next_url, query = (link, None) if link else (None, None)
        get_logger().warning(f"{self.service}: stopped after {self.policy.max_pages} pages of {urlsplit(self.url(path)).path}")
