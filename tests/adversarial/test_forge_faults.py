"""GitHub delivery against a loopback GitHub (held to its OpenAPI description) that misbehaves.

Each fault is a delivery failure, never a traceback: the channel says why, every other channel
is still tried, and the command's exit code follows --on-post-failure. And the publisher never
acts on another repository's pull request or a person's comment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.fake_github import Fault
from tests.helpers.report import FakeClock, make_cell, make_plan, make_test, make_test_result

from xcompat.forges.github import GitHubPublisher
from xcompat.forges.github_context import GitHubContext
from xcompat.forges.http import RetryPolicy
from xcompat.report import build_report, marker

SHA = "b" * 40
REPO_ROOT = Path(__file__).resolve().parents[2]


def red_report():
    cell = make_cell()
    return build_report([make_test_result(cell.id, [make_test("tests/test_a.py::test_x", "failed", message="boom")])],
                        make_plan([cell]))


def context(fake, *, event_name="pull_request", event=None, **kw) -> GitHubContext:
    if event is None:
        event = {"pull_request": {"number": 5, "head": {"sha": SHA, "repo": {"full_name": "octo/proj"}}}}
    return GitHubContext(api_url=fake.url, server_url="https://github.com", repository="octo/proj",
                         event_name=event_name, event=event, sha=SHA, token="good-token", run_id="9", **kw)


def publisher(fake, **kw) -> tuple[GitHubPublisher, FakeClock]:
    clock = FakeClock()
    return GitHubPublisher(context(fake, **kw), clock=clock.monotonic, sleep=clock.sleep, wall_clock=clock.wall,
                           policy=RetryPolicy(total_budget_s=900)), clock


# -- workflow_run: only this repository's pull requests -------------------------------------

def _workflow_run(prs: list[dict]) -> dict:
    return {"workflow_run": {"head_sha": SHA, "pull_requests": prs},
            "repository": {"id": 42, "full_name": "octo/proj", "url": "https://api.github.com/repos/octo/proj"}}


def _pr(number: int, repo_id: int, url: str) -> dict:
    return {"number": number, "head": {"sha": SHA}, "base": {"repo": {"id": repo_id, "name": "proj", "url": url}}}


def test_a_same_named_repository_listed_first_does_not_get_the_comment(fake_github) -> None:
    evil = _pr(7, 999, "https://api.github.com/repos/evil/proj")
    ours = _pr(5, 42, "https://api.github.com/repos/octo/proj")
    ctx = context(fake_github, event_name="workflow_run", event=_workflow_run([evil, ours]))
    assert ctx.pr_number == 5


def test_pull_requests_are_matched_by_id_even_when_urls_agree() -> None:
    ctx = GitHubContext(api_url="https://api.github.com", server_url="https://github.com", repository="octo/proj",
                        event_name="workflow_run", sha=SHA, token="t",
                        event=_workflow_run([_pr(7, 999, "https://api.github.com/repos/octo/proj")]))
    assert ctx.pr_number is None


def test_without_ids_the_api_url_must_match() -> None:
    prs = [{"number": 7, "base": {"repo": {"name": "proj", "url": "https://api.github.com/repos/evil/proj"}}},
           {"number": 5, "base": {"repo": {"name": "proj", "url": "https://api.github.com/repos/octo/proj"}}}]
    ctx = GitHubContext(api_url="https://api.github.com", server_url="https://github.com", repository="octo/proj",
                        event_name="workflow_run", sha=SHA, token="t", event={"workflow_run": {"pull_requests": prs}})
    assert ctx.pr_number == 5
    nameonly = [{"number": 7, "base": {"repo": {"name": "proj"}}}]
    ctx = GitHubContext(api_url="https://api.github.com", server_url="https://github.com", repository="octo/proj",
                        event_name="workflow_run", sha=SHA, token="t", event={"workflow_run": {"pull_requests": nameonly}})
    assert ctx.pr_number is None  # a name alone identifies nothing: the PR is looked up by SHA instead


def test_repository_id_from_the_environment() -> None:
    env = {"GITHUB_REPOSITORY": "octo/proj", "GITHUB_REPOSITORY_ID": "42", "GITHUB_EVENT_NAME": "workflow_run"}
    ctx = GitHubContext.from_env(env)
    assert ctx.repository_id == "42" and ctx.comment_author == "github-actions[bot]"
    assert GitHubContext.from_env({**env, "XCOMPAT_COMMENT_AUTHOR": "my-app[bot]"}).comment_author == "my-app[bot]"


# -- the sticky comment belongs to its author --------------------------------------------

def _human_comment(fake, body: str, login: str = "maintainer") -> int:
    cid = fake.new_id()
    fake.comments.setdefault(5, []).append({"id": cid, "body": body, "user": {"login": login, "type": "User"},
                                            "html_url": f"https://github.com/octo/proj/pull/5#issuecomment-{cid}"})
    return cid


def test_a_persons_comment_with_the_marker_is_never_edited(fake_github) -> None:
    fake_github.add_pull(5, SHA)
    human = _human_comment(fake_github, marker("default") + "\nquoting the bot")
    p, _ = publisher(fake_github)
    delivery = p.upsert_comment(red_report(), 5)
    assert delivery.ok and "created" in delivery.detail
    touched = [r for r in fake_github.requests if r["method"] == "PATCH" and r["path"].endswith(f"/comments/{human}")]
    assert touched == []
    assert fake_github.comments[5][0]["body"].endswith("quoting the bot")
    # the second run finds its own comment and edits that one
    assert "updated" in p.upsert_comment(red_report(), 5).detail
    assert len(fake_github.comments[5]) == 2


def test_comment_author_is_configurable(fake_github) -> None:
    fake_github.add_pull(5, SHA)
    _human_comment(fake_github, marker("default") + "\nold report", login="xcompat-app[bot]")
    p, _ = publisher(fake_github, comment_author="xcompat-app[bot]")
    assert [c["user"]["login"] for c in p.find_comments(5, "default")] == ["xcompat-app[bot]"]


# -- a 5xx after the check run was created leaves no stray run --------------------------------

def test_check_run_create_answered_502_after_creating_leaves_one_completed_run(fake_github) -> None:
    fake_github.add_pull(5, SHA)
    fake_github.faults.append(Fault(status=502, body={"message": "Bad Gateway"}, method="POST", after=True))
    p, _ = publisher(fake_github)
    outcome = p.publish(red_report(), check_name="xcompat", comment=False)
    assert all(d.ok for d in outcome.deliveries), outcome.deliveries
    runs = list(fake_github.check_runs.values())
    assert [(r["status"], r["conclusion"]) for r in runs] == [("completed", "failure")]


def test_check_run_create_answered_502_before_creating_is_sent_again(fake_github) -> None:
    fake_github.add_pull(5, SHA)
    fake_github.fail_next(502, method="POST")
    p, _ = publisher(fake_github)
    assert p.publish(red_report(), check_name="xcompat", comment=False).deliveries[0].ok
    assert [r["status"] for r in fake_github.check_runs.values()] == ["completed"]


# -- malformed answers are delivery failures; the other channel is still tried ------------------

def test_non_numeric_retry_after_is_no_traceback(fake_github) -> None:
    fake_github.add_pull(5, SHA)
    fake_github.faults.append(Fault(status=429, headers={"retry-after": "soon, maybe"}, body={"message": "slow down"}))
    fake_github.faults.append(Fault(status=429, headers={"retry-after": "Mon, 99 Foo 2024 99:99:99 GMT"},
                                    body={"message": "slow down"}))
    p, clock = publisher(fake_github)
    outcome = p.publish(red_report(), check_name="xcompat")
    assert all(d.ok for d in outcome.deliveries), outcome.deliveries
    assert clock.sleeps[:2] == [60.0, 120.0]  # the unreadable header is ignored: the 429 floor applies


def test_truncated_json_in_a_paginated_list_fails_only_the_comment(fake_github) -> None:
    fake_github.add_pull(5, SHA)
    fake_github.faults.append(Fault(status=200, body=b'[{"id": 1, "body": "<!-- xcomp', method="GET"))
    p, _ = publisher(fake_github)
    outcome = p.publish(red_report(), check_name="xcompat")
    by_channel = {d.channel: d for d in outcome.deliveries}
    assert by_channel["check run"].ok
    assert not by_channel["PR comment"].ok and "not JSON" in by_channel["PR comment"].detail


def test_a_201_with_an_empty_body_fails_the_check_run_and_the_comment_is_still_posted(fake_github) -> None:
    fake_github.add_pull(5, SHA)
    fake_github.faults.append(Fault(status=201, body=b"", method="POST"))
    p, _ = publisher(fake_github)
    outcome = p.publish(red_report(), check_name="xcompat")
    by_channel = {d.channel: d for d in outcome.deliveries}
    assert not by_channel["check run"].ok and "empty answer" in by_channel["check run"].detail
    assert by_channel["PR comment"].ok and len(fake_github.comments[5]) == 1


def test_a_huge_answer_is_refused_not_read(fake_github, monkeypatch) -> None:
    from xcompat import limits

    monkeypatch.setattr(limits, "LIMITS", limits.InputLimits(http_response_bytes=1000))
    monkeypatch.setattr("xcompat.forges.http.LIMITS", limits.LIMITS)
    fake_github.add_pull(5, SHA)
    fake_github.faults.append(Fault(status=200, body=b"[" + b'{"id": 1},' * 500 + b"{}]", method="GET"))
    p, _ = publisher(fake_github)
    outcome = p.publish(red_report(), check_name="xcompat")
    by_channel = {d.channel: d for d in outcome.deliveries}
    assert not by_channel["PR comment"].ok and "over the limit" in by_channel["PR comment"].detail


# -- the command: exit codes when delivery fails --------------------------------------------------

def _report_cli(tmp_path: Path, fake, *extra: str) -> subprocess.CompletedProcess[str]:
    cell = make_cell()
    results = tmp_path / "results"
    results.mkdir(exist_ok=True)
    (results / "test.json").write_text(json.dumps(make_test_result(
        cell.id, [make_test("tests/test_a.py::test_x", "passed")])))
    (tmp_path / "plan.json").write_text(json.dumps(make_plan([cell])))
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 5, "head": {"sha": SHA, "repo": {"full_name": "octo/proj"}}}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_", "GITLAB", "XCOMPAT_"))}
    env.update({"GITHUB_API_URL": fake.url, "GITHUB_REPOSITORY": "octo/proj", "GITHUB_EVENT_NAME": "pull_request",
                "GITHUB_EVENT_PATH": str(event), "GITHUB_SHA": SHA, "GITHUB_TOKEN": "good-token"})
    return subprocess.run([sys.executable, "-m", "xcompat", "report", str(results), "--plan", str(tmp_path / "plan.json"),
                           "--github", "--bundle-dir", str(tmp_path / "bundle"), *extra],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize(("flag", "code"), [((), 0), (("--on-post-failure", "fail"), 4)], ids=["warn", "fail"])
def test_report_exit_code_when_a_delivery_gets_a_malformed_answer(tmp_path: Path, fake_github, flag, code) -> None:
    fake_github.add_pull(5, SHA)
    fake_github.faults.append(Fault(status=201, body=b"", method="POST"))
    proc = _report_cli(tmp_path, fake_github, *flag)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert "empty answer" in proc.stderr
    assert len(fake_github.comments[5]) == 1  # the other channel was still tried


# -- GitLab: the same client, the same rules -----------------------------------------------------

@pytest.mark.parametrize(("script", "why"), [
    ([(200, {}, b'[{"id": 1, "body": "<!-- xcomp')], "not JSON"),
    ([(200, {}, {"not": "a list"})], "expected a list"),
    ([(429, {"retry-after": "later"}, {"message": "slow"})] * 9, "rate limited"),
], ids=["truncated-list", "object-for-list", "unreadable-retry-after"])
def test_gitlab_note_faults_are_delivery_failures(script, why) -> None:
    from tests.helpers.fake_github import start, stop
    from tests.helpers.report import ScriptedServer

    from xcompat.forges.gitlab import GitLabContext, GitLabPublisher

    server = start(ScriptedServer(script))
    try:
        clock = FakeClock()
        ctx = GitLabContext(api_url=server.url + "/api/v4", project_id="42", mr_iid="7", token="glpat-x", job_token=None)
        delivery = GitLabPublisher(ctx, clock=clock.monotonic, sleep=clock.sleep, wall_clock=clock.wall,
                                   policy=RetryPolicy(total_budget_s=100_000)).publish(red_report())
    finally:
        stop(server)
    assert not delivery.ok and why in delivery.detail, delivery
