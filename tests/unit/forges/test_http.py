"""Retry, rate-limit and secrecy rules of the forge HTTP layer, against a loopback server."""

import socket

import pytest
from tests.helpers.fake_github import start, stop
from tests.helpers.report import FakeClock, ScriptedServer

from xcompat.forges.http import BudgetExceeded, ForgeError, ForgeHTTP, PermissionDenied, RetryPolicy

TOKEN = "ghs_SECRETSECRETSECRET"


@pytest.fixture
def serve():
    servers = []

    def _serve(script):
        server = start(ScriptedServer(script))
        servers.append(server)
        return server

    yield _serve
    for server in servers:
        stop(server)


def client(url, clock, **policy):
    return ForgeHTTP(
        url,
        service="GitHub",
        auth_headers={"Authorization": f"Bearer {TOKEN}"},
        secret=TOKEN,
        policy=RetryPolicy(**policy),
        clock=clock.monotonic,
        sleep=clock.sleep,
        wall_clock=clock.wall,
    )


def test_server_errors_back_off_exponentially_then_succeed(serve):
    server = serve([(502, {}, {}), (503, {}, {}), (500, {}, {}), (200, {}, {"ok": True})])
    clock = FakeClock()
    assert client(server.url, clock).json("GET", "/x") == {"ok": True}
    assert clock.sleeps == [1.0, 2.0, 4.0]
    assert len(server.requests) == 4


def test_retry_after_is_honoured(serve):
    server = serve([(429, {"retry-after": "7"}, {"message": "secondary rate limit"}), (200, {}, {})])
    clock = FakeClock()
    client(server.url, clock).request("POST", "/x", json={})
    assert clock.sleeps == [7.0]


def test_primary_rate_limit_waits_until_reset(serve):
    clock = FakeClock()
    reset = int(clock.wall()) + 42
    server = serve([(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)}, {"message": "API rate limit exceeded"}), (200, {}, {})])
    client(server.url, clock).request("GET", "/x")
    assert clock.sleeps == [43.0]  # until the reset, plus a second of margin


def test_rate_limit_without_headers_waits_at_least_a_minute_and_doubles(serve):
    body = {"message": "You have exceeded a secondary rate limit."}
    server = serve([(403, {}, body), (403, {}, body), (200, {}, {})])
    clock = FakeClock()
    client(server.url, clock).request("GET", "/x")
    assert clock.sleeps == [60.0, 120.0]


def test_permission_denied_is_not_retried(serve):
    server = serve([(403, {}, {"message": "Resource not accessible by integration"})])
    clock = FakeClock()
    with pytest.raises(PermissionDenied, match="Resource not accessible by integration") as exc:
        client(server.url, clock).request("POST", "/repos/o/r/check-runs", json={})
    assert exc.value.status == 403 and exc.value.exit_code == 4
    assert clock.sleeps == [] and len(server.requests) == 1


def test_a_wait_beyond_the_budget_fails_at_once(serve):
    server = serve([(429, {"retry-after": "3600"}, {})])
    clock = FakeClock()
    with pytest.raises(BudgetExceeded, match="asked to wait 3600 s"):
        client(server.url, clock, total_budget_s=300).request("GET", "/x")
    assert clock.sleeps == []


def test_attempts_are_bounded(serve):
    server = serve([(500, {}, {})] * 10)
    clock = FakeClock()
    with pytest.raises(ForgeError, match="server error 500 after 3 attempt"):
        client(server.url, clock, max_attempts=3).request("GET", "/x")
    assert len(server.requests) == 3


def test_network_errors_are_retried_then_reported(serve):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    clock = FakeClock()
    with pytest.raises(ForgeError, match="network error after 3 attempt"):
        client(f"http://127.0.0.1:{port}", clock, max_attempts=3).request("GET", "/x")
    assert clock.sleeps == [1.0, 2.0]


def test_token_never_appears_in_errors_or_logs(serve, capsys):
    from xcompat.log import configure

    configure(env={})
    server = serve([(500, {}, {}), (422, {}, {"message": f"bad token {TOKEN} in request"})])
    clock = FakeClock()
    with pytest.raises(ForgeError) as exc:
        client(server.url, clock).request("GET", f"/x?access_token={TOKEN}")
    captured = capsys.readouterr()
    assert TOKEN not in str(exc.value) and TOKEN not in captured.err + captured.out
    assert "***" in str(exc.value)
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {TOKEN}"


def test_pagination_follows_link_and_refuses_other_hosts(serve):
    server = serve([])
    server.script = [
        (200, {"Link": f'<{server.url}/items?page=2>; rel="next"'}, [1, 2]),
        (200, {"Link": '<https://evil.example/items?page=3>; rel="next"'}, [3]),
    ]
    clock = FakeClock()
    items = []
    with pytest.raises(ForgeError, match="another host"):
        for item in client(server.url, clock).paginate("/items", {"per_page": 2}):
            items.append(item)  # noqa: PERF402 (list() would lose the items read before the refusal)
    assert items == [1, 2, 3]


def test_pagination_is_bounded(serve):
    server = serve([])
    server.script = [(200, {"Link": f'<{server.url}/items?page={i + 2}>; rel="next"'}, [i]) for i in range(10)]
    assert list(client(server.url, FakeClock(), max_pages=3).paginate("/items")) == [0, 1, 2]


def test_policy_validation():
    with pytest.raises(ValueError):
        RetryPolicy(total_budget_s=0)
