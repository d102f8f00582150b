"""GitLab delivery against a loopback server following GitLab's documented Notes API."""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import requests
from tests.helpers.report import FakeClock, make_cell, make_plan, make_test, make_test_result, mixed_results

from xcompat.forges.gitlab import JOB_TOKEN_ONLY, GitLabContext, GitLabPublisher
from xcompat.jsonio import validate
from xcompat.report import build_report, marker


def context(fake, *, token="glpat-good", job_token=None, project="42", mr="7"):
    return GitLabContext(api_url=f"{fake.url}/api/v4", project_id=project, mr_iid=mr, token=token, job_token=job_token)


def publisher(fake, **kw):
    clock = FakeClock()
    return GitLabPublisher(context(fake, **kw), clock=clock.monotonic, sleep=clock.sleep, wall_clock=clock.wall)


def red_report():
    plan, results = mixed_results()
    return build_report(results, plan)


def test_the_fake_refuses_undocumented_requests(fake_gitlab):
    base = f"{fake_gitlab.url}/api/v4/projects/42/merge_requests/7/notes"
    assert requests.post(base, json={"text": "x"}, headers={"PRIVATE-TOKEN": "glpat-good"}, timeout=10).status_code == 400
    assert requests.get(base, params={"per_page": 500}, headers={"PRIVATE-TOKEN": "glpat-good"}, timeout=10).status_code == 400
    assert requests.delete(base + "/1", headers={"PRIVATE-TOKEN": "glpat-good"}, timeout=10).status_code == 404
    assert len(fake_gitlab.violations) == 3
    fake_gitlab.violations.clear()


def test_note_is_created_once_then_updated_in_place(fake_gitlab):
    for i in range(130):  # two pages of other notes, one of them quoting the marker
        fake_gitlab.add_note(f"> {marker()}\nlooks good {i}", system=i % 3 == 0)
    p = publisher(fake_gitlab)
    assert p.publish(red_report()).detail == "created on !7"
    cell = make_cell()
    green = build_report([make_test_result(cell.id, [make_test("t.py::x")])], make_plan([cell]))
    assert p.publish(green).detail == "updated on !7"
    ours = [n for n in fake_gitlab.notes if n["body"].startswith(marker())]
    assert len(ours) == 1 and "## ✅" in ours[0]["body"]
    writes = [r for r in fake_gitlab.requests if r["method"] != "GET"]
    assert [r["method"] for r in writes] == ["POST", "PUT"]
    assert all(r["headers"]["private-token"] == "glpat-good" for r in fake_gitlab.requests)
    assert sum(1 for r in fake_gitlab.requests if r["method"] == "GET") >= 4  # paginated lookups


def test_a_persons_note_that_starts_with_the_marker_is_left_alone(fake_gitlab):
    fake_gitlab.add_note(marker() + "\ncopied by hand", author="alice")
    p = publisher(fake_gitlab)
    assert p.publish(red_report()).detail == "created on !7"
    assert p.publish(red_report()).detail == "updated on !7"
    assert len(fake_gitlab.notes) == 2 and fake_gitlab.notes[0]["body"].endswith("copied by hand")


def test_project_path_is_url_encoded(fake_gitlab):
    assert publisher(fake_gitlab, project="group/proj").publish(red_report()).ok
    assert fake_gitlab.requests[-1]["path"] == "/api/v4/projects/group%2Fproj/merge_requests/7/notes"


def test_job_token_only_is_explained_and_nothing_is_sent(fake_gitlab):
    delivery = publisher(fake_gitlab, token=None, job_token="job-token-123").publish(red_report())
    assert not delivery.ok and delivery.detail == f"not posted: {JOB_TOKEN_ONLY}"
    assert "CI_JOB_TOKEN" in delivery.detail and "XCOMPAT_GITLAB_TOKEN" in delivery.detail
    assert fake_gitlab.requests == []


def test_the_fake_enforces_that_job_tokens_cannot_write(fake_gitlab):
    base = f"{fake_gitlab.url}/api/v4/projects/42/merge_requests/7/notes"
    assert requests.get(base, headers={"JOB-TOKEN": "job-token-123"}, timeout=10).status_code == 200
    assert requests.post(base, json={"body": "x"}, headers={"JOB-TOKEN": "job-token-123"}, timeout=10).status_code == 403


def test_forbidden_token_and_no_merge_request(fake_gitlab):
    fake_gitlab.tokens["glpat-good"] = "write"
    delivery = publisher(fake_gitlab, mr=None).publish(red_report())
    assert delivery.ok and "no merge request" in delivery.detail
    fake_gitlab.faults.append((403, {}))
    delivery = publisher(fake_gitlab).publish(red_report())
    assert not delivery.ok and "may not write notes" in delivery.detail


def test_note_fits_one_million_characters(fake_gitlab):
    from tests.helpers.report import huge_report

    report = huge_report(n_cells=60, n_fail=12000, tail_lines=40)
    assert publisher(fake_gitlab).publish(report).ok
    (note,) = fake_gitlab.notes
    assert 0 < len(note["body"]) <= 1_000_000


def test_rate_limited_note_waits_for_retry_after(fake_gitlab):
    fake_gitlab.faults.append((429, {"Retry-After": "3"}))
    clock = FakeClock()
    p = GitLabPublisher(context(fake_gitlab), clock=clock.monotonic, sleep=clock.sleep, wall_clock=clock.wall)
    assert p.publish(red_report()).ok
    assert clock.sleeps == [3.0]


def test_cli_writes_gitlab_artifacts_and_posts_the_note(tmp_path, fake_gitlab):
    plan, results = mixed_results()
    art = tmp_path / "artifacts"
    art.mkdir()
    for i, r in enumerate(results):
        (art / f"r{i}.json").write_text(json.dumps(r))
    (art / "cobertura.xml").write_text('<?xml version="1.0" ?><coverage line-rate="0.8"><sources/><packages/></coverage>')
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    env = {
        "PATH": os.environ["PATH"],
        "GITLAB_CI": "true",
        "CI_API_V4_URL": f"{fake_gitlab.url}/api/v4",
        "CI_PROJECT_ID": "42",
        "CI_MERGE_REQUEST_IID": "7",
        "CI_JOB_TOKEN": "job-token-123",
        "XCOMPAT_GITLAB_TOKEN": "glpat-good",
        "CI_JOB_URL": "https://gitlab.example/g/p/-/jobs/9",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "xcompat", "report", str(art), "--plan", str(tmp_path / "plan.json"), "--gitlab", "--bundle-dir", str(tmp_path / "out"), "--exit-zero"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "glpat-good" not in proc.stdout + proc.stderr
    assert "GitLab MR note: created on !7" in proc.stderr
    out = tmp_path / "out"
    issues = json.loads((out / "gl-code-quality-report.json").read_text())
    validate("codequality", issues)
    assert {i["severity"] for i in issues} == {"critical", "minor"}
    root = ET.parse(out / "xcompat-junit.xml").getroot()
    assert root.tag == "testsuites" and int(root.get("failures")) >= 2 and int(root.get("errors")) == 1
    assert (out / "cobertura.xml").read_text().startswith("<?xml")
    (note,) = fake_gitlab.notes
    assert "https://gitlab.example/g/p/-/jobs/9/artifacts/browse/" in note["body"]
