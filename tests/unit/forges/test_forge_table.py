"""The FORGES table is the one place a forge is named for `xcompat report`, so a forge added to
the table alone is published to; its CI is recognised by the marker it adds to xcompat.ci."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tests.helpers.report import mixed_results

from xcompat import ci, cli
from xcompat.forges import FORGES
from xcompat.forges.base import Delivery, PublishOptions, PublishOutcome
from xcompat.log import Logger
from xcompat.report.channels import load_limits
from xcompat.report.model import Report
from xcompat.settings import is_ci as settings_is_ci


class DummyForge:
    """A forge that exists only in this test: it keeps what it was asked to publish."""

    name = "dummyforge"
    title = "Dummy"
    flag_help = "deliver on Dummy: one inbox"
    channels = ("inbox",)

    def __init__(self) -> None:
        self.published: list[tuple[Report, PublishOptions]] = []

    def detect(self, env):
        return ci.under_forge_ci(self.name, env)

    def artifact_url(self, env, bundle_dir):
        return f"https://dummy.example/runs/{env.get('DUMMY_RUN', '0')}/{bundle_dir.name}"

    def publish(self, report, options):
        self.published.append((report, options))
        return PublishOutcome(
            deliveries=[
                Delivery(channel="inbox", ok=True, detail="delivered", url="https://dummy.example/inbox/1"),
                Delivery(channel="outbox", ok=False, detail="not posted: the outbox is full"),
            ]
        )


@pytest.fixture
def dummy(monkeypatch):
    forge = DummyForge()
    monkeypatch.setitem(FORGES, forge.name, forge)
    monkeypatch.setitem(ci.FORGE_MARKERS, forge.name, ("DUMMY_CI", "yes"))
    return forge


@pytest.fixture
def outside_ci(monkeypatch):
    for key in list(os.environ):
        if key == "CI" or key.startswith(("GITHUB_", "GITLAB_", "CI_", "XCOMPAT_", "DUMMY_")):
            monkeypatch.delenv(key)


def results_folder(tmp_path: Path) -> tuple[Path, Path]:
    plan, results = mixed_results()
    folder = tmp_path / "results"
    folder.mkdir()
    for index, result in enumerate(results):
        (folder / f"r{index}.json").write_text(json.dumps(result))
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    return folder, tmp_path / "plan.json"


def test_each_forge_is_filed_under_its_own_name():
    assert set(FORGES) == {"github", "gitlab"}
    for key, forge in FORGES.items():
        assert forge.name == key and forge.title and forge.flag_help and forge.channels
        assert callable(forge.detect) and callable(forge.artifact_url) and callable(forge.publish)


def test_every_size_limited_channel_belongs_to_exactly_one_forge():
    published = [channel for forge in FORGES.values() for channel in forge.channels]
    assert len(published) == len(set(published))
    assert set(load_limits().channels) <= set(published)


@pytest.mark.parametrize(
    ("env", "forge", "under_ci"),
    [
        ({}, None, False),
        ({"CI": "false"}, None, False),
        ({"CI": "true"}, None, True),
        ({"CI": "1"}, None, True),
        ({"CI": "YES"}, None, True),
        ({"GITHUB_ACTIONS": "true", "CI": "true"}, "github", True),
        ({"GITLAB_CI": "true", "CI": "true"}, "gitlab", True),
        # A forge's own marker is CI even where CI itself was cleared.
        ({"GITHUB_ACTIONS": "true"}, "github", True),
        ({"GITLAB_CI": "true", "CI": ""}, "gitlab", True),
        ({"GITHUB_ACTIONS": "false"}, None, False),
    ],
)
def test_one_answer_to_are_we_in_ci(env, forge, under_ci):
    assert ci.detect_forge(env) == forge
    assert ci.is_ci(env) is under_ci
    # The logger and the settings guard ask the same question and get the same answer.
    assert Logger(env).ci is under_ci
    assert settings_is_ci(env) is under_ci
    assert Logger(env).dialect == (forge or "terminal")


def test_every_forge_of_the_table_has_its_ci_marker():
    assert set(ci.FORGE_MARKERS) == set(FORGES)
    for name, (variable, value) in ci.FORGE_MARKERS.items():
        env = {variable: value}
        assert ci.detect_forge(env) == name
        assert [key for key, forge in FORGES.items() if forge.detect(env)] == [name]


def test_a_forge_added_with_its_marker_is_detected(dummy):
    env = {"DUMMY_CI": "yes"}
    assert ci.detect_forge(env) == "dummyforge" and ci.is_ci(env) and dummy.detect(env)
    log = Logger(env)
    assert log.ci and log.dialect == "terminal"  # no log syntax of its own: plain lines, timestamped


def test_a_forge_added_to_the_table_gets_its_report_flag(dummy, outside_ci, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["report", "--help"])
    assert exit_.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--dummyforge deliver on Dummy: one inbox" in help_text


def test_xcompat_report_publishes_through_a_forge_named_only_in_the_table(dummy, outside_ci, tmp_path, capsys, monkeypatch):
    folder, plan = results_folder(tmp_path)
    bundle = tmp_path / "bundle"
    monkeypatch.setenv("DUMMY_RUN", "31")
    code = cli.main([
        "report", str(folder), "--plan", str(plan), "--dummyforge", "--bundle-dir", str(bundle),
        "--comment-key", "nightly", "--comment-mode", "on-change", "--check-name", "compat",
        "--max-annotations", "3", "--no-check-run", "--on-post-failure", "fail",
    ])
    out, err = capsys.readouterr()

    (published, options), = dummy.published
    assert published.conclusion == "failure" and len(published.cells) == 5
    # The forge's link is the report's, as the report bundle shows.
    assert published.artifact_url == "https://dummy.example/runs/31/bundle"
    assert json.loads((bundle / "report.json").read_text())["artifact_url"] == published.artifact_url
    assert options.bundle_dir == bundle and (bundle / "report.md").is_file() and (bundle / "badge.svg").is_file()
    assert options.badge_paths == (bundle / "badge.json", bundle / "badge.svg")
    assert (options.check_name, options.comment_key, options.comment_mode) == ("compat", "nightly", "on-change")
    assert (options.check_run, options.max_annotations, len(options.results)) == (False, 3, 9)
    assert options.env["DUMMY_RUN"] == "31"
    # Delivered to a forge: the report goes there, not to standard output.
    assert out == ""
    # The forge's failed delivery is a posting failure like any other forge's.
    assert code == 4
    assert "1 delivery(ies) failed" in err and "Dummy outbox: not posted: the outbox is full" in err


def test_a_forge_that_cannot_publish_from_here_stops_the_report_before_reading_results(outside_ci, tmp_path, capsys):
    # --github outside GitHub Actions: GITHUB_REPOSITORY is unset, and nothing is written.
    bundle = tmp_path / "bundle"
    code = cli.main(["report", str(tmp_path / "no-such-results"), "--github", "--bundle-dir", str(bundle)])
    assert code == 2
    assert "GITHUB_REPOSITORY is not set" in capsys.readouterr().err
    assert not bundle.exists()


def test_every_forge_in_the_table_has_the_protocols_members_and_signatures():
    """`xcompat report` calls each forge the same way, so no forge may take other parameters."""
    import inspect

    from xcompat.forges.base import Forge

    for key, forge in FORGES.items():
        assert all(isinstance(getattr(forge, attr), str) and getattr(forge, attr) for attr in ("title", "flag_help"))
        assert isinstance(forge.channels, tuple) and forge.channels and all(isinstance(c, str) for c in forge.channels)
        for method in ("detect", "artifact_url", "publish"):
            theirs = list(inspect.signature(getattr(type(forge), method)).parameters)
            assert theirs == list(inspect.signature(getattr(Forge, method)).parameters), (key, method, theirs)
