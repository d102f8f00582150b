"""GitHub delivery against a loopback server held to GitHub's OpenAPI description."""

import json
import os
import subprocess
import sys

from tests.helpers.report import (
    FakeClock,
    abi_result,
    coverage_result,
    make_cell,
    make_plan,
    make_test,
    make_test_result,
    mixed_results,
)

from xcompat.forges.github import GitHubPublisher
from xcompat.forges.github_context import GitHubContext
from xcompat.forges.github_payloads import annotations_for
from xcompat.forges.http import RetryPolicy
from xcompat.report import build_report, marker

SHA = "a" * 40
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def context(fake, *, token="good-token", event_name="pull_request", event=None):
    if event is None:
        event = {"pull_request": {"number": 5, "head": {"sha": SHA, "repo": {"full_name": "octo/proj"}}}}
    return GitHubContext(
        api_url=fake.url, server_url="https://github.com", repository="octo/proj", event_name=event_name,
        event=event, sha=SHA, token=token, run_id="77",
    )


def publisher(fake, clock=None, **kw):
    clock = clock or FakeClock()
    return GitHubPublisher(context(fake, **kw), clock=clock.monotonic, sleep=clock.sleep, wall_clock=clock.wall, policy=RetryPolicy(total_budget_s=900))


def many_annotations_report(n=120):
    cell = make_cell()
    tests = [make_test(f"tests/test_{i}.py::test_x", "failed", message=f"failure {i}") for i in range(n)]
    return build_report([make_test_result(cell.id, tests)], make_plan([cell]))


def test_the_contract_catches_bad_requests(fake_github):
    import requests

    r = requests.post(f"{fake_github.url}/repos/octo/proj/check-runs", json={"name": "x"}, headers={"Authorization": "Bearer good-token"}, timeout=10)
    assert r.status_code == 400 and "head_sha" in r.json()["message"]
    r = requests.get(f"{fake_github.url}/repos/octo/proj/no-such-thing", headers={"Authorization": "Bearer good-token"}, timeout=10)
    assert r.status_code == 400
    assert len(fake_github.violations) == 2
    fake_github.violations.clear()


