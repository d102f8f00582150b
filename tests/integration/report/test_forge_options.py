"""Comment modes, the annotation limit, step outputs and the badge, against the loopback GitHub/GitLab."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from tests.helpers.report import make_cell, make_plan, make_test, make_test_result, mixed_results
from tests.integration.report.test_github import SHA, many_annotations_report, publisher

from xcompat.errors import InputError
from xcompat.forges.comment_mode import decide, digest, digest_of
from xcompat.forges.github_payloads import annotations_for
from xcompat.jsonio import validate
from xcompat.report import build_report
from xcompat.report.badge import endpoint, svg, write_badge
from xcompat.report.step_outputs import OUTPUT_NAMES, step_outputs


def green():
    cell = make_cell()
    return build_report([make_test_result(cell.id, [make_test("t.py::test_ok")])], make_plan([cell]))


def red():
    cell = make_cell()
    return build_report([make_test_result(cell.id, [make_test("t.py::test_ok", "failed", message="boom")])], make_plan([cell]))


def comment_requests(fake):
    return [r for r in fake.requests if "/comments" in r["path"] and r["method"] in ("POST", "PATCH")]


def test_on_failure_posts_only_red_reports_but_updates_a_stale_red_comment(fake_github):
    fake_github.add_pull(5, SHA)
    p = publisher(fake_github)
    outcome = p.publish(green(), check_name="x", check_run=False, comment_mode="on-failure")
    assert outcome.deliveries[0].ok and "skipped" in outcome.deliveries[0].detail
    assert comment_requests(fake_github) == [] and 5 not in fake_github.comments or fake_github.comments[5] == []
    p.publish(red(), check_name="x", check_run=False, comment_mode="on-failure")
    assert len(fake_github.comments[5]) == 1 and "## ❌" in fake_github.comments[5][0]["body"]
    p.publish(green(), check_name="x", check_run=False, comment_mode="on-failure")  # fixed: the comment turns green
    assert len(fake_github.comments[5]) == 1 and "## ✅" in fake_github.comments[5][0]["body"]


def test_on_change_skips_an_update_with_the_same_results(fake_github):
    fake_github.add_pull(5, SHA)
    p = publisher(fake_github)
    p.publish(red(), check_name="x", check_run=False, comment_mode="on-change")
    p.publish(red(), check_name="x", check_run=False, comment_mode="on-change")
    assert [r["method"] for r in comment_requests(fake_github)] == ["POST"]
    outcome = p.publish(green(), check_name="x", check_run=False, comment_mode="on-change")
    assert [r["method"] for r in comment_requests(fake_github)] == ["POST", "PATCH"]
    assert "updated" in outcome.deliveries[0].detail
    assert digest_of(fake_github.comments[5][0]["body"]) == digest(green())


def test_off_sends_no_comment_request(fake_github):
    fake_github.add_pull(5, SHA)
    outcome = publisher(fake_github).publish(red(), check_name="x", check_run=False, comment_mode="off")
    assert outcome.deliveries == [] and fake_github.requests == []


def test_modes_decide_from_the_existing_body():
    body = "<!-- xcompat-report id=default -->\n## ❌ ...\n" + f"<!-- xcompat-digest sha256={digest(red())} -->"
    assert decide("always", red(), body).post
    assert not decide("on-change", red(), body).post
    assert decide("on-change", green(), body).post
    assert not decide("on-failure", green(), None).post and decide("on-failure", green(), body).post
    assert not decide("off", red(), None).post


def test_annotation_limit_is_configurable(fake_github):
    report = many_annotations_report(120)
    assert len(annotations_for(report)) == 120
    assert len(annotations_for(report, max_annotations=7)) == 7
    assert annotations_for(report, max_annotations=0) == []
    assert len(annotations_for(report, max_annotations=5000)) == 120
    fake_github.add_pull(5, SHA)
    publisher(fake_github).publish(report, check_name="x", comment=False, max_annotations=7)
    (run,) = fake_github.check_runs.values()
    assert len(run["_annotations"]) == 7


def test_badge_endpoint_and_svg(tmp_path):
    report = build_report(*reversed(mixed_results()))
    doc = endpoint(report)
    assert doc == {"schemaVersion": 1, "label": "xcompat", "message": "failed 1/4", "color": "red"}
    assert endpoint(green())["message"] == "passed 1/1" and endpoint(green())["color"] == "brightgreen"
    json_path, svg_path = write_badge(report, tmp_path)
    validate("badge", json.loads(json_path.read_text()))
    root = ET.fromstring(svg_path.read_text())
    assert root.tag == "{http://www.w3.org/2000/svg}svg" and root.get("aria-label") == "xcompat: failed 1/4"
    assert "<script" not in svg(doc) and "href=" not in svg(doc).replace('clip-path="url(#r)"', "")
    with pytest.raises(InputError, match="color"):
        validate("badge", {**doc, "color": "purple"})


def test_step_outputs_name_every_count():
    report = build_report(*reversed(mixed_results()))
    out = step_outputs(report, check_run_url="https://x/check", comment_url="https://x/c", report_dir="b")
    assert tuple(out) == OUTPUT_NAMES
    assert out["conclusion"] == "failure" and out["cells"] == "5" and out["cells-missing"] == "1"
    assert out["tests-failed"] == "2" and out["tests-skipped"] == "1" and out["abi-bump"] == "major"
    assert out["coverage"] == "81.5" and out["check-run-url"] == "https://x/check"
    assert all(isinstance(v, str) and "\n" not in v for v in out.values())


def _cli(tmp_path, fake, event, extra, output_file):
    plan, results = mixed_results()
    art = tmp_path / "artifacts"
    art.mkdir(exist_ok=True)
    for i, r in enumerate(results):
        (art / f"r{i}.json").write_text(json.dumps(r))
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    (tmp_path / "event.json").write_text(json.dumps(event))
    env = {
        "PATH": os.environ["PATH"],
        "GITHUB_ACTIONS": "true",
        "GITHUB_API_URL": fake.url,
        "GITHUB_REPOSITORY": "octo/proj",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(tmp_path / "event.json"),
        "GITHUB_SHA": SHA,
        "GITHUB_RUN_ID": "77",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_OUTPUT": str(output_file),
        "GITHUB_TOKEN": "good-token",
    }
    cmd = [sys.executable, "-m", "xcompat", "report", str(art), "--plan", str(tmp_path / "plan.json"), "--github", "--bundle-dir", str(tmp_path / "bundle"), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False)


def test_cli_writes_step_outputs_and_the_badge(tmp_path, fake_github):
    fake_github.add_pull(5, SHA)
    event = {"pull_request": {"number": 5, "head": {"sha": SHA, "repo": {"full_name": "octo/proj"}}}}
    output_file = tmp_path / "github_output"
    output_file.write_text("")
    proc = _cli(tmp_path, fake_github, event, ["--comment-mode", "on-failure", "--max-annotations", "1"], output_file)
    assert proc.returncode == 1, proc.stderr
    text = output_file.read_text()
    values = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        name, _, delimiter = lines[i].partition("<<")
        values[name] = lines[i + 1]
        assert lines[i + 2] == delimiter
        i += 3
    assert set(values) == set(OUTPUT_NAMES)
    assert values["conclusion"] == "failure" and values["tests-failed"] == "2"
    assert values["check-run-url"].startswith("http") and values["comment-url"].startswith("http")
    assert (tmp_path / "bundle" / "badge.json").is_file() and (tmp_path / "bundle" / "badge.svg").is_file()
    (run,) = fake_github.check_runs.values()
    assert len(run["_annotations"]) == 1
    assert proc.stderr.count("::error file=") == 1


def test_gitlab_note_modes(fake_gitlab):
    from tests.integration.report.test_gitlab import publisher as gl_publisher

    p = gl_publisher(fake_gitlab)
    assert "skipped" in p.publish(green(), mode="on-failure").detail
    p.publish(red(), mode="on-change")
    before = len(fake_gitlab.requests)
    assert "skipped" in p.publish(red(), mode="on-change").detail
    assert all(r["method"] == "GET" for r in fake_gitlab.requests[before:])
    assert "skipped" in p.publish(red(), mode="off").detail