def test_check_run_is_created_then_completed_with_annotations_in_chunks_of_50(fake_github):
    fake_github.add_pull(5, SHA)
    report = many_annotations_report(120)
    delivery = publisher(fake_github).publish_check_run(report, name="xcompat", head_sha=SHA)
    assert delivery.ok and "120 annotation" in delivery.detail
    writes = [r for r in fake_github.requests if r["method"] != "GET"]
    assert [(r["method"], r["template"]) for r in writes] == [
        ("POST", "/repos/{owner}/{repo}/check-runs"),
        ("PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
        ("PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
        ("PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
    ]
    assert writes[0]["body"]["status"] == "in_progress"
    assert [len(r["body"]["output"].get("annotations", [])) for r in writes[1:]] == [50, 50, 20]
    (run,) = fake_github.check_runs.values()
    assert run["status"] == "completed" and run["conclusion"] == "failure"
    assert len(run["_annotations"]) == 120
    assert len(run["_output"]["summary"]) <= 65535 and len(run["_output"]["text"]) <= 65535


def test_check_run_output_fits_for_a_huge_report(fake_github):
    from tests.helpers.report import huge_report

    report = huge_report()
    publisher(fake_github).publish_check_run(report, name="xcompat", head_sha=SHA)
    (run,) = fake_github.check_runs.values()
    assert 0 < len(run["_output"]["summary"]) <= 65535 and len(run["_output"]["text"]) <= 65535
    assert len(run["_annotations"]) == 1000  # capped per check run, sent in 20 requests


def test_sticky_comment_is_created_once_and_updated_in_place(fake_github):
    fake_github.add_pull(5, SHA)
    fake_github.comments[5] = []
    # Someone else's comments, enough to need pagination, and one that quotes the marker.
    for i in range(130):
        fake_github.comments[5].append({"id": 10_000 + i, "body": f"> {marker()}\nhuman comment {i}", "html_url": "x", "user": {"login": "human"}})
    plan, results = mixed_results()
    first = build_report(results, plan)
    p = publisher(fake_github)
    assert p.upsert_comment(first, 5).detail == "created on #5"
    cell = make_cell()
    green = build_report([make_test_result(cell.id, [make_test("t.py::x")])], make_plan([cell]))
    assert p.upsert_comment(green, 5).detail == "updated on #5"
    ours = [c for c in fake_github.comments[5] if c["body"].startswith(marker())]
    assert len(ours) == 1 and ours[0]["body"].startswith(marker() + "\n## ✅")
    assert len(fake_github.comments[5]) == 131
    pages = [r for r in fake_github.requests if r["method"] == "GET"]
    assert len(pages) >= 4  # two lookups over two pages of 100


def test_a_persons_comment_that_starts_with_the_marker_is_left_alone(fake_github):
    fake_github.add_pull(5, SHA)
    fake_github.comments[5] = [{"id": 42, "body": marker() + "\ncopied by hand", "html_url": "x", "user": {"login": "human", "type": "User"}}]
    p = publisher(fake_github)
    assert p.upsert_comment(many_annotations_report(1), 5).detail == "created on #5"
    assert p.upsert_comment(many_annotations_report(2), 5).detail == "updated on #5"
    assert len(fake_github.comments[5]) == 2 and fake_github.comments[5][0]["body"].endswith("copied by hand")


def test_comment_fits_the_65536_character_limit(fake_github):
    from tests.helpers.report import huge_report

    fake_github.add_pull(5, SHA)
    delivery = publisher(fake_github).upsert_comment(huge_report(), 5)
    assert delivery.ok
    (comment,) = fake_github.comments[5]
    assert len(comment["body"]) <= 65536


def test_fork_pull_request_posts_nothing_and_says_why(fake_github):
    event = {"pull_request": {"number": 5, "head": {"sha": SHA, "repo": {"full_name": "mallory/proj"}}}}
    outcome = publisher(fake_github, event=event).publish(many_annotations_report(3), check_name="xcompat")
    assert fake_github.requests == []
    assert [d.ok for d in outcome.deliveries] == [False, False]
    assert all("fork mallory/proj" in d.detail and "read-only" in d.detail for d in outcome.deliveries)


def test_unexpected_read_only_token_degrades_with_advice(fake_github):
    fake_github.add_pull(5, SHA)
    outcome = publisher(fake_github, token="read-only-token").publish(many_annotations_report(3), check_name="xcompat")
    assert [d.ok for d in outcome.deliveries] == [False, False]
    assert all("Resource not accessible by integration" in d.detail and "workflow_run" in d.detail for d in outcome.deliveries)


def test_workflow_run_from_a_fork_finds_the_pr_from_the_head_sha(fake_github):
    fake_github.add_pull(8, "b" * 40, head_repo="someone/other")
    fake_github.add_pull(9, SHA, head_repo="mallory/proj", branch="feature")
    event = {
        "workflow_run": {
            "head_sha": SHA,
            "head_branch": "feature",
            "pull_requests": [],  # GitHub leaves this empty for forks
            "head_repository": {"full_name": "mallory/proj", "owner": {"login": "mallory"}},
        }
    }
    p = publisher(fake_github, event_name="workflow_run", event=event)
    assert p.context.read_only_reason() is None
    outcome = p.publish(many_annotations_report(3), check_name="xcompat")
    assert all(d.ok for d in outcome.deliveries), outcome.deliveries
    assert [c["body"][:40] for c in fake_github.comments[9]] and 8 not in fake_github.comments
    (run,) = fake_github.check_runs.values()
    assert run["head_sha"] == SHA


def test_pr_lookup_falls_back_to_head_label(fake_github, monkeypatch):
    fake_github.add_pull(9, SHA, head_repo="mallory/proj", branch="feature")
    p = publisher(fake_github)
    original = fake_github._route

    def no_commit_pulls(method, template, op, params):
        if template.endswith("/commits/{commit_sha}/pulls"):
            return 200, {}, []
        return original(method, template, op, params)

    monkeypatch.setattr(fake_github, "_route", no_commit_pulls)
    assert p.find_pr_for_sha(SHA, head_owner="mallory", head_branch="feature") == 9
    assert p.find_pr_for_sha(SHA) is None


def test_rate_limits_and_server_errors_during_publish_are_waited_out(fake_github):
    fake_github.add_pull(5, SHA)
    clock = FakeClock()
    fake_github.primary_rate_limit_next(int(clock.wall()) + 30)
    fake_github.secondary_rate_limit_next(5)
    fake_github.fail_next(502, method="PATCH")
    outcome = publisher(fake_github, clock=clock).publish(many_annotations_report(3), check_name="xcompat")
    assert all(d.ok for d in outcome.deliveries), outcome.deliveries
    assert clock.sleeps[:3] == [31.0, 5.0, 1.0]
    assert len(fake_github.check_runs) == 1 and len(fake_github.comments[5]) == 1


def test_server_error_on_comment_create_does_not_duplicate(fake_github):
    fake_github.add_pull(5, SHA)
    p = publisher(fake_github)
    report = many_annotations_report(1)
    original = fake_github._route
    state = {"failed": False}

    def create_then_fail(method, template, op, params):
        status, headers, body = original(method, template, op, params)
        if method == "POST" and template.endswith("/comments") and not state["failed"]:
            state["failed"] = True
            return 502, {}, {"message": "Bad Gateway"}  # the comment was created anyway
        return status, headers, body

    fake_github._route = create_then_fail
    assert p.upsert_comment(report, 5).ok
    assert len(fake_github.comments[5]) == 1


def test_giving_up_after_the_budget_is_reported_not_raised(fake_github):
    fake_github.add_pull(5, SHA)
    clock = FakeClock()
    fake_github.secondary_rate_limit_next(4000)
    p = GitHubPublisher(context(fake_github), clock=clock.monotonic, sleep=clock.sleep, wall_clock=clock.wall, policy=RetryPolicy(total_budget_s=120))
    outcome = p.publish(many_annotations_report(1), check_name="xcompat", comment=False)
    (delivery,) = outcome.deliveries
    assert not delivery.ok and "asked to wait 4000 s" in delivery.detail


def test_annotations_point_at_repository_files_only():
    cell = make_cell()
    tests = [make_test("tests/a.py::x", "failed"), make_test("/abs/b.py::y", "failed"), make_test("../c.py::z", "failed")]
    results = [
        make_test_result(cell.id, tests),
        abi_result([("symbol-removed", "_ext.so", "_Z1fv", "major")]),
        coverage_result(80.0, diff_percent=50.0, diff_files=[("src/m.py", [[3, 5]])]),
    ]
    annotations = annotations_for(build_report(results, make_plan([cell])))
    assert {(a["path"], a["start_line"], a["end_line"], a["annotation_level"]) for a in annotations} == {
        ("tests/a.py", 1, 1, "failure"),
        ("src/m.py", 3, 5, "warning"),
    }


def _cli(tmp_path, fake, *, event_name, event, args=None, extra=(), token="good-token"):
    plan, results = mixed_results()
    art = tmp_path / "artifacts"
    art.mkdir(exist_ok=True)
    for i, r in enumerate(results):
        (art / f"r{i}.json").write_text(json.dumps(r))
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    event_path = tmp_path / "event.json"
    event_path.write_text(json.dumps(event))
    summary = tmp_path / "summary.md"
    env = {
        "PATH": os.environ["PATH"],
        "GITHUB_ACTIONS": "true",
        "GITHUB_API_URL": fake.url,
        "GITHUB_REPOSITORY": "octo/proj",
        "GITHUB_EVENT_NAME": event_name,
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_SHA": SHA,
        "GITHUB_RUN_ID": "77",
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_TOKEN": token,
    }
    args = (list(args) if args is not None else [str(art), "--plan", str(tmp_path / "plan.json")]) + list(extra)
    proc = subprocess.run(
        [sys.executable, "-m", "xcompat", "report", *args, "--github", "--bundle-dir", str(tmp_path / "bundle")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False,
    )
    return proc, summary


def test_cli_end_to_end_same_repository(tmp_path, fake_github):
    fake_github.add_pull(5, SHA)
    event = {"pull_request": {"number": 5, "head": {"sha": SHA, "repo": {"full_name": "octo/proj"}}}}
    proc, summary = _cli(tmp_path, fake_github, event_name="pull_request", event=event)
    assert proc.returncode == 1, proc.stderr  # the report is red
    assert "good-token" not in proc.stdout + proc.stderr
    assert "GitHub check run: xcompat report: failure" in proc.stderr
    assert "::error file=tests/test_native.py" in proc.stderr
    text = summary.read_text()
    assert text.startswith("## ❌") and "https://github.com/octo/proj/actions/runs/77" in text
    assert len(text.encode()) <= 1024 * 1024
    assert len(fake_github.check_runs) == 1 and len(fake_github.comments[5]) == 1
    for name in ("report.json", "report.md", "report.html", "plan.json"):
        assert (tmp_path / "bundle" / name).is_file()


def test_cli_two_stage_fork_flow(tmp_path, fake_github):
    fake_github.add_pull(9, SHA, head_repo="mallory/proj", branch="feature")
    fork_event = {"pull_request": {"number": 9, "head": {"sha": SHA, "repo": {"full_name": "mallory/proj"}}}}
    proc, summary = _cli(tmp_path, fake_github, event_name="pull_request", event=fork_event, token="read-only-token")
    assert proc.returncode == 1, proc.stderr
    assert fake_github.requests == []  # nothing tried with the read-only token
    assert "read-only token" in summary.read_text() and "workflow_run" in summary.read_text()
    # Stage 2: the base repository's workflow_run job posts from the uploaded bundle.
    run_event = {"workflow_run": {"head_sha": SHA, "head_branch": "feature", "pull_requests": [], "head_repository": {"owner": {"login": "mallory"}}}}
    proc, _ = _cli(tmp_path, fake_github, event_name="workflow_run", event=run_event, args=["--from-artifact", str(tmp_path / "bundle"), "--exit-zero"])
    assert proc.returncode == 0, proc.stderr
    assert len(fake_github.comments[9]) == 1 and fake_github.comments[9][0]["body"].startswith(marker())
    assert "missing" in fake_github.comments[9][0]["body"]


def test_cli_post_failure_exit_code_is_configurable(tmp_path, fake_github):
    fake_github.add_pull(5, SHA)
    event = {"pull_request": {"number": 5, "head": {"sha": SHA, "repo": {"full_name": "octo/proj"}}}}
    fake_github.tokens.pop("good-token")  # the token is revoked: 401
    proc, summary = _cli(tmp_path, fake_github, event_name="pull_request", event=event)
    assert proc.returncode == 1 and "not posted" in proc.stderr  # warn: the report verdict decides
    assert "Bad credentials" in proc.stderr
    assert summary.read_text().startswith("## ❌")
    assert "> GitHub check run: not posted" in summary.read_text()  # the summary says what did not arrive
    proc, _ = _cli(tmp_path, fake_github, event_name="pull_request", event=event, extra=["--on-post-failure", "fail"])
    assert proc.returncode == 4 and "delivery(ies) failed" in proc.stderr


def test_cli_comment_mode_off_on_a_fork_mentions_no_comment(tmp_path, fake_github):
    fork_event = {"pull_request": {"number": 9, "head": {"sha": SHA, "repo": {"full_name": "mallory/proj"}}}}
    proc, _ = _cli(tmp_path, fake_github, event_name="pull_request", event=fork_event, token="read-only-token",
                   extra=["--comment-mode", "off"])
    assert proc.returncode == 1, proc.stderr
    assert "GitHub check run: not posted" in proc.stderr
    assert "PR comment" not in proc.stderr  # off means no comment: not a comment that could not be posted
    assert fake_github.requests == []
